"""Tables made elsewhere: the minimal table, other scales, blanks and NaN; strict JSON out."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.simulated.simulate import simulate


def _strict(path) -> dict:
    def refuse(token: str) -> float:
        raise AssertionError(f"summary.json holds {token}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    return simulate(n_signs=6, items_per_sign=7, repeats=1, seed=3)


def test_a_table_with_only_the_required_columns_gets_a_useful_report(cli, tmp_path, sim):
    minimal = sim[["item_id", "system_model", "judge_model", "overall", "equivalent"]].assign(
        item_id=sim["item_id"] + "_" + sim["system"] + "_" + sim["repeat"].astype(str)
    )
    path = tmp_path / "minimal.csv"
    minimal.to_csv(path, index=False)
    code, out, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    summary = _strict(tmp_path / "a" / "summary.json")
    assert any("no sign_code column" in n for n in summary["notes"])
    assert any("no system_family column" in n for n in summary["notes"])
    judge = next(iter(summary["judges"].values()))
    assert judge["point_biserial_r"] is not None and judge["type2"]["count"] >= 0
    assert summary["self_preference"]["overall"]["judges"]  # each model its own family: still estimated
    report = (tmp_path / "a" / "report.md").read_text()
    assert "What the table lacks" in report and "No paired tests" in report and "Self-preference on overall" in report


def test_another_scale_and_its_cuts(cli, tmp_path, sim):
    five = sim.assign(
        overall=sim["overall"] / 2,
        accuracy=sim["accuracy"] / 2,
        completeness=sim["completeness"] / 2,
        relevance=sim["relevance"] / 2,
    )
    path = tmp_path / "five.csv"
    five.to_csv(path, index=False)
    code, _, err = cli(
        "analyze",
        str(path),
        "--out",
        str(tmp_path / "b"),
        "--resamples",
        "100",
        "--scale-max",
        "5",
        "--high",
        "3.5",
        "--low",
        "2.5",
        "--high-inclusive",
    )
    assert code == 0, err
    summary = _strict(tmp_path / "b" / "summary.json")
    assert summary["scale"]["good"] == ">= 3.5" and summary["scale"]["poor"] == "< 2.5"
    both = five[(five["quality_status"] == "ok") & (five["equivalence_status"] == "ok")]
    judge = "qwen-j"
    rows = both[both["judge_model"] == judge]
    expected = int(((rows["overall"] >= 3.5) & ~rows["equivalent"].astype(bool)).sum())
    assert summary["judges"][judge]["type2"]["count"] == expected
    too_high = tmp_path / "ten.csv"
    sim.to_csv(too_high, index=False)
    code, _, err = cli("analyze", str(too_high), "--out", str(tmp_path / "c"), "--scale-max", "5", "--high", "3.5", "--low", "2.5")
    assert code == 2 and "between 0 and 5" in err
    code, _, err = cli("analyze", str(too_high), "--out", str(tmp_path / "d"), "--high", "11")
    assert code == 2 and "--high" in err


@pytest.mark.parametrize("column", ["judge_family", "system_family", "sign_code"])
def test_blank_identifying_cells_are_one_line_errors(cli, tmp_path, sim, column):
    frame = sim.copy()
    frame.loc[3, column] = ""
    path = tmp_path / "blank.csv"
    frame.to_csv(path, index=False)
    code, _, err = cli("analyze", str(path), "--out", str(tmp_path / "a"))
    assert code == 2 and f"column {column} is blank in row 4" in err and len(err.strip().splitlines()) == 1


def test_nan_values_give_strict_json(cli, tmp_path, sim):
    frame = sim.astype({"equivalent": object})
    frame.loc[frame["judge_model"] == "meta-j", ["overall", "accuracy", "completeness", "relevance"]] = np.nan
    frame.loc[frame["judge_model"] == "meta-j", "quality_status"] = "parse_failure"
    frame.loc[frame["judge_model"] == "meta-j", ["equivalent"]] = np.nan
    frame.loc[frame["judge_model"] == "meta-j", "equivalence_status"] = "error"
    path = tmp_path / "nan.csv"
    frame.to_csv(path, index=False)
    code, _, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    summary = _strict(tmp_path / "a" / "summary.json")
    meta = summary["judges"]["meta-j"]
    assert meta["point_biserial_r"] is None and meta["type1"]["rate"] is None
    missing = summary["missingness"]["per_judge"]["meta-j"]["quality"]["overall"]
    assert missing["rate"] == 1.0 and not math.isnan(missing["rate"])
