"""Judge variants (holistic, rubric, rubric:NAME): configuration, schemas, cache keys and the run's
tables, with the scripted engine (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.protocol.judges import build_judge_request, verdict_type
from dualjudge.protocol.rubric import check_rewrite, load_rubric, parse_rubric
from dualjudge.protocol.verdicts import GenerationResult, interpret, rubric_verdict
from dualjudge.storage.rows import OrderProbeRow, PaddingProbeRow, VerdictRow
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job
from dualjudge.testbed.catalogue import default_catalogue
from tests.helpers.engines import assert_verdict_closes, toy_grammar_compiler
from tests.helpers.runs import CONFIG, Recorder, config

VARIANTS = CONFIG.replace("[judges]\n", '[judges]\nvariants = ["holistic", "rubric"]\nmax_tokens = 320\n')


def test_the_shipped_rubric_has_six_clauses_each_with_its_bands():
    rubric = load_rubric()
    assert rubric.ids == ("sign", "applies_to", "figure", "action", "exceptions", "unsupported")
    block = rubric.block()
    assert all(f"- {cid}: " in block for cid in rubric.ids) and block.count("2: ") >= 6


@pytest.mark.parametrize(
    "text, problem",
    [
        (
            'name = "r"\n[[clauses]]\nid = "a"\ntext = "x 2: a; 1: b; 0: c"\n[[clauses]]\nid = "a"\ntext = "y 2: a; 1: b; 0: c"',
            "ids repeat",
        ),
        ('name = "r"\n[[clauses]]\nid = "a"\ntext = "no bands"', "score bands"),
        ('name = "r"\n[[clauses]]\nid = "a"\ntext = "0: a; 1: b; 2: c"', "not all there in that order"),
        ('name = "r"\n[[clauses]]\nid = "overall"\ntext = "2: a; 1: b; 0: c"', "lower-case name and not one of"),
        ('name = "r"\nclauses = []', "non-empty list"),
        ('name = "r"\n[[clauses]]\nid = "a"', "exactly an id and a text"),
    ],
)
def test_a_malformed_rubric_is_refused_in_one_line(text, problem):
    with pytest.raises(DualjudgeError, match=problem):
        parse_rubric(text, "r.toml")


def test_a_rubric_round_trips_through_its_toml():
    rubric = load_rubric()
    again = parse_rubric(rubric.to_toml(), "again")
    assert again == rubric and again.sha256 == rubric.sha256
    edited = rubric.with_texts("edited", {"figure": 'A "quoted" figure. 2: x; 1: y; 0: z'})
    assert parse_rubric(edited.to_toml(), "e").text_of("figure") == 'A "quoted" figure. 2: x; 1: y; 0: z'
    assert edited.ids == rubric.ids and edited.sha256 != rubric.sha256
    assert rubric.with_texts("renamed", {}).sha256 == rubric.sha256  # the hash is of what the judge is shown


def test_a_rewrite_that_breaks_the_structure_is_named():
    rubric = load_rubric()
    ok = {"sign": "Clearer. 2: same sign; 1: same family; 0: other", "figure": "F. 2: a; 1: b; 0: c"}
    assert check_rewrite(rubric, ok, {"sign", "figure"}) == []
    assert check_rewrite(rubric, {"sign": ok["sign"]}, {"sign", "figure"}) == ["dropped clause figure"]
    assert "not given: action" in check_rewrite(rubric, {**ok, "action": "2: 1: 0:"}, {"sign", "figure"})[0]
    assert "score bands" in check_rewrite(rubric, {**ok, "figure": "no bands at all"}, {"sign", "figure"})[0]
    assert "longer than" in check_rewrite(rubric, {**ok, "figure": "2: 1: 0: " + "x" * 700}, {"sign", "figure"})[0]


def test_rubric_verdicts_score_every_clause_before_concluding():
    ids = load_rubric().ids
    quality = rubric_verdict("quality", ids).model_json_schema()
    assert list(quality["properties"])[: 1 + len(ids)] == ["reasoning", *ids]
    assert list(quality["properties"])[-3:] == ["accuracy", "completeness", "relevance"]
    assert all(quality["properties"][c]["maximum"] == 2 for c in ids)
    pairwise = list(rubric_verdict("pairwise", ids).model_json_schema()["properties"])
    assert pairwise[-1] == "winner" and pairwise[1 : 1 + len(ids)] == [f"a_{c}" for c in ids]
    equivalence = list(rubric_verdict("equivalence", ids).model_json_schema()["properties"])
    assert equivalence[-1] == "equivalent" and set(ids) < set(equivalence)


def test_a_rubric_verdict_is_read_with_its_criteria_and_the_mean_of_its_axes():
    model = rubric_verdict("quality", load_rubric().ids)
    data = {
        "reasoning": "r",
        "sign": 2,
        "applies_to": 1,
        "figure": 0,
        "action": 2,
        "exceptions": 2,
        "unsupported": 1,
        "accuracy": 9,
        "completeness": 6,
        "relevance": 9,
    }
    outcome = interpret(model, GenerationResult(json.dumps(data)))
    assert outcome.status == "ok" and outcome.verdict.overall == 8.0
    assert outcome.verdict.criteria() == {k: data[k] for k in load_rubric().ids}
    missing = {k: v for k, v in data.items() if k != "figure"}
    assert interpret(model, GenerationResult(json.dumps(missing))).status == "parse_failure"
    assert interpret(model, GenerationResult(json.dumps({**data, "figure": 3}))).status == "parse_failure"


@pytest.mark.parametrize("max_tokens", [320, 1024, 4096])
def test_rubric_verdicts_compile_in_xgrammar_and_llguidance_and_close_within_max_tokens(max_tokens):
    xgrammar = pytest.importorskip("xgrammar")
    llguidance = pytest.importorskip("llguidance")
    compiler = toy_grammar_compiler(xgrammar)
    for kind in ("quality", "equivalence", "pairwise"):
        assert_verdict_closes(xgrammar, llguidance, compiler, rubric_verdict(kind, load_rubric().ids), max_tokens)


def test_the_rubric_and_its_text_are_in_the_cache_key():
    sign = default_catalogue().sign("616")
    holistic = build_judge_request("quality", sign, "No entry.")
    rubric = load_rubric()
    with_rubric = build_judge_request("quality", sign, "No entry.", rubric=rubric)
    edited = build_judge_request("quality", sign, "No entry.", rubric=rubric.with_texts("e", {"sign": "Edited. 2: a; 1: b; 0: c"}))
    keys = {r.key("m@1") for r in (holistic, with_rubric, edited)}
    assert len(keys) == 3
    assert "- sign: Sign identified" in with_rubric.messages[0].text
    assert verdict_type("quality", rubric=rubric).__name__ == "RubricQualityVerdict"


@pytest.mark.parametrize(
    "judges, problem",
    [
        ('variants = ["holistic", "rubric:clear"]', "names no rubric file"),
        ('variants = ["pairwise"]', "unknown judge variant"),
        ('variants = ["rubric"]\nmax_tokens = 200', "judges.max_tokens: judge variant 'rubric'"),
        ('variants = ["rubric"]\nmax_tokens = 320\noverall = "judge_given"', "mean_of_subscores"),
        ('variants = ["rubric:x"]\nmax_tokens = 320\nrubrics = {x = "/nonexistent/r.toml"}', "rubric file not found"),
    ],
)
def test_a_bad_variant_configuration_is_refused(tmp_path, judges, problem):
    with pytest.raises(DualjudgeError, match=problem):
        config(tmp_path, CONFIG.replace("[judges]\n", f"[judges]\n{judges}\n"))


@pytest.fixture(scope="module")
def variant_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("variants")
    engines = Recorder()
    run_job(config(tmp, VARIANTS), tmp / "run", engines=engines)
    return tmp, engines


def test_each_answer_is_judged_once_per_variant_with_its_own_schema(variant_run):
    tmp, _ = variant_run
    table = pd.read_parquet(tmp / "run" / "verdicts.parquet")
    assert len(table) == 48 * 2 * 2
    assert table.groupby("judge_variant").size().to_dict() == {"holistic": 96, "rubric": 96}
    assert (table["quality_status"] == "ok").all() and (table["equivalence_status"] == "ok").all()
    rows = list(Store(tmp / "run" / "results.sqlite").read(VerdictRow))
    rubric_rows = [r for r in rows if r.judge_variant == "rubric"]
    assert all(json.loads(r.criteria).keys() == set(load_rubric().ids) for r in rubric_rows)
    assert all(r.criteria is None for r in rows if r.judge_variant == "holistic")
    # the same answer, judge and kind: one cache key per variant
    keys = {}
    for r in rows:
        keys.setdefault((r.variant_id, r.repeat, r.system_model, r.strategy, r.judge_model, r.kind), set()).add(r.request_key)
    assert all(len(k) == 2 for k in keys.values())


def test_probes_are_run_and_exported_per_variant(variant_run):
    tmp, _ = variant_run
    store = Store(tmp / "run" / "results.sqlite")
    order = list(store.read(OrderProbeRow))
    assert {r.judge_variant for r in order} == {"holistic", "rubric"} and len(order) == 3 * 2 * 2
    padding = list(store.read(PaddingProbeRow))
    assert sorted({r.judge_variant for r in padding}) == ["holistic", "rubric"] and len(padding) == 2 * 2 * 2 * 2
    csv = pd.read_csv(tmp / "run" / "probes_order.csv")
    assert sorted(csv["judge_variant"].unique()) == ["holistic", "rubric"]


def test_adding_a_variant_leaves_the_holistic_verdicts_and_their_keys_as_they_were(tmp_path, variant_run):
    tmp, _ = variant_run
    run_job(config(tmp_path, CONFIG.replace("[judges]\n", "[judges]\nmax_tokens = 320\n")), tmp_path / "run", engines=Recorder())
    alone = {r.key(): r.request_key for r in Store(tmp_path / "run" / "results.sqlite").read(VerdictRow)}
    both = {r.key(): r.request_key for r in Store(tmp / "run" / "results.sqlite").read(VerdictRow) if r.judge_variant == "holistic"}
    assert alone == both


def test_a_rerun_of_a_variant_run_sends_nothing(tmp_path):
    engines = Recorder()
    run_job(config(tmp_path, VARIANTS), tmp_path / "run", engines=engines)
    calls = engines.calls
    run_job(config(tmp_path, VARIANTS), tmp_path / "run", engines=engines)
    assert engines.calls == calls


def test_a_foreign_table_without_the_column_is_one_holistic_design(tmp_path, variant_run):
    tmp, _ = variant_run
    table = pd.read_parquet(tmp / "run" / "verdicts.parquet")
    foreign = table[table["judge_variant"] == "holistic"].drop(columns=["judge_variant"])
    path = Path(tmp_path / "foreign.csv")
    foreign.to_csv(path, index=False)
    from dualjudge.analysis.shared.table import read_table

    assert set(read_table(path)["judge_variant"]) == {"holistic"}
