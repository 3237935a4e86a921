import json
import re

import pytest

from dualjudge.inference.types import GenerationResult
from dualjudge.protocol import (
    SIGN_TYPES,
    EquivalenceVerdict,
    PairwiseVerdict,
    QualityVerdict,
    interpret,
    parse_sign_type,
    sign_type_pattern,
)
from tests.helpers.engines import assert_verdict_closes, toy_grammar_compiler


def test_sign_types_come_from_the_catalogue():
    assert len(SIGN_TYPES) == 25 and "no_entry" in SIGN_TYPES and "no_waiting" in SIGN_TYPES


@pytest.mark.parametrize(
    "text,expected",
    [
        ("A red disc.\nSIGN_TYPE: no_entry", "no_entry"),
        ("SIGN_TYPE: no_entry", "no_entry"),
        ("...\n  SIGN_TYPE:   no_entry  \n", "no_entry"),
        ("...\n**SIGN_TYPE:** no_entry", "no_entry"),
        ("...\n**SIGN_TYPE: no_entry**", "no_entry"),
        ("...\nSIGN_TYPE: `no_entry`", "no_entry"),
        ("...\n_SIGN_TYPE: no_entry_", "no_entry"),
        # the last valid line wins; invalid later lines are skipped
        ("SIGN_TYPE: stop\nthinking again\nSIGN_TYPE: give_way", "give_way"),
        ("SIGN_TYPE: stop\nSIGN_TYPE: halt", "stop"),
        # near misses and fuzzier forms are not accepted
        ("SIGN_TYPE: No_Entry", None),
        ("SIGN_TYPE: no entry", None),
        ("SIGN_TYPE: no_entrys", None),
        ("SIGN_TYPE: no_entry.", None),
        ("SIGN_TYPE: no_entry because of the bar", None),
        ("sign_type: no_entry", None),
        ("The SIGN_TYPE: no_entry", None),
        ("SIGN TYPE: no_entry", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_sign_type(text, expected):
    assert parse_sign_type(text) == expected


def test_regex_matches_the_contract():
    rx = re.compile(sign_type_pattern(100))
    assert rx.fullmatch("Red ring, 30.\nSIGN_TYPE: maximum_speed")
    assert rx.fullmatch("\nSIGN_TYPE: no_waiting")
    assert not rx.fullmatch("x" * 101 + "\nSIGN_TYPE: stop")  # free text is bounded
    assert not rx.fullmatch("ok\nSIGN_TYPE: halt")
    assert not rx.fullmatch("ok\nSIGN_TYPE: stop\nmore")  # the line is final
    assert not rx.fullmatch("caf\u00e9\nSIGN_TYPE: stop")  # printable ASCII only
    for cid in SIGN_TYPES:
        assert rx.fullmatch(f"a\nSIGN_TYPE: {cid}") and parse_sign_type(f"a\nSIGN_TYPE: {cid}") == cid


def test_regex_compiles_in_xgrammar():
    xgrammar = pytest.importorskip("xgrammar")
    grammar = xgrammar.Grammar.from_regex(sign_type_pattern(600))
    assert "SIGN_TYPE" in str(grammar).replace('" "', "")


def test_regex_compiles_in_llguidance():
    llguidance = pytest.importorskip("llguidance")
    error = llguidance.LLMatcher.validate_grammar(llguidance.grammar_from("regex", sign_type_pattern(600)))
    assert error == ""
    assert llguidance.LLMatcher.validate_grammar(llguidance.grammar_from("regex", "(a")) != ""


def test_regex_compiles_in_outlines_core():
    outlines_core = pytest.importorskip("outlines_core")
    tokens = {chr(c): [i] for i, c in enumerate(range(32, 127))}
    tokens["\n"] = [95]
    vocab = outlines_core.Vocabulary(96, tokens)
    # outlines_core's index grows with the bound (600 takes ~30 s here); a short bound proves the syntax
    index = outlines_core.Index(sign_type_pattern(40), vocab)
    assert index.get_initial_state() is not None


def test_verdict_schemas_put_reasoning_first_and_round_trip():
    for model in (QualityVerdict, EquivalenceVerdict, PairwiseVerdict):
        schema = model.constraint().schema
        assert list(schema["properties"])[0] == "reasoning"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == set(schema["properties"])
    q = QualityVerdict(reasoning="ok", accuracy=9, completeness=6, relevance=9)
    assert QualityVerdict.model_validate_json(q.model_dump_json()) == q
    assert q.overall == pytest.approx(8.0)
    assert "overall" not in QualityVerdict.constraint().schema["properties"]
    e = EquivalenceVerdict(reasoning="same rule", equivalent=True)
    assert EquivalenceVerdict.model_validate_json(e.model_dump_json()) == e
    schema = QualityVerdict.constraint().schema["properties"]
    assert schema["accuracy"] == {**schema["accuracy"], "type": "integer", "minimum": 0, "maximum": 10}


@pytest.mark.parametrize(
    "result,status",
    [
        (GenerationResult('{"reasoning": "r", "accuracy": 8, "completeness": 7, "relevance": 9}'), "ok"),
        (GenerationResult('{"reasoning": "r", "accuracy": 11, "completeness": 7, "relevance": 9}'), "parse_failure"),
        (GenerationResult('{"reasoning": "r", "accuracy": 7.5, "completeness": 7, "relevance": 9}'), "parse_failure"),
        (GenerationResult('{"reasoning": "r", "accuracy": 8, "completeness": 7}'), "parse_failure"),
        (GenerationResult('{"reasoning": "r", "accuracy": 8, "completeness": 7, "relevance": 9, "overall": 10}'), "parse_failure"),
        (GenerationResult("Score: 8/10"), "parse_failure"),
        (GenerationResult('{"reasoning": "r", "accur', finish_reason="length"), "parse_failure"),
        (GenerationResult(None, error="HTTP 503"), "error"),
    ],
)
def test_three_outcome_states_never_a_default_score(result, status):
    outcome = interpret(QualityVerdict, result)
    assert outcome.status == status
    assert (outcome.verdict is not None) == (status == "ok")
    if status != "ok":
        assert outcome.detail


def test_strict_booleans():
    bad = GenerationResult(json.dumps({"reasoning": "r", "equivalent": "yes"}))
    assert interpret(EquivalenceVerdict, bad).status == "parse_failure"
    good = GenerationResult(json.dumps({"reasoning": "r", "equivalent": False}))
    assert interpret(EquivalenceVerdict, good).verdict.equivalent is False


@pytest.mark.parametrize("max_tokens", [128, 256, 384, 1024, 4096])
def test_bounded_verdicts_compile_in_xgrammar_and_llguidance_and_close_within_max_tokens(max_tokens):
    """The reasoning bound is what makes a constrained verdict close before max_tokens; the pattern
    must compile where vLLM compiles it (xgrammar fails on {0,n} with n > 128 inside a JSON string)."""
    xgrammar = pytest.importorskip("xgrammar")
    llguidance = pytest.importorskip("llguidance")
    compiler = toy_grammar_compiler(xgrammar)
    from dualjudge.protocol.verdicts import JudgedOverallVerdict

    for model in (QualityVerdict, EquivalenceVerdict, PairwiseVerdict, JudgedOverallVerdict):
        assert_verdict_closes(xgrammar, llguidance, compiler, model, max_tokens)
