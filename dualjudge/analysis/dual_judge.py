"""The paper's dual-judge analyses, per judge model (Tables 1-3).

- system means: mean overall, equivalence rate, format compliance, n (per strategy, per system model);
- paired t-tests of each strategy against SA on per-cell means (cell = sign x visibility x mode, and
  system model when there are several; repeats collapsed), and the same on per-sign means;
- point-biserial r between overall and equivalent with a sign-level cluster-bootstrap CI;
- Type I (equivalent and overall < 5) and Type II (not equivalent and overall > 7) counts and rates,
  and by visibility: answers with overall > 7, Type II count, marginal and conditional rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.bootstrap import correlation_ci
from dualjudge.analysis.choices import N_RESAMPLES
from dualjudge.analysis.table import vis_key
from dualjudge.protocol.verdicts import GOOD

BASELINE = "sa"
HIGH, LOW = GOOD, 5.0  # Type II: overall > 7 and not equivalent; Type I: overall < 5 and equivalent


def _num(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def quality_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["quality_status"] == "ok"]


def both_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows where both judges returned a verdict."""
    return frame[(frame["quality_status"] == "ok") & (frame["equivalence_status"] == "ok")]


def system_means(frame: pd.DataFrame, by: str = "system") -> dict[str, dict[str, Any]]:
    out = {}
    for key, g in frame.groupby(by, sort=True):
        q = g[g["quality_status"] == "ok"]["overall"]
        e = g[g["equivalence_status"] == "ok"]["equivalent"].astype("float64")
        out[str(key)] = {"mean_overall": _num(q.mean()) if len(q) else None,
                         "equivalence_rate": _num(e.mean()) if len(e) else None,
                         "format_compliance": _num(g["format_ok"].astype("float64").mean()),
                         "n": int(len(g))}
    return out


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
            entry.update(delta_overall=float((pair[system] - pair[BASELINE]).mean()),
                         t=_num(res.statistic), p=_num(res.pvalue))
        signs = pair.groupby(level="sign_code").mean()
        clustered: dict[str, Any] = {"delta_overall": None, "t": None, "p": None, "n_signs": int(len(signs))}
        if len(signs) >= 2:
            res = stats.ttest_rel(signs[system], signs[BASELINE])
            clustered.update(delta_overall=float((signs[system] - signs[BASELINE]).mean()),
                             t=_num(res.statistic), p=_num(res.pvalue))
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


def type_errors(frame: pd.DataFrame) -> dict[str, Any]:
    both = both_rows(frame)
    eq = both["equivalent"].astype(bool)
    n = len(both)
    t1 = int((eq & (both["overall"] < LOW)).sum())
    t2 = int((~eq & (both["overall"] > HIGH)).sum())
    by_vis: dict[str, Any] = {}
    for v, g in both.groupby("visibility", sort=False):
        g_eq = g["equivalent"].astype(bool)
        high = int((g["overall"] > HIGH).sum())
        count = int((~g_eq & (g["overall"] > HIGH)).sum())
        by_vis[vis_key(v)] = {"n": int(len(g)), "n_high": high, "count": count,
                              "marginal_rate": count / len(g) if len(g) else None,
                              "conditional_rate": count / high if high else None}
    by_vis = dict(sorted(by_vis.items(), key=lambda kv: -float(kv[0])))
    return {"n": n, "type1": {"count": t1, "rate": t1 / n if n else None},
            "type2": {"count": t2, "rate": t2 / n if n else None}, "type2_by_visibility": by_vis}


def judge_summary(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    pb = point_biserial(frame, seed, n_resamples)
    errors = type_errors(frame)
    return {
        "n_rows": int(len(frame)),
        "systems": system_means(frame),
        "system_models": system_means(frame, "system_model"),
        "paired_tests": paired_tests(frame),
        "point_biserial_r": pb["r"], "point_biserial_ci": pb["ci"], "point_biserial_n": pb["n"],
        "type1": errors["type1"], "type2": errors["type2"], "type2_by_visibility": errors["type2_by_visibility"],
        "status_counts": {"quality": frame["quality_status"].value_counts().to_dict(),
                          "equivalence": frame["equivalence_status"].value_counts().to_dict()},
    }


def degradation(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean overall and its standard error by visibility, strategy and mode (for the figure)."""
    q = quality_rows(frame)
    g = q.groupby(["system", "mode", "visibility"])["overall"]
    out = g.agg(["mean", "count", "std"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["count"].clip(lower=1))
    return out
