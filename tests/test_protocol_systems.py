import asyncio
import json

import pytest

from dualjudge.inference.types import GenerationResult
from dualjudge.protocol.judges import run_judge
from dualjudge.protocol.probes import build_padding_request, padding_effect, run_order_probe
from dualjudge.protocol.systems import STRATEGIES, Item, run_system
from dualjudge.protocol.verdicts import QualityVerdict, interpret
from dualjudge.testbed.catalogue import default_catalogue
from tests.helpers.engines import ScriptedEngine, seeded_text

SIGN = default_catalogue().sign("616")
ITEM = Item.of_sign("616_v0.5_random_block", "616", "The picture shows a red disc with a white bar.")


def run(coro):
    return asyncio.run(coro)


def test_ma_passes_outputs_forward_in_order():
    outputs = iter(["VISION: red disc, white bar", "SYMBOL: bar means closed", "Final.\nSIGN_TYPE: no_entry"])
    engine = ScriptedEngine(lambda r: next(outputs))
    ans = run(run_system("ma", ITEM, engine.generate, modality="text", sign_type_mode="parsed"))
    assert [c.step for c in ans.calls] == ["ma_vision", "ma_symbol", "ma_integration"]
    first, second, third = engine.requests
    assert "VISION: red disc" not in first.messages[1].text
    assert "VISION: red disc, white bar" in second.messages[1].text
    assert "VISION: red disc, white bar" in third.messages[1].text and "SYMBOL: bar means closed" in third.messages[1].text
    assert ans.text == "Final.\nSIGN_TYPE: no_entry" and ans.predicted_category == "no_entry" and ans.format_ok
    assert ans.completion_tokens == sum(c.result.completion_tokens for c in ans.calls) > 0
    # only the final call carries the SIGN_TYPE constraint, and only in constrained mode
    assert [r.constraint for r in engine.requests] == [None, None, None]
    engine2 = ScriptedEngine(lambda r: "x\nSIGN_TYPE: stop")
    run(run_system("ma", ITEM, engine2.generate, modality="text", sign_type_mode="constrained"))
    assert [r.constraint.kind if r.constraint else None for r in engine2.requests] == [None, None, "regex"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_parsed_mode_measures_format_compliance(strategy):
    engine = ScriptedEngine(lambda r: "I think it is no entry.")
    ans = run(run_system(strategy, ITEM, engine.generate, modality="text", sign_type_mode="parsed"))
    assert ans.status == "ok" and ans.format_ok is False and ans.predicted_category is None


def test_constrained_mode_flags_an_ignored_constraint():
    engine = ScriptedEngine(lambda r: "no line here")
    ans = run(run_system("sa", ITEM, engine.generate, modality="text", sign_type_mode="constrained"))
    assert ans.status == "parse_failure" and "ignored the constraint" in ans.detail
    assert engine.requests[0].constraint.kind == "regex"


def test_engine_error_is_an_error_not_an_answer():
    engine = ScriptedEngine(lambda r: ConnectionError("server gone"))
    ans = run(run_system("cot", ITEM, engine.generate, modality="text", sign_type_mode="parsed"))
    assert ans.status == "error" and ans.text is None and "server gone" in ans.detail


def test_seeds_make_repeats_differ_and_reruns_identical():
    def answers(run_seed):
        engine = ScriptedEngine(seeded_text)
        return [
            run(run_system("sa", ITEM, engine.generate, modality="text", sign_type_mode="parsed", run_seed=run_seed, repeat=k)).text
            for k in range(3)
        ]

    first, again, other = answers(11), answers(11), answers(12)
    assert len(set(first)) == 3
    assert first == again
    assert first != other


def test_system_default_sampling_and_judge_default_greedy():
    engine = ScriptedEngine(
        lambda r: (
            json.dumps({"reasoning": "r", "equivalent": True})
            if r.constraint and r.constraint.kind == "json"
            else "a\nSIGN_TYPE: stop"
        )
    )
    run(run_system("sa", ITEM, engine.generate, modality="text", sign_type_mode="parsed"))
    run(run_judge("equivalence", SIGN, "resp", engine.generate))
    assert engine.requests[0].sampling.temperature == 0.7 and engine.requests[0].sampling.seed is not None
    assert engine.requests[1].sampling.temperature == 0.0


def test_judge_outcomes():
    ok = ScriptedEngine(lambda r: json.dumps({"reasoning": "fine", "accuracy": 9, "completeness": 8, "relevance": 10}))
    out = run(run_judge("quality", SIGN, "No entry for vehicles.", ok.generate))
    assert out.status == "ok" and out.verdict.overall == pytest.approx(9.0)
    assert ok.requests[0].constraint.schema["title"] == "QualityVerdict"
    bad = ScriptedEngine(lambda r: "I give it 9/10")
    assert run(run_judge("quality", SIGN, "x", bad.generate)).status == "parse_failure"
    down = ScriptedEngine(lambda r: TimeoutError("read timed out"))
    out = run(run_judge("equivalence", SIGN, "x", down.generate))
    assert out.status == "error" and out.verdict is None


def test_order_probe_detects_position_bias():
    always_a = ScriptedEngine(lambda r: json.dumps({"reasoning": "first", "winner": "A"}))
    res = run(run_order_probe(SIGN, "resp one", "resp two", always_a.generate))
    assert res.flipped is True and (res.winner_ab, res.winner_ba) == (1, 2)
    assert "resp one" in always_a.requests[0].messages[1].text.split("Response B")[0]
    assert "resp two" in always_a.requests[1].messages[1].text.split("Response B")[0]

    def content(r):
        a_part = r.messages[1].text.split("Response B")[0]
        return json.dumps({"reasoning": "r", "winner": "A" if "resp one" in a_part else "B"})

    consistent = ScriptedEngine(content)
    res = run(run_order_probe(SIGN, "resp one", "resp two", consistent.generate))
    assert res.flipped is False and res.winner_ab == res.winner_ba == 1
    broken = ScriptedEngine(lambda r: "A")
    assert run(run_order_probe(SIGN, "x", "y", broken.generate)).flipped is None


def test_padding_probe_shift_and_flip():
    orig = interpret(
        QualityVerdict, GenerationResult(json.dumps({"reasoning": "r", "accuracy": 6, "completeness": 6, "relevance": 7}))
    )
    padded = interpret(
        QualityVerdict, GenerationResult(json.dumps({"reasoning": "r", "accuracy": 8, "completeness": 8, "relevance": 8}))
    )
    res = padding_effect(orig, padded, "short answer", "short answer " + "again " * 150)
    assert res.score_shift == pytest.approx(8 - 19 / 3)
    assert res.flipped is True and res.added_words == 150
    req = build_padding_request("An answer.\nSIGN_TYPE: stop")
    assert req.sampling.temperature == 0.0 and req.constraint is None and "150" in req.messages[0].text
