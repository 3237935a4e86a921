import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dualjudge.analysis.pointwise.dual_judge import paired_tests, type_errors
from dualjudge.analysis.pointwise.self_preference import self_preference
from dualjudge.analysis.shared.table import read_table, validate
from dualjudge.analysis.simulated.simulate import Planted, simulate
from dualjudge.analysis.summary import summarize
from dualjudge.errors import DualjudgeError
from dualjudge.report.build import analyze


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    return simulate(items_per_sign=7, repeats=2, seed=1)


def _by_judge(result: dict) -> dict:
    return {e["judge"]: e for e in result["judges"]}


def test_planted_self_preference_is_recovered_across_simulations():
    planted = Planted()
    covered, estimates = [], {j: [] for j in planted.judges}
    for seed in range(8):
        frame = simulate(planted, items_per_sign=7, repeats=2, seed=seed)
        result = self_preference(frame, n_resamples=300, seed=seed, outcomes=("overall",))["overall"]
        assert result["estimable"] and result["reason"] is None
        for judge, est in _by_judge(result).items():
            estimates[judge].append(est["estimate"])
            covered.append(est["ci_low"] <= planted.family_bonus[judge] <= est["ci_high"])
        pooled = result["pooled"]["same_family"]
        covered.append(pooled["ci"][0] <= np.mean(list(planted.family_bonus.values())) + 0.02 <= pooled["ci"][1] + 0.05)
    assert np.mean(covered) >= 0.8
    for judge, values in estimates.items():
        assert np.mean(values) == pytest.approx(planted.family_bonus[judge], abs=0.06), judge


def test_no_planted_effect_gives_intervals_around_zero():
    planted = Planted(family_bonus={"qwen-j": 0.0, "google-j": 0.0, "meta-j": 0.0, "mistral-j": 0.0})
    result = self_preference(simulate(planted, items_per_sign=7, repeats=2, seed=3), n_resamples=300, outcomes=("overall",))[
        "overall"
    ]
    entries = result["judges"]
    assert sum(e["ci_low"] <= 0 <= e["ci_high"] for e in entries) >= 3
    assert all(e["p_adjusted"] >= e["p"] for e in entries)
    assert result["pooled"]["same_family"]["ci"][0] <= 0.05


def test_self_and_family_are_separated_when_a_family_has_two_models():
    planted = Planted(self_bonus=0.5)
    result = self_preference(simulate(planted, items_per_sign=7, repeats=2, seed=5), n_resamples=200, outcomes=("overall",))[
        "overall"
    ]
    pooled = result["pooled"]
    assert "self" in pooled and pooled["self"]["ci"][0] <= 0.5 <= pooled["self"]["ci"][1] + 0.1
    assert pooled["self"]["estimate"] > 0.25
    qwen = _by_judge(result)["qwen-j"]  # family qwen has two generators: qwen-j itself and qwen-small
    assert qwen["self"]["ci_low"] <= 0.30 + 0.5 <= qwen["self"]["ci_high"]
    assert qwen["family_other"]["ci_low"] <= 0.30 <= qwen["family_other"]["ci_high"]
    assert qwen["self"]["estimate"] > qwen["family_other"]["estimate"]
    assert _by_judge(result)["meta-j"]["self"] is None  # one generator model in the family: pooled


def test_two_families_per_judge_index_not_estimable_but_pooled_is(sim):
    two = sim[sim["judge_family"].isin(["qwen", "google"]) & sim["system_family"].isin(["qwen", "google"])]
    result = self_preference(two, n_resamples=200)["overall"]
    assert all(e["estimate"] is None and "no chain of neutral judgements" in e["reason"] for e in result["judges"])
    assert {e["judge"] for e in result["judges"]} == {"qwen-j", "google-j"}  # listed, not dropped
    assert not result["estimable"] and "no chain of neutral judgements" in result["reason"]
    assert result["pooled"] is not None


def test_one_judge_is_not_estimable_and_says_why(sim):
    one = sim[sim["judge_model"] == "qwen-j"]
    result = self_preference(one, n_resamples=100)
    for outcome in ("overall", "equivalent"):
        assert result[outcome]["estimable"] is False
        assert "from two judges" in result[outcome]["reason"]


