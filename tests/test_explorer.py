"""The run explorer (`dualjudge view`) and the report that leads with its findings and links to it.

The data and the report are checked everywhere; the page itself in Debian's headless chromium, when it
is installed (.ci/run installs it, so CI runs these rather than skipping them)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from dualjudge.analysis.board.leaderboard import leaderboard
from dualjudge.analysis.shared.table import validate
from dualjudge.analysis.simulated.simulate import simulate
from dualjudge.report.explorer import _calibrated_systems, explorer_data, render_explorer
from dualjudge.storage.store import load_run_store
from dualjudge.studies.job import run_job
from tests.helpers.browser import answer_keys, card_keys, error_rows, open_page
from tests.helpers.runs import CONFIG, Recorder, config

RUN = CONFIG.replace("[judges]\n", '[judges]\nvariants = ["holistic", "rubric"]\nmax_tokens = 320\n')


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explorer")
    run_job(config(tmp, RUN), tmp / "run", engines=Recorder(distinct=False))
    return tmp / "run"


def _data(run):  # type: ignore[no-untyped-def]
    store = load_run_store(run)
    try:
        return explorer_data(run, store)
    finally:
        store.close()


def test_the_explorer_data_hold_every_answer_once_with_every_verdict(run):
    data = _data(run)
    table = pd.read_parquet(run / "verdicts.parquet")
    keys = [(a["variant"], a["model"], a["strategy"], str(a["repeat"])) for a in data["answers"]]
    assert len(keys) == len(set(keys)) == len(answer_keys(table)) == 48
    assert data["variants"] == ["holistic", "rubric"] and data["modality"] == "text"
    a = data["answers"][0]
    assert len(a["verdicts"]) == 2 * 2 and a["scene"] and a["image"].startswith("testbed/images/")
    assert all(v["k"]["quality"]["r"] == "r" for v in a["verdicts"])  # the judge's reasoning, from the store
    assert all(v["criteria"] is not None for v in a["verdicts"] if v["jv"] == "rubric")
    assert all(v["residual"] is not None for v in a["verdicts"] if v["k"]["quality"]["s"] == "ok")
    probed = [x for x in data["answers"] if x["probes"]]
    assert {p["probe"] for x in probed for p in x["probes"]} == {"order", "padding"}
    assert (run / "explorer.html").is_file()  # run writes it too


def test_the_report_leads_with_findings_whose_numbers_link_to_the_explorer(run):
    md = (run / "report.md").read_text()
    assert md.index("## Findings") < md.index("## Which system is best") < md.index("## Strategies")
    findings = md[md.index("## Findings") : md.index("## Which system is best")]
    assert "48 answers from 2 system model(s)" in findings and "on 2 signs and 6 variants" in findings
    assert "**Warning:** only 2 signs" in findings
    sent = json.loads((run / "manifest.json").read_text())["requests"]
    assert sent["sent"] > 0 and f"The run sent {sent['sent']} requests to its models over 1 session(s); 0 failed" in findings
    table = pd.read_parquet(run / "verdicts.parquet")
    for judge in ("gemma-3-270m", "smollm2-135m-instruct"):
        n = len(error_rows(table, judge))
        assert (
            f"Type II (not equivalent yet scored good) [{n}](explorer.html#judge={judge}&type=type2&variant=holistic)" in findings
        )
    assert re.search(r"\| \[\d+\]\(explorer\.html#judge=[^&]+&type=type2&visibility=0\.5&variant=holistic\) \|", md)


def test_the_explorer_shows_every_answer_once_in_a_browser(run):
    page = open_page(run / "explorer.html", "limit=all")
    table = pd.read_parquet(run / "verdicts.parquet")
    keys = card_keys(page)
    assert len(keys) == len(set(keys)) and set(keys) == answer_keys(table)
    assert page.count == "48"


def test_a_malformed_fragment_leaves_the_explorer_showing_everything(run):
    page = open_page(run / "explorer.html", "limit=all&model=%E0%A4%A&sign=%ZZ")  # a link cut mid-character
    assert page.count == "48" and len(card_keys(page)) == 48


@pytest.mark.parametrize("judge", ["gemma-3-270m", "smollm2-135m-instruct"])
@pytest.mark.parametrize("kind, variant", [("type2", "rubric"), ("type1", "holistic"), ("type2", "holistic")])
def test_a_type_filter_shows_exactly_the_rows_of_the_verdict_table(run, judge, kind, variant):
    table = pd.read_parquet(run / "verdicts.parquet")
    expected = answer_keys(error_rows(table, judge, kind, variant))
    page = open_page(run / "explorer.html", f"judge={judge}&type={kind}&variant={variant}&limit=all")
    assert set(card_keys(page)) == expected and page.count == str(len(expected))


def test_the_scripted_run_has_rows_behind_each_filter_checked(run):
    table = pd.read_parquet(run / "verdicts.parquet")
    for judge in ("gemma-3-270m", "smollm2-135m-instruct"):
        assert len(error_rows(table, judge, "type2", "rubric")) and len(error_rows(table, judge, "type1", "holistic"))


def test_filters_by_answer_and_judge_agree_with_the_table(run):
    table = pd.read_parquet(run / "verdicts.parquet")
    page = open_page(run / "explorer.html", "model=gemma-3-270m&strategy=ma&visibility=0.5&limit=all")
    sub = table[(table["system_model"] == "gemma-3-270m") & (table["system"] == "ma") & (table["visibility"] == 0.5)]
    assert set(card_keys(page)) == answer_keys(sub)
    own = table[(table["judge_variant"] == "holistic") & (table["judge_family"] == table["system_family"])]
    page = open_page(run / "explorer.html", "own=1&limit=all")
    assert set(card_keys(page)) == answer_keys(own)
    page = open_page(run / "explorer.html", "sort=residual")
    assert len(page.cards) == 48  # a page of 50 at most
    wide = table[table["judge_variant"] == "holistic"].pivot_table(
        index=["item_id", "system_model", "system", "repeat"], columns="judge_model", values="overall"
    )
    spread = wide.max(axis=1) - wide.min(axis=1)
    page = open_page(run / "explorer.html", "disagree=3&limit=all")
    assert len(page.cards) == int((spread >= 3).sum())


def test_view_writes_the_explorer_and_says_where(cli, run):
    (run / "explorer.html").unlink()
    code, out, err = cli("view", str(run))
    assert code == 0, err
    assert (run / "explorer.html").is_file() and "explorer.html" in out
    html = (run / "explorer.html").read_text()
    data = json.loads(
        html[
            html.index('type="application/json">') + len('type="application/json">') : html.index(
                "</script>", html.index('type="application/json">')
            )
        ].replace("<\\/", "</")
    )
    assert len(data["answers"]) == 48


def test_the_failures_filter_shows_exactly_the_answers_with_a_failed_verdict(tmp_path):
    """Quality verdicts that are not JSON on one sign's answers: the failures filter shows those answers."""
    from tests.helpers.runs import respond

    def flaky(request):
        if (
            request.constraint is not None
            and request.constraint.kind == "json"
            and request.constraint.schema["title"] == "QualityVerdict"
            and "No entry" in request.messages[1].text
        ):
            return "not a verdict"
        return respond(request)

    class Flaky(Recorder):
        def _respond(self, request):  # type: ignore[no-untyped-def]
            self.calls += 1
            return flaky(request)

    run_job(config(tmp_path, CONFIG), tmp_path / "run", engines=Flaky())
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    failed = table[table["quality_status"].isin(["parse_failure", "error"])]
    assert 0 < len(failed) < len(table)
    page = open_page(tmp_path / "run" / "explorer.html", "failures=1&limit=all")
    assert set(card_keys(page)) == answer_keys(failed)


