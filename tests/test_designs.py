"""Judge designs compared (analysis/pointwise/designs.py): alpha from per-sign sums, paired differences with
sign-cluster intervals, and the per-variant summary and report, on constructed tables."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.pointwise.designs import alpha_difference, alpha_from_sums, alpha_sums, compare_designs, variant_order
from dualjudge.report.build import analyze
from tests.helpers.designs import table


@pytest.mark.parametrize("value, level", [("overall", "interval"), ("equivalent", "nominal")])
def test_alpha_from_per_sign_sums_is_krippendorffs(value, level):
    frame = table({"holistic": 1.5}, n_signs=5, missing=0.25, seed=3)
    sums = alpha_sums(
        frame.assign(equivalent=frame["equivalent"].astype(float)), value, "quality_status", sorted(frame["sign_code"].unique())
    )
    ours = alpha_from_sums(sums.sum(axis=0, keepdims=True))[0]
    wide = (
        frame.pivot_table(index=["item_id", "system_model"], columns="judge_model", values=value, aggfunc="first")
        .astype(float)
        .to_numpy()
        .T
    )
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=wide, level_of_measurement=level), abs=1e-12)


def test_a_planted_rise_in_agreement_has_an_interval_above_zero():
    frame = table({"rubric:original": 2.0, "rubric:clarified": 0.7})
    a = frame[frame["judge_variant"] == "rubric:clarified"]
    b = frame[frame["judge_variant"] == "rubric:original"]
    out = alpha_difference(a, b, "overall", "quality_status", seed=1, n_resamples=400)
    assert out["a"]["alpha"] > out["b"]["alpha"] + 0.1
    assert out["difference"]["estimate"] == pytest.approx(out["a"]["alpha"] - out["b"]["alpha"])
    assert out["difference"]["ci_low"] > 0 and out["signs"] == 12 and out["answers"] == 12 * 6 * 3


def test_no_planted_difference_gives_an_interval_across_zero():
    frame = table({"holistic": 1.5, "rubric": 1.5}, seed=5)
    a, b = (frame[frame["judge_variant"] == v] for v in ("rubric", "holistic"))
    d = alpha_difference(a, b, "overall", "quality_status", seed=2, n_resamples=400)["difference"]
    assert d["ci_low"] < 0 < d["ci_high"]


def test_differences_are_paired_on_what_both_variants_judged():
    frame = table({"holistic": 1.0, "rubric": 1.0}, n_signs=6)
    rubric = frame["judge_variant"] == "rubric"
    shifted = frame.assign(overall=np.where(rubric, frame["overall"] + 1.0, frame["overall"]))
    dropped = shifted[~(rubric & (shifted["sign_code"] == "600"))]  # the rubric judges skipped one sign
    out = compare_designs(dropped, None, None, seed=0, n_resamples=200)
    per_judge = [d for d in out["differences"] if d["judge"] == "j_a"][0]
    expected = (
        dropped[(dropped["judge_model"] == "j_a") & (dropped["judge_variant"] == "rubric")]["overall"].mean()
        - shifted[(shifted["judge_model"] == "j_a") & ~rubric & (shifted["sign_code"] != "600")]["overall"].mean()
    )
    assert per_judge["overall"]["estimate"] == pytest.approx(expected)
    assert per_judge["overall"]["n"] == 5 * 6 * 3 and per_judge["overall"]["signs"] == 5
    assert out["alpha_differences"]["rubric"]["answers"] == 5 * 6 * 3


def test_order_probe_flips_are_differenced_pair_by_pair():
    rng = np.random.default_rng(0)
    rows = []
    for variant, p in (("holistic", 0.4), ("rubric", 0.1)):
        for s in range(10):
            for k in range(8):
                rows.append(
                    {
                        "variant_id": f"{600 + s}_{k}",
                        "sign_code": f"{600 + s}",
                        "repeat": 0,
                        "judge_model": "j_a",
                        "first_model": "s_a",
                        "first_strategy": "sa",
                        "second_model": "s_b",
                        "second_strategy": "sa",
                        "status": "ok",
                        "flipped": int(rng.random() < p),
                        "judge_variant": variant,
                    }
                )
    order = pd.DataFrame(rows)
    frame = table({"holistic": 1.0, "rubric": 1.0}, n_signs=10)
    out = compare_designs(frame, order, None, seed=0, n_resamples=400)
    d = [x for x in out["differences"] if x["judge"] == "j_a"][0]["order_flip"]
    h, r = (order[order["judge_variant"] == v]["flipped"].mean() for v in ("holistic", "rubric"))
    assert d["estimate"] == pytest.approx(r - h) and d["ci_high"] < 0 and d["n"] == 80


def test_the_reference_variant_is_holistic_when_present():
    assert variant_order(pd.Series(["rubric", "holistic", "rubric:b"])) == ["holistic", "rubric", "rubric:b"]
    assert variant_order(pd.Series(["rubric:b", "rubric"])) == ["rubric", "rubric:b"]


def test_a_table_with_two_variants_gets_each_summary_and_the_comparison(tmp_path):
    frame = table({"holistic": 1.5, "rubric": 0.8}, n_signs=10, items=3)
    path = tmp_path / "verdicts.csv"
    frame.to_csv(path, index=False)
    summary = analyze(path, tmp_path / "out", n_resamples=200, figures=False)
    assert summary.judge_variant == "holistic" and list(summary.variants) == ["rubric"]
    assert summary.n_rows == summary.variants["rubric"].n_rows == len(frame) // 2
    d = summary.designs
    assert d.reference == "holistic" and [(r.judge, r.variant) for r in d.rows][:2] == [("j_a", "holistic"), ("j_a", "rubric")]
    assert d.alpha["rubric"]["overall"].alpha > d.alpha["holistic"]["overall"].alpha
    assert d.alpha_differences["rubric"]["overall"].ci_low > 0
    assert all(r.self_preference is not None for r in d.rows)  # three families: every judge is identified
    sp = [x.self_preference for x in d.differences]
    assert all(x is not None and x.difference is not None for x in sp)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Judge designs compared" in md and "## Judge variant: rubric" in md
    assert "### Per judge model" in md  # the rubric variant's own tables, one level down
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert data["variants"]["rubric"]["judge_variant"] == "rubric"


def test_a_table_with_one_variant_has_no_comparison(tmp_path):
    frame = table({"rubric": 1.0}, n_signs=4, items=2)
    path = tmp_path / "verdicts.csv"
    frame.to_csv(path, index=False)
    summary = analyze(path, tmp_path / "out", n_resamples=100, figures=False)
    assert summary.judge_variant == "rubric" and summary.variants == {} and summary.designs is None
    assert "Judge designs compared" not in (tmp_path / "out" / "report.md").read_text()
