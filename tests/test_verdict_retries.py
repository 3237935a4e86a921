"""A verdict is asked again where nothing constrains it to its schema: a hosted API or an attached endpoint that
takes the schema as response_format (the "openai" dialect), never where decoding enforces it; the stability
passes ask again as the verdicts do."""

from __future__ import annotations

import asyncio
import json

from dualjudge.inference.cards import RemoteWeights, get_card
from dualjudge.inference.engines import enforces_schema
from dualjudge.inference.settings import EngineSettings
from dualjudge.inference.types import GenerationRequest, GenerationResult
from dualjudge.protocol.judges import UNCONSTRAINED_RETRIES, run_judge
from dualjudge.tasks.registry import builtin_task


def test_every_placement_says_whether_its_verdicts_are_constrained():
    card = get_card("smollm2-135m-instruct")
    assert enforces_schema(card, EngineSettings())  # a server dualjudge starts
    assert enforces_schema(card, EngineSettings(backend="transformers"))  # in process, through Outlines
    attached = {"endpoints": {card.name: ("http://127.0.0.1:9/v1",)}}
    assert enforces_schema(card, EngineSettings(**attached))  # vLLM behind it
    assert enforces_schema(card, EngineSettings(**attached, endpoint_dialects={card.name: "sglang"}))
    assert not enforces_schema(card, EngineSettings(**attached, endpoint_dialects={card.name: "openai"}))
    hosted = card.model_copy(
        update={"weights": RemoteWeights(source="remote", base_url="https://api.example.com/v1", model="m", version="1")}
    )
    assert not enforces_schema(hosted, EngineSettings())
    assert UNCONSTRAINED_RETRIES >= 1


def test_an_unconstrained_verdict_off_its_schema_is_asked_again():
    """The first reply is not JSON; the second is a verdict: with retries the verdict stands, without it fails."""
    task = builtin_task("uk-signs")
    item = task.items[0]
    replies = iter(["not json at all", json.dumps({"reasoning": "same meaning", "equivalent": True})])

    async def call(request: GenerationRequest) -> GenerationResult:
        return GenerationResult(next(replies), finish_reason="stop")

    asked = asyncio.run(run_judge("equivalence", item, "an answer", call, retries=UNCONSTRAINED_RETRIES))
    assert asked.status == "ok"
    replies = iter(["not json at all", json.dumps({"reasoning": "same meaning", "equivalent": True})])
    once = asyncio.run(run_judge("equivalence", item, "an answer", call, retries=0))
    assert once.status == "parse_failure"


def test_one_grammar_setting_names_the_grammar_engine_of_every_backend():
    """engine.structured_backend is read by vLLM, SGLang and the in-process engine alike; the old in-process
    setting is refused in one line unless it holds the old default (as every earlier run's stored config does)."""
    import pytest

    from dualjudge.inference.settings import OUTLINES_BACKENDS
    from dualjudge.inference.sglang_server import GRAMMAR_BACKENDS

    assert set(GRAMMAR_BACKENDS) <= set(OUTLINES_BACKENDS)  # every name SGLang maps, the in-process engine maps too
    assert EngineSettings(backend="transformers", structured_backend="guidance").structured_backend == "guidance"
    assert "grammar_backend" not in EngineSettings.model_validate({"grammar_backend": "xgrammar"}).model_dump()
    with pytest.raises(ValueError, match="engine.grammar_backend is gone: engine.structured_backend"):
        EngineSettings.model_validate({"backend": "transformers", "grammar_backend": "llguidance"})
