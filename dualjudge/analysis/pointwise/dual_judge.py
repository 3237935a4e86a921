"""The paper's dual-judge analyses, per judge model (Tables 1-3, Section 4).

- system means: mean overall, equivalence rate, format compliance, n (per strategy, per system model);
- paired t-tests of each strategy against SA on per-cell means (cell = sign x visibility x mode, and
  system model when there are several; repeats collapsed), and the same on per-sign means;
- point-biserial r between overall and equivalent with a sign-level cluster-bootstrap CI, and the mean
  overall (with its SD) of answers judged equivalent and not equivalent;
- Type I (equivalent and "poor", < 5) and Type II (not equivalent and "good", > 7) counts and rates with
  sign-cluster bootstrap CIs, the share of rows in neither quadrant, and by visibility: answers judged
  good, Type II count, marginal rate (of all answers) and conditional rate (of good answers), with CIs.
The cuts are the scale's (scale.py): the paper's by default, other cuts for tables made elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.shared.bootstrap import correlation_ci, mean_ci, ratio_ci
from dualjudge.analysis.shared.choices import N_RESAMPLES
from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.analysis.shared.table import vis_key
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY

BASELINE = "sa"


def _num(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def quality_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame[QUALITY.status] == "ok"]


def both_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows where both judges returned a verdict."""
    return frame[(frame[QUALITY.status] == "ok") & (frame[EQUIVALENCE.status] == "ok")]


def system_means(frame: pd.DataFrame, by: str = "system") -> dict[str, dict[str, Any]]:
    """Per group: the mean overall and equivalence rate of its verdicts, its format compliance and rows."""
    keys = frame[by]
    quality = frame["overall"].astype("float64").where(frame[QUALITY.status] == "ok")
    equivalent = frame["equivalent"].astype("float64").where(frame[EQUIVALENCE.status] == "ok")
    grouped = pd.DataFrame({"q": quality, "e": equivalent, "f": frame["format_ok"].astype("float64")}).groupby(keys, sort=True)
    means, sizes = grouped.mean(), grouped.size()  # a mean skips the rows without that verdict
    return {
        str(key): {
            "mean_overall": _num(means.at[key, "q"]),
            "equivalence_rate": _num(means.at[key, "e"]),
            "format_compliance": _num(means.at[key, "f"]),
            "n": int(sizes[key]),
        }
        for key in means.index
    }


def cell_means(frame: pd.DataFrame, value: str = "overall") -> pd.DataFrame:
    """Mean per cell (sign x visibility x mode [x system model]) and strategy, repeats collapsed."""
    q = quality_rows(frame)
    cell = ["sign_code", "visibility", "mode"] + (["system_model"] if q["system_model"].nunique() > 1 else [])
    return q.groupby([*cell, "system"], sort=True)[value].mean().unstack("system")


