"""A statistic is one declaration (analysis/shared/statistics.py, as docs/extending.md says): declared in this test alone,
it is computed from the verdict table into summary.json and printed as its own section of report.md, names
escaped, with no module changed."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dualjudge.analysis.shared.statistics import Statistic, declare, withdraw
from dualjudge.analysis.simulated.simulate import simulate
from dualjudge.report.build import analyze


def ceiling(frame: pd.DataFrame) -> dict:
    """Per judge, the share of its overall scores at the scale's top (10)."""
    ok = frame[frame["quality_status"] == "ok"]
    return {str(judge): float((g["overall"] >= 10).mean()) for judge, g in ok.groupby("judge_model", sort=True)}


def ceiling_section(result: dict) -> list[str]:
    rows = [f"| {judge} | {share:.1%} |" for judge, share in result.items()]
    return ["## Scores at the ceiling", "", "| judge | share at 10 |", "|---|---|", *rows, ""]


@pytest.fixture()
def declared_ceiling():
    declare(Statistic("ceiling", ceiling, ceiling_section))
    try:
        yield
    finally:
        withdraw("ceiling")


def test_a_statistic_declared_in_a_test_reaches_summary_and_report(tmp_path, declared_ceiling):
    frame = simulate(n_signs=4, items_per_sign=3, repeats=1, seed=2)
    frame.loc[frame.index[:7], "overall"] = 10.0
    frame["judge_model"] = frame["judge_model"].replace({frame["judge_model"].iloc[0]: "judge[one]"})
    table = tmp_path / "t.csv"
    frame.to_csv(table, index=False)
    analyze(table, tmp_path / "a", n_resamples=50, figures=False)
    stats = json.loads((tmp_path / "a" / "summary.json").read_text())["statistics"]
    expected = ceiling(frame)
    assert stats["ceiling"] == pytest.approx(expected) and stats["ceiling"]["judge[one]"] > 0
    report = (tmp_path / "a" / "report.md").read_text()
    assert "## Scores at the ceiling" in report
    assert "| judge\\[one\\] | 3.3% |" in report and "judge[one]" not in report  # escaped: never a link


def test_a_statistic_is_declared_once_and_absent_when_withdrawn(tmp_path):
    declare(Statistic("twice", lambda f: {}, lambda r: []))
    try:
        with pytest.raises(ValueError, match="a statistic called 'twice' is declared already"):
            declare(Statistic("twice", lambda f: {}, lambda r: []))
    finally:
        withdraw("twice")
    frame = simulate(n_signs=3, items_per_sign=2, repeats=1, seed=1)
    frame.to_csv(tmp_path / "t.csv", index=False)
    analyze(tmp_path / "t.csv", tmp_path / "a", n_resamples=20, figures=False)
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["statistics"] == {}
