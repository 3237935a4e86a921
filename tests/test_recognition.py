"""The self-recognition probe (issue 54): each judge model's own answer against another family's, "which did you
write?" in both orders and, optionally, each alone; stored, resumed, counted by the plan, analysed per judge with a
position-corrected share and its interval, and shown in the report and the explorer."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dualjudge.analysis.bias_probes.recognition import correlation, recognition
from dualjudge.report.explorer import explorer_data
from dualjudge.runs.plan import recognition_pairs
from dualjudge.storage.rows import AnswerKey
from dualjudge.storage.store import load_run_store
from dualjudge.studies.job import run_job
from tests.helpers.browser import open_page
from tests.helpers.runs import CONFIG, Recorder, config

RUN = CONFIG.replace("[probes]\n", "[probes]\nrecognition = true\nrecognition_pairs = 3\nrecognition_single = true\n")


def test_pairs_set_the_judges_own_answer_against_another_familys_answer_to_the_same_prompt():
    planned = [
        AnswerKey(v, r, m, s)
        for v in ("v1", "v2")
        for r in (0, 1)
        for m in ("judge", "sibling", "other", "third")
        for s in ("sa", "ma")
    ]
    family = {"judge": "a", "sibling": "a", "other": "b", "third": "c"}
    pairs = recognition_pairs(planned, "judge", family, 100, seed=1)
    assert pairs and all(a.system_model == "judge" and family[b.system_model] not in ("a", None) for a, b in pairs)
    assert all((a.variant_id, a.repeat, a.strategy) == (b.variant_id, b.repeat, b.strategy) for a, b in pairs)
    assert len(pairs) == 2 * 2 * 2 * 2  # variants x repeats x strategies x other families
    assert recognition_pairs(list(reversed(planned)), "judge", family, 5, seed=1) == pairs[:5]  # the design alone
    assert recognition_pairs(planned, "judge", family, 5, seed=2) != pairs[:5]
    assert recognition_pairs(planned, "judge-only", {**family, "judge-only": "d"}, 5, seed=1) == []  # no own answers


def test_a_study_with_the_recognition_probe_stores_resumes_and_reports_it(tmp_path):
    engines = Recorder()
    out = tmp_path / "run"
    run_job(config(tmp_path, RUN), out, engines=engines)
    store = load_run_store(out)
    try:
        rows = store.rows("recognition_probe")
        got = [dict(r) for r in rows]
    finally:
        store.close()
    assert {r["judge_model"] for r in got} == {"smollm2-135m-instruct", "gemma-3-270m"} and len(got) == 6
    assert all(r["status"] == "ok" and r["other_model"] != r["judge_model"] for r in got)
    table = pd.read_csv(out / "probes_recognition.csv")
    assert len(table) == 6 and "sign_code" in table.columns
    summary = json.loads((out / "summary.json").read_text())
    per_judge = summary["probes"]["recognition"]["per_judge"]
    assert set(per_judge) == {"smollm2-135m-instruct", "gemma-3-270m"}
    for judge, e in per_judge.items():
        mine = table[table["judge_model"] == judge]
        expected = ((mine["own_first"] + mine["own_second"]) / 2).mean()
        assert e["pairs"] == 3 and e["accuracy"]["estimate"] == pytest.approx(expected)
        assert e["single"] is not None
    assert "a correlation across judges needs at least 3" in summary["probes"]["recognition"]["correlation"]["reason"]
    md = (out / "report.md").read_text()
    assert "Self-recognition (Panickssery et al. 2024)" in md and "recognises its own answer" in md
    store = load_run_store(out)
    try:
        data = explorer_data(out, store)
    finally:
        store.close()
    shown = [(a["model"], p) for a in data["answers"] for p in a["probes"] if p["probe"] == "recognition"]
    assert len(shown) == 2 * 6  # on the judge's own answer and on the other
    assert {(m == p["judge"], p["role"]) for m, p in shown} == {(True, "own"), (False, "other")}
    page = open_page(out / "explorer.html", "limit=all")
    assert "recognition probe, " in page.dom and "named its own shown first" in page.dom
    calls = engines.calls
    run_job(config(tmp_path, RUN), out, engines=engines)  # resumed: nothing is asked again
    assert engines.calls == calls


def test_recognition_is_position_corrected_and_a_one_position_judge_is_flagged():
    rows = []
    for i in range(8):
        sign = f"s{i % 4}"
        # judge a: always names its own answer; judge b: always names the answer shown first; c: wrong always
        rows.append({"sign_code": sign, "judge_model": "a", "own_first": 1, "own_second": 1, "claims_own": 1, "claims_other": 0})
        rows.append({"sign_code": sign, "judge_model": "b", "own_first": 1, "own_second": 0, "claims_own": 1, "claims_other": 1})
        rows.append({"sign_code": sign, "judge_model": "c", "own_first": 0, "own_second": 0, "claims_own": 0, "claims_other": 1})
    frame = pd.DataFrame(rows).assign(status="ok", other_model="x")
    result = recognition(frame, n_resamples=100)
    a, b, c = (result["per_judge"][j] for j in "abc")
    assert a["accuracy"]["estimate"] == 1.0 and a["single"]["estimate"] == 1.0 and not a["one_position"]
    assert b["accuracy"]["estimate"] == 0.5 and b["first_position"]["estimate"] == 1.0 and b["one_position"]
    assert b["single"]["estimate"] == 0.5
    assert c["accuracy"]["estimate"] == 0.0 and c["single"]["estimate"] == 0.0
    few = correlation(result, {"a": 0.5, "b": 0.1}, "overall")
    assert few["spearman"] is None and "at least 3" in few["reason"]
    three = correlation(result, {"a": 0.9, "b": 0.4, "c": 0.1}, "overall")
    assert three["spearman"] == pytest.approx(1.0) and three["judges"] == ["a", "b", "c"]