def test_the_explorer_carries_the_leaderboards_calibrated_scores():
    frame = validate(simulate(n_signs=6, items_per_sign=4, repeats=1), "t")
    got = _calibrated_systems(frame, ["holistic"])["holistic"]
    boards = leaderboard(frame, "overall", n_resamples=100)
    for by, key in (("system_model", "model"), ("system", "strategy")):
        assert set(got[key]) == {r["group"] for r in boards[by]["rows"]}
        for r in boards[by]["rows"]:
            assert got[key][r["group"]] == pytest.approx(r["estimate"], abs=1e-3)


def test_the_system_filter_lists_and_sorts_systems_by_calibrated_score(run):
    data = _data(run)
    assert data["systems"] == {}  # two judges of two families: no calibrated ranking, nothing to sort by
    low, high = sorted({a["model"] for a in data["answers"]})
    data["systems"] = {"holistic": {"model": {low: 5.25, high: 6.5}, "strategy": {}}}
    path = run / "explorer_calibrated.html"
    path.write_text(render_explorer(data))
    page = open_page(path, "sort=system&limit=all")
    order = [c["data-system-model"] for c in page.cards]
    assert len(order) == 48 and order == [high] * 24 + [low] * 24
    assert page.dom.index(f"{high} (calibrated 6.50)") < page.dom.index(f"{low} (calibrated 5.25)")
    rubric = open_page(path, "variant=rubric&sort=system&limit=all")  # no scores for this variant: run order
    assert f"{high} (calibrated" not in rubric.dom and len(rubric.cards) == 48


