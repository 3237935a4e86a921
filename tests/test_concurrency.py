"""Concurrency that means what it says: `engine.concurrency` (or a card's `concurrency`) is per endpoint,
so attached replicas multiply what is in flight, and the balancer keeps them evenly loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualjudge.config import RunConfig
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.engines import CPU_SEQUENCES, GPU_SEQUENCES, endpoint_concurrency
from dualjudge.inference.settings import EngineSettings
from dualjudge.studies.job import run_job
from tests.helpers.hosted import CARD
from tests.helpers.provider import Provider


def _card(extra: str = "", **vllm: int) -> ModelCard:
    import tomllib

    data = tomllib.loads(CARD.format(extra=extra))
    if vllm:
        data["vllm"] = vllm
    return ModelCard.model_validate(data)


def test_the_default_suits_the_device_and_a_card_overrides_it():
    unset = EngineSettings()
    gpu, cpu = DeviceGroup("gpu", (0,)), DeviceGroup("cpu", (0, 1))
    assert endpoint_concurrency(_card(), unset, "local server", gpu) == GPU_SEQUENCES == 256
    assert endpoint_concurrency(_card(max_num_seqs=96), unset, "local server", gpu) == 96
    assert endpoint_concurrency(_card(), unset, "local server", cpu) == CPU_SEQUENCES == 32
    assert endpoint_concurrency(_card(), unset, "attached") == 256
    assert endpoint_concurrency(_card(), unset, "hosted") == 32
    assert endpoint_concurrency(_card(), unset, "in-process", cpu) == 32
    assert endpoint_concurrency(_card(), EngineSettings(concurrency=12), "local server", gpu) == 12
    assert endpoint_concurrency(_card("concurrency = 7"), EngineSettings(concurrency=12), "local server", gpu) == 7


@pytest.mark.parametrize("per_endpoint", [2, 5])
def test_two_attached_endpoints_each_hold_their_own_concurrency(tmp_path: Path, per_endpoint: int):
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "toy-vlm.toml").write_text(CARD.format(extra=""))
    with Provider(served=("toy-vlm",)) as a, Provider(served=("toy-vlm",)) as b:
        for p in (a, b):
            p.delay_s = 0.05
        config = RunConfig(
            **{
                "run": {"name": "replicas", "seed": 1},
                "testbed": {
                    "signs": ["616", "512"],
                    "visibilities": [1.0, 0.5, 0.3],
                    "modes": ["bottom_up"],
                    "repeats": 2,
                    "modality": "text",
                    "size": 64,
                },
                "systems": {"models": ["toy-vlm"], "strategies": ["sa", "cot"], "sign_type": "parsed", "max_tokens": 64},
                "judges": {"models": ["toy-vlm"], "max_tokens": 128},
                "probes": {"order": False, "padding": False},
                "engine": {"concurrency": per_endpoint, "endpoints": {"toy-vlm": [a.url, b.url]}},
                "models": {"dir": str(cards)},
            }
        )
        result = run_job(config, tmp_path / "run")
    assert (result.table["quality_status"] == "ok").all() and len(result.table) == 2 * 3 * 2 * 2
    # each endpoint filled its own slots (today's cap of `concurrency` for the whole model would halve this)
    assert a.max_in_flight == b.max_in_flight == per_endpoint
    sent_a, sent_b = len(a.bodies), len(b.bodies)
    assert sent_a + sent_b == result.report.sessions_requests
    assert abs(sent_a - sent_b) <= 0.2 * (sent_a + sent_b)  # the fewest-outstanding balancer keeps them even