def test_base_llm_lineage_option(sim):
    frame = sim.copy()
    frame.loc[frame["system_model"] == "mistral-j", "system_base_llm"] = "qwen"
    by_vendor = _by_judge(self_preference(frame, "family", n_resamples=100, outcomes=("overall",))["overall"])
    by_backbone = _by_judge(self_preference(frame, "base_llm", n_resamples=100, outcomes=("overall",))["overall"])
    assert by_vendor["qwen-j"]["estimate"] != by_backbone["qwen-j"]["estimate"]
    assert by_backbone["mistral-j"]["estimate"] is None  # no mistral-backbone generator is left
    with pytest.raises(DualjudgeError, match="base_llm"):
        self_preference(sim.drop(columns=["judge_base_llm"]), "base_llm")


def _constructed() -> pd.DataFrame:
    """Known Type I / II counts by visibility."""
    rows = []
    spec = {  # visibility: list of (overall, equivalent)
        1.0: [(9, True), (8, False), (8, False), (3, True), (6, True)],
        0.5: [(9, True), (7.5, False), (2, True), (2, True), (4, False), (9, True)],
        0.1: [(1, False), (8.5, False)],
    }
    for v, cases in spec.items():
        for i, (overall, eq) in enumerate(cases):
            rows.append(
                {
                    "run_id": "c",
                    "item_id": f"{v}-{i}",
                    "sign_code": f"S{i % 3}",
                    "category": "stop",
                    "visibility": v,
                    "mode": "none" if v == 1.0 else "bottom_up",
                    "repeat": 0,
                    "system": "sa",
                    "system_model": "m",
                    "system_family": "f",
                    "predicted_category": "stop",
                    "format_ok": True,
                    "judge_model": "j",
                    "judge_family": "f",
                    "accuracy": overall,
                    "completeness": overall,
                    "relevance": overall,
                    "overall": overall,
                    "equivalent": eq,
                    "quality_status": "ok",
                    "equivalence_status": "ok",
                }
            )
    rows.append(
        {
            **rows[0],
            "item_id": "failed",
            "quality_status": "parse_failure",
            "overall": None,
            "accuracy": None,
            "completeness": None,
            "relevance": None,
        }
    )
    return pd.DataFrame(rows)


def _only(d: dict, *keys: str) -> dict:
    return {k: d[k] for k in keys}


def test_type_errors_by_visibility_match_hand_counts():
    res = type_errors(validate(_constructed()))
    assert res["n"] == 13  # the parse failure is excluded
    assert _only(res["type1"], "count", "rate") == {"count": 3, "rate": 3 / 13}  # (3, T), (2, T), (2, T)
    assert _only(res["type2"], "count", "rate") == {"count": 4, "rate": 4 / 13}  # (8, F) x2, (7.5, F), (8.5, F)
    assert res["agreement_share"] == pytest.approx(6 / 13)  # in neither disagreement quadrant
    v = res["type2_by_visibility"]
    assert list(v) == ["1.0", "0.5", "0.1"]
    keys = ("n", "n_high", "count", "marginal_rate", "conditional_rate")
    assert _only(v["1.0"], *keys) == {"n": 5, "n_high": 3, "count": 2, "marginal_rate": 2 / 5, "conditional_rate": 2 / 3}
    assert _only(v["0.5"], *keys) == {"n": 6, "n_high": 3, "count": 1, "marginal_rate": 1 / 6, "conditional_rate": 1 / 3}
    assert _only(v["0.1"], *keys) == {"n": 2, "n_high": 1, "count": 1, "marginal_rate": 1 / 2, "conditional_rate": 1.0}
    for entry in (res["type1"], res["type2"], v["1.0"]):  # sign-cluster bootstrap intervals around the rates
        ci, rate = entry.get("ci") or entry["marginal_ci"], entry.get("rate", entry.get("marginal_rate"))
        assert ci[0] <= rate <= ci[1]


def test_paired_tests_match_scipy_on_cell_means(sim):
    frame = validate(sim[sim["judge_model"] == "meta-j"])
    res = paired_tests(frame)
    cells = frame.groupby(["sign_code", "visibility", "mode", "system_model", "system"])["overall"].mean().unstack()
    pair = cells[["cot", "sa"]].dropna()
    expected = stats.ttest_rel(pair["cot"], pair["sa"])
    assert res["cot"]["n_cells"] == len(pair)
    assert res["cot"]["t"] == pytest.approx(expected.statistic) and res["cot"]["p"] == pytest.approx(expected.pvalue)
    assert res["cot"]["sign_clustered"]["n_signs"] == frame["sign_code"].nunique()


