"""Krippendorff's alpha on any scale: the interval level in closed form from per-unit sums, for any number
of distinct values, equal to the krippendorff package wherever the package can run; and a reason in
words when alpha is undefined."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.reliability.agreement import alpha, between_judges
from dualjudge.errors import DualjudgeError


def _ratings(n_units: int, decimals: int | None, seed: int = 0, missing: float = 0.1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, n_units)
    data = np.vstack([quality + rng.normal(0, sd, n_units) for sd in (0.5, 1.0, 2.0)])
    if decimals is not None:
        data = np.round(data, decimals)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize("decimals", [None, 2, 0])
def test_interval_alpha_equals_the_krippendorff_package_on_continuous_data(decimals):
    krippendorff = pytest.importorskip("krippendorff")
    data = _ratings(300, decimals)
    assert alpha(data, "interval") == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-12
    )


def test_binary_nominal_alpha_equals_the_package():
    krippendorff = pytest.importorskip("krippendorff")
    data = _ratings(400, None, seed=2)
    binary = np.where(np.isnan(data), np.nan, (data > 0).astype(float))
    assert alpha(binary, "nominal") == pytest.approx(
        krippendorff.alpha(reliability_data=binary, level_of_measurement="nominal"), abs=1e-12
    )


def test_thousands_of_distinct_scores_between_judges_use_every_unit():
    """Scores rounded to 2 decimals on 2,500 answers: every answer counts (no sampling), alpha is the
    closed form's on the full data."""
    rng = np.random.default_rng(1)
    quality = rng.normal(5, 2, 2500)
    rows = []
    for judge, sd in (("a", 0.5), ("b", 1.0), ("c", 2.0)):
        scores = np.clip(np.round(quality + rng.normal(0, sd, 2500), 2), 0, 10)
        rows += [
            {
                "item_id": f"i{i}",
                "repeat": 0,
                "system": "sa",
                "system_model": "m",
                "judge_model": judge,
                "overall": s,
                "equivalent": s > 5,
                "quality_status": "ok",
                "equivalence_status": "ok",
            }
            for i, s in enumerate(scores)
        ]
    out = between_judges(pd.DataFrame(rows))
    entry = out["alpha_overall"]
    assert entry["units"] == 2500 and "units_sampled" not in entry and entry.get("reason") is None
    wide = pd.DataFrame(rows).pivot(index="judge_model", columns="item_id", values="overall").to_numpy()
    assert entry["alpha"] == pytest.approx(alpha(wide, "interval"), abs=1e-12)
    assert 0.3 < entry["alpha"] < 0.9


def test_undefined_alpha_says_why():
    same = np.full((3, 20), 7.0)
    with pytest.raises(DualjudgeError, match="every pairable rating is the same value"):
        alpha(same, "interval")
    rows = [
        {
            "item_id": f"i{i}",
            "repeat": 0,
            "system": "sa",
            "system_model": "m",
            "judge_model": j,
            "overall": 10.0,
            "equivalent": True,
            "quality_status": "ok",
            "equivalence_status": "ok",
        }
        for i in range(5)
        for j in "ab"
    ]
    entry = between_judges(pd.DataFrame(rows))["alpha_overall"]
    assert entry["alpha"] is None and "same value" in entry["reason"]


def test_stats_alpha_on_a_long_table_of_continuous_labels(cli, tmp_path):
    data = _ratings(20_000, 3, seed=4, missing=0.05)
    long = pd.DataFrame(
        [
            {"item": f"u{u}", "annotator": f"r{r}", "label": data[r, u]}
            for r in range(3)
            for u in range(data.shape[1])
            if not np.isnan(data[r, u])
        ]
    )
    path = tmp_path / "labels.csv"
    long.to_csv(path, index=False)
    code, out, err = cli("stats", "alpha", str(path), "--level", "interval", "--json")
    assert code == 0, err
    assert float(out.split('"alpha":')[1].split(",")[0].split("}")[0]) == pytest.approx(alpha(data, "interval"), abs=1e-9)
    code, _, err = cli("stats", "alpha", str(path), "--level", "ordinal")
    assert code == 2 and "use --level interval for continuous labels" in err and len(err.strip().splitlines()) == 1
