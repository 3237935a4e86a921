"""Rubric clarification (`dualjudge rubric clarify`) with the scripted engine: the split, the ranking,
the control draw, the editor's checks, and the whole experiment on a run (fast)."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import pandas as pd
import pytest

from dualjudge.analysis.pointwise.clarification import choose_clauses, rank_clauses, split_signs
from dualjudge.errors import DualjudgeError
from dualjudge.protocol.editor import ATTEMPTS, build_editor_request, editor_constraint, editor_max_tokens, read_rewrite
from dualjudge.protocol.rubric import load_rubric
from dualjudge.storage.rows import VerdictRow
from dualjudge.storage.store import Store
from dualjudge.studies.clarify import ClarifyOptions, clarify
from dualjudge.studies.job import run_job
from dualjudge.testbed.catalogue import default_catalogue
from tests.helpers.engines import ScriptedEngine, ScriptedEngines, fill_schema, toy_grammar_compiler
from tests.helpers.runs import CONFIG, config, respond

IDS = load_rubric().ids
SIGNS = '["616", "670V30", "602", "601.1"]'
RUN = CONFIG.replace('signs = ["616", "670V30"]', f"signs = {SIGNS}").replace(
    "[judges]\n", '[judges]\nvariants = ["holistic", "rubric"]\nmax_tokens = 320\n'
)


def good_rewrite(ids) -> str:
    return json.dumps({cid: f"Clearer {cid}: test it against the reference. 2: all of it; 1: part; 0: none" for cid in ids})


class Judges(ScriptedEngines):
    """Scripted models that know who they are: the judges agree on every clause but `figure` (often)
    and `exceptions` (sometimes); the editor replies with `editor(request, model)`."""

    def __init__(self, editor=lambda request, model: good_rewrite(request.constraint.schema["required"])):
        super().__init__(respond)
        self.editor = editor
        self.calls = 0

    def _respond_as(self, model: str):
        def answer(request):
            self.calls += 1
            schema = request.constraint.schema if request.constraint is not None and request.constraint.kind == "json" else None
            if schema is not None and schema.get("title") == "RubricRewrite":
                return self.editor(request, model)
            if schema is not None and schema.get("title") == "RubricQualityVerdict":
                data = fill_schema(schema, request.messages[1].text)
                text = request.messages[1].text
                if model == "gemma-3-270m":
                    data["figure"] = (data["figure"] + 1) % 3
                    if len(text) % 3 == 0:
                        data["exceptions"] = (data["exceptions"] + 1) % 3
                return json.dumps(data)
            return respond(request)

        return answer

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        self.loaded.append(card.name)
        engine = ScriptedEngine(self._respond_as(card.name), model_identity=f"{card.name}@test")
        self.opened.append(engine)
        yield engine


def test_the_split_is_disjoint_seeded_and_stratified_by_group():
    catalogue = default_catalogue()
    codes = list(catalogue.codes)
    dev, test = split_signs(codes, lambda c: catalogue.sign(c).group, seed=1)
    assert set(dev).isdisjoint(test) and set(dev) | set(test) == set(codes)
    assert split_signs(codes, lambda c: catalogue.sign(c).group, seed=1) == (dev, test)
    assert split_signs(codes, lambda c: catalogue.sign(c).group, seed=2) != (dev, test)
    for group in ("regulatory", "warning", "information"):
        members = [c for c in codes if catalogue.sign(c).group == group]
        assert sum(c in dev for c in members) == len(members) // 2
    with pytest.raises(DualjudgeError, match="no development/test split"):
        split_signs(["616"], lambda c: catalogue.sign(c).group, seed=1)
    with pytest.raises(DualjudgeError, match="--dev-share"):
        split_signs(codes, lambda c: catalogue.sign(c).group, seed=1, dev_share=1.0)


def _scores(disagree: dict[str, int]) -> pd.DataFrame:
    rows = []
    for item in range(12):
        for j, judge in enumerate(("a", "b", "c")):
            row = {
                "run_id": "r",
                "item_id": f"i{item}",
                "repeat": 0,
                "system": "sa",
                "system_model": "m",
                "sign_code": "616" if item < 6 else "602",
                "judge_model": judge,
            }
            for cid in IDS:
                row[cid] = 2 if j == 0 or item >= disagree.get(cid, 0) else j - 1
            rows.append(row)
    return pd.DataFrame(rows)


def test_clauses_are_ranked_by_the_judges_disagreement():
    ranking = rank_clauses(_scores({"figure": 9, "action": 4, "sign": 1}), IDS)
    assert [c["clause"] for c in ranking][:3] == ["figure", "action", "sign"]
    assert [c["clause"] for c in ranking][3:] == ["applies_to", "exceptions", "unsupported"]  # ties: rubric order
    assert ranking[0]["disagreement"] > ranking[1]["disagreement"] > ranking[2]["disagreement"] > 0
    assert ranking[3]["disagreement"] == 0 and ranking[3]["alpha"] is None and ranking[0]["answers"] == 12


@pytest.mark.parametrize("seed", range(8))
def test_the_control_draws_only_unselected_clauses(seed):
    ranking = rank_clauses(_scores({"figure": 9, "action": 4}), IDS)
    selected, control = choose_clauses(ranking, 2, seed)
    assert selected == ["figure", "action"]
    assert len(control) == 2 and not set(control) & set(selected) and set(control) <= set(IDS)
    assert choose_clauses(ranking, 2, seed) == (selected, control)


def test_k_is_bounded_by_half_the_rubric():
    ranking = rank_clauses(_scores({"figure": 9}), IDS)
    with pytest.raises(DualjudgeError, match="--k must be from 1 to 3"):
        choose_clauses(ranking, 4, 0)


@pytest.mark.parametrize(
    "reply, problem",
    [
        ("not json", "not JSON"),
        (json.dumps({"figure": "Figure. 2: a; 1: b; 0: c"}), "dropped clause action"),
        (
            json.dumps({"figure": "F. 2: a; 1: b; 0: c", "action": "A. 2: a; 1: b; 0: c", "sign": "S. 2: a; 1: b; 0: c"}),
            "not given: sign",
        ),
        (json.dumps({"figure": "Figure without its bands", "action": "A. 2: a; 1: b; 0: c"}), "score bands"),
        (json.dumps({"figure": 3, "action": "A. 2: a; 1: b; 0: c"}), "not an object of clause texts"),
        (None, "no reply"),
        (
            json.dumps({"figure": load_rubric().text_of("figure"), "action": "A. 2: a; 1: b; 0: c"}),
            "clause figure came back unchanged",
        ),
    ],
)
def test_a_malformed_rewrite_is_rejected(reply, problem):
    rewrite = read_rewrite(load_rubric(), ("figure", "action"), reply)
    assert rewrite.texts is None and any(problem in p for p in rewrite.problems)


def test_a_good_rewrite_is_read():
    rewrite = read_rewrite(load_rubric(), ("figure", "action"), good_rewrite(("figure", "action")))
    assert rewrite.problems == () and set(rewrite.texts) == {"figure", "action"}


def test_the_editor_schema_holds_exactly_the_clauses_and_their_bands():
    xgrammar = pytest.importorskip("xgrammar")
    llguidance = pytest.importorskip("llguidance")
    ids = ("figure", "action")
    constraint = editor_constraint(ids)
    compiler = toy_grammar_compiler(xgrammar)
    compiled = compiler.compile_json_schema(constraint.spec, any_whitespace=False)
    ok = json.loads(good_rewrite(ids))
    compact = json.dumps(ok, separators=(", ", ": "))
    assert xgrammar.GrammarMatcher(compiled).accept_string(compact)
    assert len(compact) < editor_max_tokens(ids)
    for bad in ({**ok, "action": "No bands here at all, just words"}, {"figure": ok["figure"]}):
        assert not xgrammar.GrammarMatcher(compiled).accept_string(json.dumps(bad, separators=(", ", ": ")))
    assert llguidance.LLMatcher.validate_grammar(llguidance.grammar_from("json_schema", constraint.spec)) == ""
    request = build_editor_request(load_rubric(), ids, seed=5)
    assert "- figure: Limit or figure" in request.messages[1].text and request.sampling.seed == 5


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clarify")
    engines = Judges()
    run_job(config(tmp, RUN), tmp / "run", engines=engines)
    engines.loaded.clear()
    record = clarify(tmp / "run", ClarifyOptions("gemma-3-270m", k=2, seed=4), engines=engines)
    return tmp / "run", record, engines


def test_the_experiment_clarifies_the_contested_clauses_and_judges_the_test_split(experiment):
    out, record, engines = experiment
    assert record.selected == ["figure", "exceptions"] and record.status == "done"
    assert not set(record.control) & {"figure", "exceptions"} and len(record.control) == 2
    dev, test = record.split["dev"], record.split["test"]
    assert set(dev).isdisjoint(test) and sorted(dev + test) == sorted(json.loads(SIGNS))
    # the rubric variant was already judged by the run; the editor stays loaded to judge the test split first
    assert engines.loaded == ["gemma-3-270m", "smollm2-135m-instruct"]
    for arm, clauses in (("clarified", record.selected), ("control", record.control)):
        diff = (out / "rubrics" / f"{arm}.diff").read_text()
        assert diff.count("\n+text = ") == diff.count("\n-text = ") == len(clauses)
        assert "\n+id" not in diff and "\n-id" not in diff  # the ids and their order are kept
        assert all(f"Clearer {cid}" in (out / "rubrics" / f"{arm}.toml").read_text() for cid in clauses)
    table = pd.read_parquet(out / "verdicts.parquet")
    for variant in ("rubric:clarified", "rubric:control"):
        rows = table[table["judge_variant"] == variant]
        assert set(rows["sign_code"]) == set(test) and (rows["quality_status"] == "ok").all()
    rubric_rows = table[table["judge_variant"] == "rubric"]
    assert len(rubric_rows) == len(table[table["judge_variant"] == "holistic"])


def test_the_report_and_manifest_carry_the_experiment(experiment):
    out, record, _ = experiment
    summary = json.loads((out / "summary.json").read_text())
    c = summary["clarification"]
    assert c["arms"] == ["original", "clarified", "control"]
    assert set(c["differences"]) == {"clarified - original", "clarified - control", "control - original"}
    assert c["record"]["selected"] == record.selected
    md = (out / "report.md").read_text()
    assert "## Rubric clarification" in md and "No human labels were imported" in md
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["clarification"]["split"] == record.split
    assert manifest["clarification"]["settings"]["seed"] == 4


def test_a_rerun_resumes_from_the_store_and_other_settings_are_refused(experiment):
    out, record, engines = experiment
    calls, loaded = engines.calls, list(engines.loaded)
    again = clarify(out, ClarifyOptions("gemma-3-270m", k=2, seed=4), engines=engines)
    assert engines.calls == calls and engines.loaded == loaded
    assert again.model_dump(exclude={"editor"}) == record.model_dump(exclude={"editor"})
    before = (out / "clarification.json").read_bytes()
    with pytest.raises(DualjudgeError, match="other settings .*k: 2 then, 3 now"):
        clarify(out, ClarifyOptions("gemma-3-270m", k=3, seed=4), engines=engines)
    assert (out / "clarification.json").read_bytes() == before


def test_an_editor_that_breaks_the_structure_is_retried_then_reported_and_never_used(tmp_path):
    tries = {"clarified": 0}

    def editor(request, model):
        ids = request.constraint.schema["required"]
        if "figure" in ids:  # the clarified arm: not JSON on the first try, fixed on the second
            tries["clarified"] += 1
            return "not json" if tries["clarified"] == 1 else good_rewrite(ids)
        return json.dumps({cid: "dropped the bands" for cid in ids})  # the control arm: broken on every try

    engines = Judges(editor)
    run_job(
        config(tmp_path, RUN.replace('variants = ["holistic", "rubric"]', 'variants = ["holistic"]')),
        tmp_path / "run",
        engines=engines,
    )
    record = clarify(tmp_path / "run", ClarifyOptions("gemma-3-270m", k=2, seed=4), engines=engines)
    clarified = [a for a in record.editor.attempts if a.arm == "clarified"]
    assert [a.used for a in clarified] == [False, True] and "not JSON" in clarified[0].problems[0]
    assert clarified[0].seed != clarified[1].seed
    control = [a for a in record.editor.attempts if a.arm == "control"]
    assert len(control) == ATTEMPTS == 4 and not any(a.used for a in control)
    assert len({a.seed for a in control}) == 4 and all("score bands" in a.problems[0] for a in control)
    assert record.arms == ["original", "clarified"] and "control" not in record.rubrics
    assert not (tmp_path / "run" / "rubrics" / "control.toml").exists()
    store = Store(tmp_path / "run" / "results.sqlite")
    variants = {r.judge_variant for r in store.read(VerdictRow)}
    assert variants == {"holistic", "rubric", "rubric:clarified"}  # the original rubric judged every answer first
    md = (tmp_path / "run" / "report.md").read_text()
    assert "control: **not made**" in md


@pytest.mark.parametrize(
    "args, problem",
    [
        (["--editor", "no-such-model"], "no-such-model"),
        (["--editor", "gemma-3-270m", "--k", "0"], "--k must be from 1 to 3"),
        (["--editor", "gemma-3-270m", "--dev-share", "1.5"], "--dev-share must be between 0 and 1"),
        (["--editor", "gemma-3-270m", "--seed", "-1"], "--seed must be 0 or more"),
    ],
)
def test_bad_options_are_one_line_errors_that_change_nothing(cli, experiment, args, problem):
    out, _, _ = experiment
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "run.lock"}
    code, _, err = cli("rubric", "clarify", str(out), *args)
    assert code == 2 and err.count("error:") == 1 and problem in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "run.lock"} == before


def test_a_folder_that_is_not_a_run_is_refused(cli, tmp_path):
    code, _, err = cli("rubric", "clarify", str(tmp_path), "--editor", "gemma-3-270m")
    assert code == 2 and "not a run directory" in err


def test_the_experiment_on_a_planted_table_reports_each_contrast_and_self_preference():
    """Three judge families, the clarified rubric with planted higher agreement: its alpha rises over
    the original and the control with intervals above zero, and each judge's index is differenced."""
    from dualjudge.analysis.pointwise.clarification import experiment
    from dualjudge.analysis.shared.results import Clarification
    from dualjudge.report.clarification import section
    from tests.helpers.designs import table

    frame = table({"rubric": 2.0, "rubric:clarified": 0.6, "rubric:control": 2.0}, n_signs=12, items=4)
    codes = sorted(frame["sign_code"].unique())
    record = {
        "settings": {"editor": "e", "k": 2, "dev_share": 0.5, "seed": 0, "original_rubric_sha256": "x"},
        "split": {"dev": codes[:4], "test": codes[4:], "stratified_by": "sign group"},
        "statistic": "s",
        "ranking": [],
        "selected": ["figure"],
        "control": ["sign"],
        "editor": {"model": "e", "attempts": [], "tries": 4},
        "arms": ["original", "clarified", "control"],
        "variants": {},
        "rubrics": {"clarified": "rubrics/clarified.toml", "control": "rubrics/control.toml"},
        "rubric_sha256": {},
        "status": "done",
    }
    result = Clarification.model_validate(experiment(frame, record, None, n_resamples=300))
    for contrast in ("clarified - original", "clarified - control"):
        d = result.differences[contrast]["overall"]
        assert d.estimate > 0.1 and d.ci_low > 0 and result.differences[contrast]["signs"] == 8
    control = result.differences["control - original"]["overall"]
    assert control.ci_low < 0 < control.ci_high
    judges = result.self_preference["clarified - original"]
    assert set(judges) == {"j_a", "j_b", "j_c"} and all(e.difference is not None for e in judges.values())
    md = "\n".join(section(result))
    assert "| j_a | clarified - original |" in md and "only 8 test signs" in md


def test_a_run_with_one_judge_cannot_rank_clauses_and_says_so(tmp_path):
    one = RUN.replace("[judges]\nvariants", '[judges]\nmodels = ["gemma-3-270m"]\nvariants').replace(
        '\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]\n[probes]', "\n[probes]"
    )
    engines = Judges()
    run_job(config(tmp_path, one), tmp_path / "run", engines=engines)
    with pytest.raises(DualjudgeError, match="scored by two judges"):
        clarify(tmp_path / "run", ClarifyOptions("gemma-3-270m", k=2), engines=engines)
    assert not (tmp_path / "run" / "clarification.json").exists()