def test_summary_json_contract(tmp_path, sim):
    path = tmp_path / "t.csv"
    sim.to_csv(path, index=False)
    summary = analyze(path, tmp_path / "out", n_resamples=200)
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["n_rows"] == len(sim) == summary.n_rows
    for s in written["strategies"].values():
        assert set(s) >= {"mean_overall", "equivalence_rate", "format_compliance", "n"}
    board = written["systems"]["overall"]["system_model"]
    assert set(board) >= {"rows", "naive", "self_excluded", "changes", "sensitivity", "warnings"}
    for s in written["paired_tests"].values():
        assert set(s) >= {"delta_overall", "t", "p", "n_cells"}
    for j in written["judges"].values():
        assert set(j) >= {"point_biserial_r", "point_biserial_ci", "type1", "type2", "type2_by_visibility"}
        assert set(j["type1"]) == {"count", "rate", "ci"}
        for key, v in j["type2_by_visibility"].items():
            assert len(key.split(".")[1]) == 1
            assert set(v) >= {"n_high", "count", "marginal_rate", "conditional_rate"}
    for outcome in ("overall", "equivalent"):
        sp = written["self_preference"][outcome]
        assert set(sp) >= {"estimable", "reason", "judges", "pooled", "interaction", "missing", "warnings"}
        assert set(sp["judges"][0]) >= {
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
            "sensitivity",
        }
        assert set(sp["pooled"]["same_family"]) >= {"estimate", "se", "ci"}
    assert written["agreement"]["alpha_overall"]["level"] == "interval"
    assert written["agreement"]["alpha_equivalent"]["level"] == "nominal"
    html = (tmp_path / "out" / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html
    assert (tmp_path / "out" / "figures" / "degradation.png").is_file()
    assert "Cross-family self-preference" in (tmp_path / "out" / "report.md").read_text()


def test_agreement_between_identical_judges_is_perfect(sim):
    a = sim[sim["judge_model"] == "qwen-j"]
    b = a.assign(judge_model="copy-j", judge_family="copy")
    res = summarize(validate(pd.concat([a, b])), n_resamples=50).agreement.model_dump()
    assert res["alpha_overall"]["alpha"] == pytest.approx(1.0)
    assert res["alpha_equivalent"]["alpha"] == pytest.approx(1.0)
    assert res["pairwise"]["copy-j vs qwen-j"]["kappa_equivalent"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda f: f.drop(columns=["item_id", "judge_model"]), "missing columns item_id, judge_model"),
        (lambda f: f.drop(columns=["overall", "equivalent"]), "needs an overall column"),
        (lambda f: f.assign(overall="high"), "column overall must be numeric, found 'high'"),
        (lambda f: f.assign(equivalent="maybe"), "column equivalent must be boolean"),
        (lambda f: f.assign(overall=11.0), "scores must lie between 0 and 10"),
        (lambda f: f.assign(quality_status="fine"), "unknown states"),
        (lambda f: f.assign(visibility=1.5), "visibility must lie"),
    ],
)
def test_malformed_tables_are_one_line_errors(tmp_path, mutate, needle):
    path = tmp_path / "bad.csv"
    mutate(_constructed()).to_csv(path, index=False)
    with pytest.raises(DualjudgeError, match=needle) as info:
        read_table(path)
    assert "\n" not in str(info.value)


def test_analyze_cli(cli, tmp_path, sim):
    path = tmp_path / "t.parquet"
    sim.to_parquet(path)
    code, out, _ = cli("analyze", str(path), "--out", str(tmp_path / "o"), "--resamples", "100")
    assert code == 0 and "self-preference (overall) estimated for 4 of 4 judges" in out
    code, _, err = cli("analyze", str(tmp_path / "missing.csv"))
    assert code == 2 and "not found" in err
    code, _, err = cli("analyze", str(path), "--lineage", "vendor")
    assert code == 2 and "'--lineage'" in err and "'vendor' is not one of 'family', 'base_llm'" in err