def test_each_verdict_says_whether_the_answer_shares_the_judges_own_label_and_filters_on_it(run):
    """Issue 54: a verdict on an answer whose final label is the judge's own on that item is marked, and the filter
    shows the answers with such a verdict; the judge filter names the run analysis's self-preference words."""
    from dualjudge.analysis.pointwise.belief import judge_beliefs

    data = _data(run)
    table = validate(pd.read_parquet(run / "verdicts.parquet"))
    judges = [j["name"] for j in data["judges"]]
    own = judge_beliefs(table, judges, {j["name"]: j["family"] for j in data["judges"]}, "family").label
    marked = 0
    for a in data["answers"]:
        for v in a["verdicts"]:
            mine = own.get(judges[v["judge"]], {}).get(f"{table['run_id'].iloc[0]}\x1f{a['variant']}")
            assert v["agrees"] == (None if mine is None or a["predicted"] is None else a["predicted"] in mine)
            marked += v["agrees"] is True
    assert marked
    expected = {
        (a["variant"], a["model"], a["strategy"], str(a["repeat"]))
        for a in data["answers"]
        if any(v["agrees"] is True and v["jv"] == "holistic" for v in a["verdicts"])
    }
    page = open_page(run / "explorer.html", "agrees=1&limit=all")
    assert set(card_keys(page)) == expected and expected
    assert "its own SIGN_TYPE" in page.dom
    for a in data["answers"][::2]:  # half the answers share no judge's label: the filter leaves them out
        for v in a["verdicts"]:
            v["agrees"] = False
    path = run / "explorer_agrees.html"
    path.write_text(render_explorer(data))
    kept = {(a["variant"], a["model"], a["strategy"], str(a["repeat"])) for a in data["answers"][1::2]} & expected
    assert set(card_keys(open_page(path, "agrees=1&limit=all"))) == kept and 0 < len(kept) < 48
    data["judges"][0]["self_preference"] = "self-preference +0.43 [0.32, 0.54]; with agreement held fixed -0.09 [-0.25, 0.08]"
    path = run / "explorer_words.html"
    path.write_text(render_explorer(data))
    page = open_page(path, "limit=all")
    assert f"{judges[0]} (self-preference +0.43 [0.32, 0.54]; with agreement held fixed -0.09 [-0.25, 0.08])" in page.dom


def test_the_explorer_names_a_judges_self_preference_from_the_analysis_beside_the_run(tmp_path):
    import sys
    from pathlib import Path

    from dualjudge.report.build import analyze
    from dualjudge.report.explorer import _self_preference_words

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "stats"))
    from simulator import belief_scenarios
    from simulator import simulate as simulate_scenario

    frame, _ = simulate_scenario(belief_scenarios()[1], 0)
    frame.to_parquet(tmp_path / "verdicts.parquet", index=False)
    summary = analyze(tmp_path / "verdicts.parquet", tmp_path, n_resamples=100)
    words = _self_preference_words(tmp_path)
    for e in summary.self_preference.overall.judges:  # type: ignore[union-attr]
        assert e.belief is not None and e.belief.controlled is not None
        assert words[e.judge].startswith(f"self-preference {e.estimate:+.2f}")
        assert f"with agreement held fixed {e.belief.controlled.estimate:+.2f}" in words[e.judge]
