"""Hosted and toy model cards, and a hosted run's configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dualjudge.config import RunConfig

KEY = "sk-test-never-written-0123456789"


def hosted_config(url: str, tmp_path: Path, **engine: object) -> RunConfig:
    """A small study of one hosted model (card in tmp_path/cards) as system and judge, at `url`."""
    cards = tmp_path / "cards"
    cards.mkdir(exist_ok=True)
    (cards / "gpt-4o.toml").write_text(hosted_card(url))
    settings: dict[str, Any] = {
        "run": {"name": "hostile", "seed": 1},
        "testbed": {
            "signs": ["616", "602"],
            "visibilities": [1.0, 0.5],
            "modes": ["bottom_up"],
            "repeats": 1,
            "modality": "text",
            "size": 64,
        },
        "systems": {"models": ["gpt-4o"], "strategies": ["sa"], "sign_type": "parsed", "max_tokens": 64},
        "judges": {"models": ["gpt-4o"], "max_tokens": 160},
        "probes": {"order": False, "padding": False},
        "engine": {"retries": 3, "concurrency": 2, **engine},
        "models": {"dir": str(cards)},
    }
    return RunConfig(**settings)


def hosted_card(base_url: str = "http://127.0.0.1:9/v1", **weights: str) -> str:
    fields = {"model": "gpt-4o-2024-08-06", "version": "2024-08-06", "api_key_env": "DJ_HOSTED_KEY", **weights}
    lines = "\n".join(f'{k} = "{v}"' for k, v in fields.items())
    return f"""name = "gpt-4o"
family = "openai"
base_llm = "openai"
modalities = ["text", "image"]

[weights]
source = "remote"
base_url = "{base_url}"
{lines}
"""


HOSTED_RUN = """
[run]
name = "hostile"
[testbed]
signs = ["616"]
visibilities = [1.0]
modes = ["bottom_up"]
repeats = 1
modality = "text"
size = 64
[systems]
models = ["gpt-4o"]
strategies = ["sa"]
sign_type = "parsed"
max_tokens = 64
[judges]
models = ["gpt-4o"]
max_tokens = 160
[probes]
order = false
padding = false
[engine]
retries = 1
[models]
dir = "cards"
"""


CARD = """name = "toy-vlm"
family = "toy"
base_llm = "toy"
architecture = "LlavaForConditionalGeneration"
modalities = ["text", "image"]
parameters_b = 1.0
min_gpu_memory_gb = 4
{extra}
[weights]
source = "hub"
repo = "toy/toy-vlm"
revision = "main"
"""
