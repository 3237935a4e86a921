"""Pairwise judges: the pairwise table's checks, the Davidson-Bradley-Terry fit recovering planted quality, position,
decisiveness and own-family terms, the design's rank, the position-only judge, transitivity, and `dualjudge analyze`
on a pairwise table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dualjudge.analysis.pairwise.estimate import pairwise
from dualjudge.analysis.pairwise.simulate import PlantedPairs, simulate_pairs
from dualjudge.analysis.pairwise.table import read_pairwise, validate_pairwise
from dualjudge.cli import app
from dualjudge.errors import DualjudgeError

RESAMPLES = 200


def judge_of(result, name):
    return next(j for j in result.judges if j.judge == name)


def covers(estimate, value) -> bool:
    return estimate is not None and estimate.ci_low <= value <= estimate.ci_high


def analysed(planted: PlantedPairs, seed: int = 0):
    return pairwise(validate_pairwise(simulate_pairs(planted, seed)), n_resamples=RESAMPLES)


# -- the table -----------------------------------------------------------------------------------------------------
def small_table() -> pd.DataFrame:
    return simulate_pairs(PlantedPairs(n_items=5, answer_sd=0.0), 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns=["shown_first"]), "missing columns shown_first"),
        (lambda f: f.assign(system_b=f["system_a"]), "compares qwen-j with itself"),
        (lambda f: f.assign(winner="both"), "winner 'both'; use a, b or tie"),
        (lambda f: f.assign(shown_first="c"), "shown_first 'c'; use a or b"),
        (lambda f: f.assign(prob_a=1.5), "has prob_a '1.5'"),
        (lambda f: f.iloc[:0], "no rows"),
        (lambda f: f.assign(family_a=np.where(np.arange(len(f)) % 2, "x", f["family_a"])), "several families"),
    ],
)
def test_a_bad_pairwise_table_is_one_line(change, message, tmp_path):
    path = tmp_path / "pairs.csv"
    change(small_table()).to_csv(path, index=False)
    with pytest.raises(DualjudgeError) as e:
        read_pairwise(path)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_a_blank_winner_is_a_missing_verdict_counted_per_judge():
    frame = small_table()
    frame.loc[:9, "winner"] = None
    result = pairwise(validate_pairwise(frame), n_resamples=RESAMPLES)
    assert sum(j.missing for j in result.judges) == 10
    assert result.n_answered == len(frame) - 10


# -- the raw rate ------------------------------------------------------------------------------------------------
def test_the_raw_own_choice_rate_counts_a_tie_half_and_takes_the_judges_probability_where_given():
    rows = [
        # judge j (family f) compares its own answer "own" with "other" on two items, both orders
        ("i1", "j", "own", "other", "a", "a"),  # own first, own wins
        ("i1", "j", "own", "other", "tie", "b"),  # other first, tie
        ("i2", "j", "own", "other", "b", "a"),  # own first, other wins
        ("i2", "j", "own", "other", "a", "b"),  # other first, own wins
    ]
    frame = pd.DataFrame(rows, columns=["item_id", "judge_model", "system_a", "system_b", "winner", "shown_first"])
    frame["judge_family"], frame["family_a"], frame["family_b"] = "f", "f", "g"
    result = pairwise(validate_pairwise(frame), n_resamples=RESAMPLES)
    assert judge_of(result, "j").raw_own_rate.estimate == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    with_prob = pairwise(validate_pairwise(frame.assign(prob_a=[0.9, 0.7, 0.2, 0.6])), n_resamples=RESAMPLES)
    assert judge_of(with_prob, "j").raw_own_rate.estimate == pytest.approx((0.9 + 0.7 + 0.2 + 0.6) / 4)
    assert judge_of(with_prob, "j").raw_from == "probabilities"


# -- planted effects recovered ---------------------------------------------------------------------------------------
def test_quality_only_gives_a_high_raw_rate_and_no_own_term():
    result = analysed(
        PlantedPairs(n_items=150, answer_sd=0.0, strength={"qwen-j": 1.0, "google-j": 0.0, "meta-j": -0.5, "mistral-j": -0.5})
    )
    qwen = judge_of(result, "qwen-j")
    assert qwen.raw_own_rate.estimate > 0.65  # its own answers are simply better
    assert covers(qwen.own_logit, 0.0)
    assert covers(qwen.own_points, 0.0)
    assert qwen.explained.quality > 0.15 > abs(qwen.explained.own)
    assert [r.group for r in result.board.rows][0] == "qwen-j"


def test_position_only_effects_are_position_not_self_preference():
    planted = PlantedPairs(n_items=150, answer_sd=0.0, position={"qwen-j": 1.2, "meta-j": -0.8})
    result = analysed(planted)
    for judge, value in (("qwen-j", 1.2), ("meta-j", -0.8), ("google-j", 0.0)):
        j = judge_of(result, judge)
        assert covers(j.position, value), (judge, j.position)
        assert covers(j.own_logit, 0.0), (judge, j.own_logit)
    assert judge_of(result, "qwen-j").first_share > 0.65


def test_an_own_term_is_recovered_on_the_logit_and_the_rate_scale():
    result = analysed(PlantedPairs(n_items=200, answer_sd=0.0, own={"qwen-j": 0.8, "meta-j": -0.5}))
    qwen, meta, google = (judge_of(result, n) for n in ("qwen-j", "meta-j", "google-j"))
    assert covers(qwen.own_logit, 0.8) and qwen.own_logit.ci_low > 0
    assert covers(meta.own_logit, -0.5) and meta.own_logit.ci_high < 0
    assert covers(google.own_logit, 0.0)
    assert qwen.own_points.estimate > 0.08  # about 0.8 logit is 10-20 points of the own-choice rate
    assert qwen.explained.own == pytest.approx(qwen.own_points.estimate)


def test_all_three_together_and_decisiveness():
    planted = PlantedPairs(
        n_items=200,
        answer_sd=0.0,
        own={"qwen-j": 0.6},
        position={"google-j": 0.7},
        decisiveness={"meta-j": 2.0, "mistral-j": 0.5},
        tie={"google-j": 0.6},
    )
    result = analysed(planted)
    qwen, google, meta, mistral = (judge_of(result, n) for n in ("qwen-j", "google-j", "meta-j", "mistral-j"))
    assert covers(qwen.own_logit, 0.6)
    assert covers(google.position, 0.7)
    assert google.tie_share > 0.1 and google.tie > 0.3
    assert meta.decisiveness.estimate > 1.4 > mistral.decisiveness.estimate
    assert result.decisiveness_test.p < 0.01


def test_one_decisiveness_for_all_books_a_sharp_judges_eye_as_favour():
    """A judge that separates answers sharply (and no favour at all) looks self-preferring when its own family is
    the strongest and every judge is given one decisiveness: the Panickssery XSum pattern."""
    planted = PlantedPairs(
        n_items=300,
        answer_sd=0.0,
        strength={"qwen-j": 1.0, "google-j": 0.3, "meta-j": -0.3, "mistral-j": -1.0},
        decisiveness={"qwen-j": 2.5, "google-j": 0.6, "meta-j": 0.6, "mistral-j": 1.1},
        design="own_vs_other",
    )
    qwen = judge_of(analysed(planted), "qwen-j")
    assert covers(qwen.own_logit, 0.0)
    assert qwen.plain_own_logit.ci_low > 0  # the plain model's spurious own term


# -- what the design cannot give ---------------------------------------------------------------------------------
def test_a_position_only_judge_is_flagged_and_left_out():
    frame = simulate_pairs(PlantedPairs(n_items=100, answer_sd=0.0, own={"qwen-j": 0.5}), 0)
    meta = frame["judge_model"] == "meta-j"
    first = np.where(frame["shown_first"] == "a", "a", "b")
    frame.loc[meta, "winner"] = first[meta.to_numpy()]
    result = pairwise(validate_pairwise(frame), n_resamples=RESAMPLES)
    m = judge_of(result, "meta-j")
    assert m.position_only and m.own_logit is None and m.position is None
    assert "position-only judge" in m.reason and m.first_share == 1.0
    assert any("meta-j picks the first-shown answer" in w for w in result.warnings)
    assert covers(judge_of(result, "qwen-j").own_logit, 0.5)


def test_an_own_term_no_other_family_can_check_is_one_line_not_a_number():
    """Only the qwen judges ever see qwen's answers: qwen's strength and their favour are one number."""
    systems = {"qwen-a": "qwen", "qwen-b": "qwen", "google-j": "google", "meta-j": "meta"}
    frame = simulate_pairs(
        PlantedPairs(
            systems=systems,
            judges={"qwen-a": "qwen", "google-j": "google", "meta-j": "meta"},
            strength={"qwen-a": 0.5, "qwen-b": 0.2, "google-j": 0.0, "meta-j": -0.4},
            n_items=60,
            answer_sd=0.0,
        ),
        0,
    )
    qwen_side = frame["family_a"].eq("qwen") | frame["family_b"].eq("qwen")
    frame = frame[~qwen_side | frame["judge_family"].eq("qwen")]
    result = pairwise(validate_pairwise(frame), n_resamples=RESAMPLES)
    q = judge_of(result, "qwen-a")
    assert q.own_logit is None
    assert "not identifiable" in q.reason and "qwen" in q.reason
    assert any("qwen-a's own-family term is not identifiable" in line for line in result.unidentified)


def test_a_judge_that_saw_every_pair_in_one_order_gets_no_position_nor_own_term():
    frame = simulate_pairs(PlantedPairs(n_items=80, answer_sd=0.0), 0)
    frame = frame[~(frame["judge_model"].eq("qwen-j") & frame["shown_first"].eq("b"))]
    result = pairwise(validate_pairwise(frame), n_resamples=RESAMPLES)
    q = judge_of(result, "qwen-j")
    assert q.position is None and q.own_logit is None
    assert "one order only" in q.reason and "one order only" in q.position_reason
    assert q.order_consistency is None and q.pairs_both_orders == 0


def test_transitivity_fails_on_cyclic_preferences_and_holds_on_a_bradley_terry_table():
    bt = analysed(PlantedPairs(n_items=100, answer_sd=0.0))
    assert bt.transitivity.fits is True
    systems = {"x": "fx", "y": "fy", "z": "fz"}
    rows = []
    for item in range(80):
        for winner, loser in (("x", "y"), ("y", "z"), ("z", "x")):  # x beats y beats z beats x
            for judge in ("j1", "j2"):
                for shown in ("a", "b"):
                    rows.append((f"i{item}", judge, winner, loser, "a" if item % 10 else "b", shown))
    frame = pd.DataFrame(rows, columns=["item_id", "judge_model", "system_a", "system_b", "winner", "shown_first"])
    frame["family_a"] = frame["system_a"].map(systems)
    frame["family_b"] = frame["system_b"].map(systems)
    frame["judge_family"] = "fj"
    cyclic = pairwise(validate_pairwise(frame), n_resamples=RESAMPLES)
    assert cyclic.transitivity.fits is False
    assert any("no Bradley-Terry model fits" in w for w in cyclic.warnings)


# -- the command line ---------------------------------------------------------------------------------------------
def test_analyze_reads_a_pairwise_table_by_its_columns(tmp_path):
    path = tmp_path / "pairs.parquet"
    simulate_pairs(PlantedPairs(n_items=40, answer_sd=0.0, own={"qwen-j": 1.0}), 3).to_parquet(path)
    out = tmp_path / "analysis"
    result = CliRunner().invoke(app, ["analyze", str(path), "--out", str(out), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    assert "own-family term estimated for 4 of 4 judges" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paradigm"] == "pairwise" and len(summary["judges"]) == 4
    report = (out / "report.md").read_text()
    assert "## Pairwise judges: self-preference" in report and "## Which system is best (pairwise)" in report
    assert "<table>" in (out / "report.html").read_text()


# -- real data, where a checkout is at hand ------------------------------------------------------------------------
PANICKSSERY = Path(os.environ.get("DUALJUDGE_PANICKSSERY", "/nonexistent"))


@pytest.mark.skipif(not (PANICKSSERY / "results" / "xsum").is_dir(), reason="set DUALJUDGE_PANICKSSERY to a checkout")
def test_panickssery_published_raw_rates_are_reproduced(tmp_path):
    import subprocess
    import sys

    table = tmp_path / "xsum.csv"
    subprocess.run(
        [sys.executable, "benchmarks/real/panickssery/convert.py", str(PANICKSSERY), "--dataset", "xsum", "--out", str(table)],
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    result = pairwise(read_pairwise(table), n_resamples=RESAMPLES)
    published = {"gpt4": 0.705, "gpt35": 0.582, "llama": 0.511}  # XSum, the repository's self_preference averaged
    for judge, value in published.items():
        assert round(judge_of(result, judge).raw_own_rate.estimate, 3) == value


# -- the decomposition ------------------------------------------------------------------------------------------------
def test_agreement_with_the_judges_own_answer_is_not_counted_as_favour():
    """Judges favour answers sharing their own answer's label and have no own-family term: the plain own term is
    significant for every judge; held against agreement, it is not."""
    planted = PlantedPairs(n_items=200, answer_sd=0.0, labels=4, agree=dict.fromkeys(PlantedPairs().judges, 1.0))
    result = analysed(planted, seed=1)
    assert result.belief_gold and result.belief_reason is None
    spurious = [j for j in result.judges if j.own_logit.ci_low > 0]
    held = [j for j in result.judges if covers(j.belief.controlled, 0.0)]
    assert len(spurious) >= 3 and len(held) >= 3
    for j in result.judges:
        assert j.belief.agreement.ci_low > 0.5  # planted 1.0
        assert j.belief.explained.estimate > 0
        assert j.belief.harmful is not None and j.belief.legitimate is not None
        assert j.belief.items == 200 and j.belief.source == "model"


def test_the_decomposition_says_what_it_cannot_give():
    frame = simulate_pairs(PlantedPairs(n_items=40, answer_sd=0.0, labels=3), 2)
    no_gold = pairwise(validate_pairwise(frame.drop(columns=["label"])), n_resamples=RESAMPLES)
    assert not no_gold.belief_gold
    assert all("no gold label" in j.belief.harmful_reason for j in no_gold.judges)
    assert all(j.belief.controlled is not None for j in no_gold.judges)
    unlabelled = pairwise(validate_pairwise(frame.drop(columns=["label", "label_a", "label_b"])), n_resamples=RESAMPLES)
    assert "no answer labels" in unlabelled.belief_reason
    assert all(j.belief is None for j in unlabelled.judges)
