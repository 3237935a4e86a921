"""The calibrated self-preference index against planted truths from the independent simulator
(benchmarks/stats/simulator.py): a small, fast version of benchmarks/stats/self_preference_coverage.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from dualjudge.analysis.pointwise.self_preference import self_preference
from dualjudge.analysis.shared.calibration import unidentified
from dualjudge.analysis.shared.table import validate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "stats"))
from simulator import scenarios, simulate  # noqa: E402

SCENARIOS = {s.name: s for s in scenarios()}


def _run(name: str, seeds: range, n_signs: int = 12, resamples: int = 100) -> list[dict]:
    sc = SCENARIOS[name].with_signs(n_signs)
    rows = []
    for seed in seeds:
        frame, truth = simulate(sc, seed)
        result = self_preference(validate(frame), seed=seed, n_resamples=resamples, outcomes=("overall",))["overall"]
        for e in result["judges"]:
            rows.append(
                {
                    "judge": e["judge"],
                    "truth": truth["overall"][e["judge"]]["estimate"],
                    "calibrated": e,
                    "did": e["sensitivity"]["did"],
                }
            )
    return rows


def _bias(rows: list[dict], judge: str, key: str) -> float:
    return float(np.mean([r[key]["estimate"] - r["truth"] for r in rows if r["judge"] == judge]))


def _covered(rows: list[dict]) -> list[bool]:
    return [r["calibrated"]["ci_low"] <= r["truth"] <= r["calibrated"]["ci_high"] for r in rows]


@pytest.mark.parametrize(
    "name,judge", [("compressed slope, weaker own family", "llama-11b"), ("missing on weak own answers", "llama-11b")]
)
def test_calibrated_index_is_unbiased_where_the_difference_in_differences_is_not(name, judge):
    rows = _run(name, range(6), n_signs=30)
    # one estimate's SD is about 0.08 here, so 6 datasets' mean is within 0.1 of the truth unless biased
    assert abs(_bias(rows, judge, "calibrated")) < 0.1
    assert _bias(rows, judge, "did") > 0.2  # the audit's failure, reproduced: the test can tell them apart
    for other in {r["judge"] for r in rows}:
        assert abs(_bias(rows, other, "calibrated")) < 0.1, other
    assert np.mean(_covered(rows)) >= 0.8


def test_varied_slopes_recover_the_planted_effects():
    rows = _run("varied slopes 1.3/1.0/0.8/0.6", range(6), n_signs=30)
    for judge in ("pixtral-12b", "gemma-12b", "qwen-7b", "llama-11b"):
        assert abs(_bias(rows, judge, "calibrated")) < 0.1, judge
    assert _bias(rows, "pixtral-12b", "did") > 0.2  # the audit: 0.6 planted, about 1.0 estimated by the DiD
    assert np.mean(_covered(rows)) >= 0.8


def test_self_and_family_other_are_separated_within_a_family():
    sc = SCENARIOS["two judges share a family, three generators in it (self vs family)"].with_signs(12)
    frame, truth = simulate(sc, 1)
    result = self_preference(validate(frame), n_resamples=100, outcomes=("overall",))["overall"]
    qwen = next(e for e in result["judges"] if e["judge"] == "qwen-7b")
    assert qwen["self"]["ci_low"] <= truth["overall"]["qwen-7b"]["self"] <= qwen["self"]["ci_high"]
    assert qwen["family_other"]["ci_low"] <= truth["overall"]["qwen-7b"]["family_other"] <= qwen["family_other"]["ci_high"]
    assert qwen["estimate"] == pytest.approx(
        (qwen["self"]["estimate"] * 1 + qwen["family_other"]["estimate"] * 2) / 3, abs=1e-6
    )  # 1 own model, 2 others


def test_favouritism_toward_another_family_shows_in_the_calibrated_matrix():
    sc = SCENARIOS["off-diagonal favouritism (meta judge prefers mistral)"].with_signs(12)
    frame, _ = simulate(sc, 2)
    inter = self_preference(validate(frame), n_resamples=100, outcomes=("overall",))["overall"]["interaction"]
    cell = inter["double_centred"][inter["judges"].index("llama-11b")][inter["families"].index("mistral")]
    assert cell["ci_low"] > 0
    quiet = inter["double_centred"][inter["judges"].index("gemma-12b")][inter["families"].index("meta")]
    assert quiet["ci_low"] < 0.1


def test_few_signs_warn_and_missingness_gaps_are_flagged():
    sc = SCENARIOS["missing on weak own answers"].with_signs(6)
    frame, _ = simulate(sc, 0)
    result = self_preference(validate(frame), n_resamples=100, outcomes=("overall",))["overall"]
    assert any("unreliable below 10 signs" in w for w in result["warnings"])
    assert any("missing overall verdicts range" in w for w in result["warnings"])
    llama = result["missing"]["by_judge_family"]["llama-11b"]
    assert llama["meta"]["rate"] > llama["google"]["rate"] + 0.05


def test_identification_follows_chains_of_neutral_judgements():
    fam = {"F": "f", "G": "g", "H": "h"}
    own = {"F": 10, "G": 10, "H": 10}
    two = {("F", "f"), ("F", "g"), ("G", "f"), ("G", "g")}
    reasons = unidentified(["F", "G"], fam, two, own)
    assert set(reasons) == {"F", "G"} and "no chain of neutral judgements" in reasons["F"]
    # a third generator family both judges rate neutrally links them: identified without a third judge
    assert unidentified(["F", "G"], fam, two | {("F", "h"), ("G", "h")}, own) == {}
    assert "own family" in unidentified(["H"], fam, {("H", "f")}, {"H": 0})["H"]


def test_cli_json_contract_and_refusals(cli, tmp_path):
    frame, _ = simulate(SCENARIOS["leniency only"].with_signs(8), 0)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    code, out, err = cli("stats", "self-preference", str(path), "--resamples", "100", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert {"outcome", "method", "judges"} <= set(data) and data["outcome"] == "overall"
    for entry in data["judges"]:
        assert {
            "judge",
            "family",
            "identified",
            "estimate",
            "ci_low",
            "ci_high",
            "p",
            "p_adjusted",
            "self",
            "family_other",
            "reason",
        } <= set(entry)
        assert entry["ci_low"] <= entry["estimate"] <= entry["ci_high"] and entry["p_adjusted"] >= entry["p"]
    code, out, _ = cli("stats", "self-preference", str(path), "--resamples", "100", "--outcome", "equivalent", "--json")
    assert code == 0 and json.loads(out)["outcome"] == "equivalent"
    code, out, err = cli("stats", "self-preference", str(path), "--resamples", "100")
    assert code == 0, err
    assert out.count("than their quality warrants") == len(data["judges"]) and "warning: only 8 signs" in out
    for args, needle in (
        (["--outcome", "both"], "--outcome"),
        (["--lineage", "vendor"], "--lineage"),
        (["--resamples", "5"], "--resamples"),
    ):
        code, _, err = cli("stats", "self-preference", str(path), *args)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    failed = frame.assign(quality_status="error", overall=np.nan, equivalence_status="error", equivalent=None)
    failed.to_csv(tmp_path / "failed.csv", index=False)
    code, _, err = cli("stats", "self-preference", str(tmp_path / "failed.csv"), "--resamples", "100")
    assert code == 2 and "no self-preference estimate" in err and len(err.strip().splitlines()) == 1


def test_sufficient_statistics_fit_is_a_fixed_point_of_the_answer_level_regressions():
    """The fit runs on per-(sign, type) statistics; at its solution, each judge's own least-squares
    regression of its verdicts on [1, quality, indicators], computed answer by answer, gives back its
    parameters, and quality has weighted mean 0 and variance 1."""
    from dualjudge.analysis.pointwise.grid import build_grid
    from dualjudge.analysis.shared import calibration

    frame, _ = simulate(SCENARIOS["missing on weak own answers"].with_signs(10), 0)
    d = build_grid(validate(frame), "overall", "family").design
    types = calibration.Types.of(d)
    f = calibration.fit(types.resampled(None))
    assert f.converged
    q = f.quality(d, types)
    for j in range(d.n_judges):
        rated = d.present[j]
        terms = [k for k in range(d.n_terms) if d.terms[k, j, rated].any()]
        x = np.column_stack([np.ones(rated.sum()), q[rated], *(d.terms[k, j, rated] for k in terms)])
        coef = np.linalg.lstsq(x, d.y[j, rated], rcond=None)[0]
        expected = [f.leniency[0, j], f.scale[0, j], *(f.effects[0, j, k] for k in terms)]
        assert coef == pytest.approx(expected, abs=1e-5)
    weight = d.present.sum(axis=0)
    assert np.average(q, weights=weight) == pytest.approx(0, abs=1e-9)
    assert np.average(q**2, weights=weight) == pytest.approx(1, abs=1e-9)
