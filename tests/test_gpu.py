"""Real-GPU cases (marked `gpu`: skipped without CUDA; a GPU workstation's `make test` runs them)."""

from __future__ import annotations

import asyncio
import json

import pytest

from dualjudge.inference.cards import get_card
from dualjudge.inference.devices import resolve
from dualjudge.inference.gpus import visible_gpus
from dualjudge.inference.preflight import check_models
from dualjudge.inference.types import GenerationRequest, Message, Sampling
from dualjudge.inference.weights import locate
from dualjudge.protocol import QualityVerdict

pytestmark = pytest.mark.gpu


def test_the_gpus_are_seen_with_their_free_memory_and_auto_gives_one_group_each():
    gpus = visible_gpus()
    assert gpus and all(g.free_gb > 0 for g in gpus)
    groups = resolve("auto", 3)
    assert [g.kind for g in groups] == ["gpu"] * len(gpus) and all(g.gpus for g in groups)


def test_the_memory_check_runs_against_the_real_gpus():
    (check,) = check_models({"qwen2.5-vl-7b-instruct": ["judge"]}, {"qwen2.5-vl-7b-instruct": get_card("qwen2.5-vl-7b-instruct")})
    assert not any("memory check skipped" in r for r in check.reasons)


def test_a_constrained_verdict_on_the_gpu_with_the_in_process_engine():
    from dualjudge.inference.transformers_engine import TransformersEngine

    card = get_card("smollm2-135m-instruct")
    weights = locate(card)
    if weights is None:
        pytest.skip("SmolLM2 weights not fetched here (dualjudge models fetch smollm2-135m-instruct)")
    engine = TransformersEngine(card, weights, "smollm2@gpu", device="cuda:0", max_batch=4)
    request = GenerationRequest(
        (Message("user", "Judge: 'No entry.' against 'No entry for vehicles.'"),),
        Sampling(temperature=0.0, max_tokens=200, seed=0),
        QualityVerdict.constraint(200),
    )

    async def go():
        try:
            return await engine.generate(request)
        finally:
            await engine.close()

    result = asyncio.run(go())
    assert result.ok and 0 <= json.loads(result.text)["accuracy"] <= 10