def paired_tests(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Each strategy vs SA: on per-cell means, and with sign-level clustering (per-sign means)."""
    cells = cell_means(frame)
    out: dict[str, dict[str, Any]] = {}
    if BASELINE not in cells.columns:
        return out
    for system in cells.columns:
        if system == BASELINE:
            continue
        pair = cells[[system, BASELINE]].dropna()
        entry: dict[str, Any] = {"delta_overall": None, "t": None, "p": None, "n_cells": int(len(pair))}
        if len(pair) >= 2:
            res = stats.ttest_rel(pair[system], pair[BASELINE])
            entry.update(delta_overall=float((pair[system] - pair[BASELINE]).mean()), t=_num(res.statistic), p=_num(res.pvalue))
        signs = pair.groupby(level="sign_code").mean()
        clustered: dict[str, Any] = {"delta_overall": None, "t": None, "p": None, "n_signs": int(len(signs))}
        if len(signs) >= 2:
            res = stats.ttest_rel(signs[system], signs[BASELINE])
            clustered.update(
                delta_overall=float((signs[system] - signs[BASELINE]).mean()), t=_num(res.statistic), p=_num(res.pvalue)
            )
        entry["sign_clustered"] = clustered
        out[str(system)] = entry
    return out


def point_biserial(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    both = both_rows(frame)
    if len(both) < 3 or both["equivalent"].nunique() < 2 or both["overall"].nunique() < 2:
        return {"r": None, "ci": None, "n": int(len(both)), "reason": "needs both verdict values and varying scores"}
    x = both["equivalent"].astype("float64")
    r, ci = correlation_ci(both, x, both["overall"], seed, n_resamples)
    return {"r": r, "ci": list(ci) if ci else None, "n": int(len(both))}


def overall_given_equivalence(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Mean overall, its SD and n among answers the equivalence judge accepted ("1") and rejected ("0")."""
    both = both_rows(frame)
    out = {}
    for label, value in (("1", True), ("0", False)):
        g = both[both["equivalent"].astype(bool) == value]["overall"]
        out[label] = {
            "mean": _num(g.mean()) if len(g) else None,
            "sd": _num(g.std(ddof=1)) if len(g) > 1 else None,
            "n": int(len(g)),
        }
    return out


def _rate(frame: pd.DataFrame, hits: pd.Series, seed: int, n_resamples: int) -> dict[str, Any]:
    n = len(frame)
    count = int(hits.sum())
    ci = mean_ci(frame, hits.astype("float64"), seed, n_resamples)[1] if n and frame["sign_code"].nunique() > 1 else None
    return {"count": count, "rate": count / n if n else None, "ci": list(ci) if ci else None}


def type_errors(frame: pd.DataFrame, scale: Scale = PAPER_SCALE, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    both = both_rows(frame)
    eq = both["equivalent"].astype(bool)
    good, poor = scale.good(both["overall"]), scale.poor(both["overall"])
    type1, type2 = eq & poor, ~eq & good
    by_vis: dict[str, Any] = {}
    for v, g in both.groupby("visibility", sort=False):
        g_good = scale.good(g["overall"])
        g_t2 = ~g["equivalent"].astype(bool) & g_good
        marginal = _rate(g, g_t2, seed, n_resamples)
        conditional, cond_ci = (
            ratio_ci(g, g_t2.astype("float64"), g_good.astype("float64"), seed, n_resamples)
            if g["sign_code"].nunique() > 1
            else (int(g_t2.sum()) / int(g_good.sum()) if g_good.any() else None, None)
        )
        by_vis[vis_key(v)] = {
            "n": int(len(g)),
            "n_high": int(g_good.sum()),
            "count": marginal["count"],
            "marginal_rate": marginal["rate"],
            "marginal_ci": marginal["ci"],
            "conditional_rate": conditional,
            "conditional_ci": list(cond_ci) if cond_ci else None,
        }
    by_vis = dict(sorted(by_vis.items(), key=lambda kv: -float(kv[0])))
    n = len(both)
    return {
        "n": n,
        "type1": _rate(both, type1, seed, n_resamples),
        "type2": _rate(both, type2, seed, n_resamples),
        "agreement_share": float(1 - (type1 | type2).mean()) if n else None,
        "type2_by_visibility": by_vis,
    }


def judge_summary(frame: pd.DataFrame, scale: Scale = PAPER_SCALE, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    pb = point_biserial(frame, seed, n_resamples)
    errors = type_errors(frame, scale, seed, n_resamples)
    return {
        "n_rows": int(len(frame)),
        "strategies": system_means(frame),
        "system_models": system_means(frame, "system_model"),
        "paired_tests": paired_tests(frame),
        "point_biserial_r": pb["r"],
        "point_biserial_ci": pb["ci"],
        "point_biserial_n": pb["n"],
        "overall_given_equivalent": overall_given_equivalence(frame),
        "type1": errors["type1"],
        "type2": errors["type2"],
        "agreement_share": errors["agreement_share"],
        "type2_by_visibility": errors["type2_by_visibility"],
        "status_counts": {
            "quality": frame[QUALITY.status].value_counts().to_dict(),
            "equivalence": frame[EQUIVALENCE.status].value_counts().to_dict(),
        },
    }


def degradation(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Mean overall and its standard error by visibility, strategy and mode (for the figure)."""
    q = quality_rows(frame)
    g = q.groupby(["system", "mode", "visibility"])["overall"]
    out = g.agg(["mean", "count", "std"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["count"].clip(lower=1))
    return [
        {
            "system": str(r.system),
            "mode": str(r.mode),
            "visibility": float(r.visibility),
            "mean": float(r.mean),
            "n": int(r.count),
            "se": None if pd.isna(r.se) else float(r.se),
        }
        for r in out.itertuples(index=False)
    ]


JOINT_BINS = [b / 2 for b in range(21)]  # 0 to 10 by halves


def joint_counts(frame: pd.DataFrame) -> dict[str, list[Any]]:
    """Answers per overall bin where both judges returned a verdict, split by the equivalence verdict."""
    both = both_rows(frame)
    equivalent = both["equivalent"].astype(bool)

    def count(scores: pd.Series) -> list[int]:
        return [int(n) for n in np.histogram(scores.astype(float), bins=JOINT_BINS)[0]]

    return {
        "bins": JOINT_BINS,
        "equivalent": count(both.loc[equivalent, "overall"]),
        "not_equivalent": count(both.loc[~equivalent, "overall"]),
    }
