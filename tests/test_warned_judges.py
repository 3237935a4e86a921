"""Claims the data support (issue 32): a judge whose self-preference estimate carries a warning is not called
significant (no adjusted p-value, an interval widened to the estimates its warning shows, said in the
report); a judge whose verdicts copy another's is merged with it before fitting, in one line."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from dualjudge.analysis.pointwise.self_preference import self_preference
from dualjudge.analysis.simulated.simulate import Planted, simulate

NULL = Planted(family_bonus={"qwen-j": 0.0, "google-j": 0.0, "meta-j": 0.0, "mistral-j": 0.0})


def _missing_own_lows(outcome: str, seed: int = 4) -> pd.DataFrame:
    """Null judges; qwen-j fails on most own-family answers it would rate low (0/1: not equivalent)."""
    frame = simulate(NULL, n_signs=12, items_per_sign=7, repeats=2, seed=seed)
    rng = np.random.default_rng(0)
    low = ~frame["equivalent"].astype(bool) if outcome == "equivalent" else frame["overall"] < 6
    own = (frame["judge_model"] == "qwen-j") & (frame["system_family"] == "qwen") & low
    status = "equivalence_status" if outcome == "equivalent" else "quality_status"
    frame.loc[own & (rng.random(len(frame)) < 0.7), status] = "error"
    return frame


def test_a_warned_judge_gets_no_adjusted_p_and_an_interval_that_holds_its_imputed_estimates():
    sp = self_preference(_missing_own_lows("overall"), n_resamples=200, outcomes=("overall",))
    judges = sp["overall"]["judges"]
    qwen = next(e for e in judges if e["judge"] == "qwen-j")
    assert qwen["warnings"] and qwen["warned"] and qwen["p_adjusted"] is None
    shown = [float(v) for v in re.findall(r"([+-]\d+\.\d+) at \d", " ".join(qwen["warnings"]))]
    assert shown and qwen["ci_low"] <= min(shown) + 0.005 and max(shown) - 0.005 <= qwen["ci_high"]
    for e in judges:  # a judge without a warning keeps its adjusted p-value
        assert e.get("warned", False) == bool(e["warnings"] and e["estimate"] is not None)
        assert (e["p_adjusted"] is None) == (e["p"] is None or e.get("warned", False))


def test_missing_own_family_zeros_are_bounded_by_the_worst_case():
    sp = self_preference(_missing_own_lows("equivalent"), n_resamples=200, outcomes=("equivalent",))
    qwen = next(e for e in sp["equivalent"]["judges"] if e["judge"] == "qwen-j")
    words = " ".join(qwen["warnings"])
    assert "worst case of a 0/1 verdict" in words and qwen["warned"] and qwen["p_adjusted"] is None
    worst = float(re.search(r"the worst case of a 0/1 verdict\) the estimate is ([+-]\d+\.\d+)", words).group(1))
    assert worst < qwen["estimate"] and qwen["ci_low"] <= worst + 1e-3  # the interval reaches the worst case


def test_a_judge_entered_twice_is_merged_before_fitting_in_one_line():
    frame = simulate(NULL, n_signs=12, items_per_sign=7, repeats=2, seed=1)
    copy = frame[frame["judge_model"] == "meta-j"].assign(judge_model="meta-j-copy", judge_family="other")
    twice = self_preference(pd.concat([frame, copy], ignore_index=True), n_resamples=200, outcomes=("overall",))
    once = self_preference(frame, n_resamples=200, outcomes=("overall",))
    merged = [w for w in twice["overall"]["warnings"] if "merged" in w]
    assert len(merged) == 1 and merged[0].startswith("meta-j-copy merged with meta-j before fitting")
    entry = next(e for e in twice["overall"]["judges"] if e["judge"] == "meta-j-copy")
    assert entry["estimate"] is None and entry["reason"].startswith("merged with meta-j")
    kept = {e["judge"]: (e["estimate"], e["ci_low"], e["ci_high"]) for e in twice["overall"]["judges"] if e["estimate"]}
    assert kept == {
        e["judge"]: (e["estimate"], e["ci_low"], e["ci_high"]) for e in once["overall"]["judges"] if e["estimate"]
    }  # the copy changes nothing: it was fitted once


def test_the_report_marks_a_warned_judge_in_its_table(tmp_path):
    from dualjudge.report.build import analyze

    table = tmp_path / "t.parquet"
    _missing_own_lows("overall").to_parquet(table, index=False)
    summary = analyze(table, tmp_path / "a", n_resamples=100, figures=False)
    warned = [j for j in summary.self_preference.overall.judges if j.warned]
    assert warned and all(j.p_adjusted is None for j in warned)
    md = (tmp_path / "a" / "report.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith(f"| {warned[0].judge} |") and "widened (warned)" in line]
    assert rows and "none (warned)" in rows[0]
    assert "it gets no adjusted p-value, and its interval is widened" in md


def test_the_board_names_no_best_system_when_leaving_out_a_judge_changes_the_top(cli, tmp_path):
    tied = Planted(quality={"qwen-j": 0.3, "qwen-small": -0.4, "google-j": 0.3, "meta-j": -0.2, "mistral-j": 0.0})
    table = tmp_path / "t.parquet"
    simulate(tied, n_signs=12, items_per_sign=7, repeats=2, seed=2).to_parquet(table, index=False)
    code, out, err = cli("analyze", str(table), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    board = summary["systems"]["overall"]["system_model"]
    top = board["rows"][0]["group"]
    moved = [x for x in board["sensitivity"]["leave_one_judge_out"] if x["top"] not in (None, top)]
    assert moved  # the two best systems are planted equal: some judge's absence turns them
    flat = " ".join(out.split())
    assert "Which system is best is not settled" in flat and f"without {moved[0]['left_out']}: {moved[0]['top']} first" in flat
    assert all(r["p_best"] is None for r in board["rows"]) and not board["settled"]  # the same answer in summary.json
    md = (tmp_path / "a" / "report.md").read_text()
    assert "Which system is best is not settled" in md and "No single best system model" in md
    assert "Best system model with the judges' biases taken out" not in md and "- Best system model:" not in md
