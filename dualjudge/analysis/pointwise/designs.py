"""Judge designs compared: the same judges on the same answers, asked as different variants (holistic,
rubric, rubric:NAME), with every difference paired on what both variants judged.

Per judge and variant: order-probe flip rate, padding flip rate (per kind), the calibrated
self-preference index (overall), agreement with human labels when imported; per variant: agreement
between judges (Krippendorff's alpha, overall and equivalent). Each variant beside the reference one
(holistic when present) gets differences with sign-cluster bootstrap intervals, paired: one draw of
signs is applied to both variants, and only answers (probe pairs, padded answers) both judged count.

Krippendorff's alpha is computed from per-sign sums, so each resample costs a matrix product: for the
interval metric (and the nominal metric on 0/1 values, where it is the same) alpha = 1 - (n - 1) W /
(2 (n S2 - S1^2)), with n, S1, S2 the count, sum and sum of squares of the pairable values and W the sum
over units of 2 (m s2 - s1^2) / (m - 1) (the unit's within-unit disagreement). Consistency is not
accuracy: a lower flip rate says the judge is more stable, not that it is right; the human columns say
that, when there are labels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dualjudge.analysis.pointwise.grid import build_grid, identification
from dualjudge.analysis.pointwise.self_preference import calibrated_index
from dualjudge.analysis.reliability.agreement import alpha_from_sums
from dualjudge.analysis.shared.bootstrap import Interval, per_sign_sums, resample_counts, t_interval
from dualjudge.analysis.shared.choices import N_RESAMPLES, Lineage
from dualjudge.analysis.shared.table import ANSWER_KEY, STORE_ANSWER
from dualjudge.analysis.shared.words import words
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY
from dualjudge.storage.rows import OrderProbeRow

RESPONSE = ANSWER_KEY
ORDER_PAIR = [c for c in OrderProbeRow.KEY if c != "judge_variant"]  # the same pair in two variants
PADDED = [*STORE_ANSWER, "judge_model", "kind"]
HOLISTIC = "holistic"


def paired_words() -> str:
    w = words()
    return (
        f"{w.unit}-cluster bootstrap, one draw of {w.units} for both variants, on what both judged; "
        "95% t interval on G-1 degrees of freedom"
    )


def variant_order(values: pd.Series) -> list[str]:
    """The variants of a table, the reference first (holistic when present, else the first by name)."""
    names = sorted({str(v) for v in values.dropna().unique()})
    return sorted(names, key=lambda v: (v != HOLISTIC, v))


# -- Krippendorff's alpha from per-sign sums --------------------------------------------------------------
def alpha_sums(frame: pd.DataFrame, value: str, status: str, signs: list[str]) -> np.ndarray:
    """(n_signs, 4) sums [n, S1, S2, W] of the pairable values (units rated by two judges or more)."""
    ok = frame[frame[status] == "ok"]
    data = ok.assign(_v=ok[value].astype("float64")).dropna(subset=["_v"])
    unit = data.groupby([*RESPONSE, "sign_code"], sort=False)["_v"].agg(["count", "sum", lambda v: float((v * v).sum())])
    unit.columns = ["m", "s1", "s2"]
    unit = unit[unit["m"] >= 2].reset_index()
    unit["w"] = 2 * (unit["m"] * unit["s2"] - unit["s1"] ** 2) / (unit["m"] - 1)
    sums = unit.groupby("sign_code")[["m", "s1", "s2", "w"]].sum().reindex(signs).fillna(0.0)
    return np.asarray(sums.to_numpy(dtype=np.float64))


def _interval(point: float, draws: np.ndarray, n_signs: int) -> dict[str, float] | None:
    iv: Interval | None = t_interval(point, draws, n_signs) if np.isfinite(point) else None
    return iv.as_dict() if iv else None


def alpha_with_ci(frame: pd.DataFrame, value: str, status: str, signs: list[str], counts: np.ndarray) -> tuple[float, np.ndarray]:
    """alpha and its draws under the given sign counts (one row per resample)."""
    sums = alpha_sums(frame, value, status, signs)
    return float(alpha_from_sums(sums.sum(axis=0, keepdims=True))[0]), alpha_from_sums(counts @ sums)


def alpha_difference(
    a: pd.DataFrame, b: pd.DataFrame, value: str, status: str, seed: int = 0, n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """alpha(a) - alpha(b) between judges on the same answers, with a paired sign-cluster interval, and
    each alpha with its own interval. Only answers present in both count."""
    common = a[RESPONSE].drop_duplicates().merge(b[RESPONSE].drop_duplicates())
    a, b = a.merge(common), b.merge(common)
    signs = sorted(set(a["sign_code"].astype(str)))
    a, b = a.assign(sign_code=a["sign_code"].astype(str)), b.assign(sign_code=b["sign_code"].astype(str))
    counts = resample_counts(len(signs), n_resamples, seed)
    pa, da = alpha_with_ci(a, value, status, signs, counts)
    pb, db = alpha_with_ci(b, value, status, signs, counts)
    g = len(signs)
    return {
        "a": {"alpha": pa if np.isfinite(pa) else None, "interval": _interval(pa, da, g)},
        "b": {"alpha": pb if np.isfinite(pb) else None, "interval": _interval(pb, db, g)},
        "difference": _interval(pa - pb, da - db, g),
        "answers": int(len(common)),
        "signs": g,
    }


# -- paired differences of means ----------------------------------------------------------------------------
def paired_mean(frame: pd.DataFrame, column: str, seed: int, n_resamples: int) -> dict[str, Any] | None:
    """Mean of a paired per-row difference (`column`) with a sign-cluster t interval; None when empty."""
    data = frame.dropna(subset=[column])
    if data.empty:
        return None
    data = data.assign(sign_code=data["sign_code"].astype(str))
    signs = sorted(set(data["sign_code"]))
    per_sign = per_sign_sums(data, {"n": pd.Series(1.0, index=data.index), "s": data[column]}, signs)
    counts = resample_counts(len(signs), n_resamples, seed)
    point = float(per_sign[:, 1].sum() / per_sign[:, 0].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = (counts @ per_sign[:, 1]) / (counts @ per_sign[:, 0])
    out = _interval(point, draws, len(signs)) or {"estimate": point}
    return {**out, "n": int(len(data)), "signs": len(signs)}


def _paired(
    ref: pd.DataFrame, other: pd.DataFrame, key: list[str], column: str, seed: int, n_resamples: int
) -> dict[str, Any] | None:
    both = ref[[*key, "sign_code", column]].merge(other[[*key, column]], on=key, suffixes=("_ref", "_other"))
    both = both.assign(_d=both[f"{column}_other"].astype("float64") - both[f"{column}_ref"].astype("float64"))
    return paired_mean(both, "_d", seed, n_resamples)


# -- self-preference under each variant -----------------------------------------------------------------------
def _self_preference_draws(
    frame: pd.DataFrame, lineage: Lineage, seed: int, n_resamples: int
) -> tuple[list[str], list[str], dict[str, str], np.ndarray] | None:
    grid = build_grid(frame, "overall", lineage)
    if grid.design.n_answers == 0 or grid.design.n_clusters < 2:
        return None
    reasons = identification(grid)
    entries, draws, _ = calibrated_index(grid, reasons, n_resamples, seed)
    reasons = {j: e["reason"] for j, e in entries.items() if not e["identified"]}
    return grid.signs, grid.judges, reasons, draws.estimate


def self_preference_difference(
    ref: pd.DataFrame, other: pd.DataFrame, lineage: Lineage, seed: int, n_resamples: int
) -> dict[str, dict[str, Any]]:
    """Per judge: the calibrated self-preference index (overall) of `other` minus `ref`, on the answers
    both judged, paired through the same sign draws (both refits see the same resampled signs)."""
    common = ref[RESPONSE].drop_duplicates().merge(other[RESPONSE].drop_duplicates())
    a = _self_preference_draws(other.merge(common), lineage, seed, n_resamples)
    b = _self_preference_draws(ref.merge(common), lineage, seed, n_resamples)
    if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for j, judge in enumerate(a[1]):
        if judge in a[2] or judge in b[2]:
            out[judge] = {"reason": a[2].get(judge) or b[2].get(judge)}
            continue
        d = a[3][:, j] - b[3][:, j]
        out[judge] = {"ref": float(b[3][0, j]), "other": float(a[3][0, j]), "difference": _interval(float(d[0]), d[1:], len(a[0]))}
    return out


# -- the comparison --------------------------------------------------------------------------------------------
def compare_designs(
    frame: pd.DataFrame,
    order: pd.DataFrame | None,
    padding: pd.DataFrame | None,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, Any]:
    """Each judge variant of a verdict table beside the reference one: alpha between judges per variant,
    and per judge the paired differences (mean overall, equivalent rate, order and padding flip rates,
    calibrated self-preference index), each with its sign-cluster interval."""
    variants = variant_order(frame["judge_variant"])
    reference = variants[0]
    judges = sorted(frame["judge_model"].astype(str).unique())
    order = _ok(order)
    padding = _ok(padding)
    by_variant = {v: frame[frame["judge_variant"] == v] for v in variants}
    alphas: dict[str, Any] = {}
    alpha_differences: dict[str, Any] = {}
    differences = []
    for v in variants:
        entry = {
            value: alpha_difference(by_variant[v], by_variant[reference], value, status, seed, n_resamples)
            for value, status in (("overall", QUALITY.status), ("equivalent", EQUIVALENCE.status))
        }
        alphas[v] = {value: e["a"] for value, e in entry.items()}
        if v == reference:
            continue
        alpha_differences[v] = {**{value: e["difference"] for value, e in entry.items()}, "answers": entry["overall"]["answers"]}
        sp = self_preference_difference(by_variant[reference], by_variant[v], lineage, seed, n_resamples)
        for judge in judges:
            ref_j, other_j = (by_variant[x][by_variant[x]["judge_model"] == judge] for x in (reference, v))
            diff: dict[str, Any] = {"judge": judge, "variant": v}
            for value, status in (("overall", QUALITY.status), ("equivalent", EQUIVALENCE.status)):
                diff[value] = _paired(
                    ref_j[ref_j[status] == "ok"], other_j[other_j[status] == "ok"], RESPONSE, value, seed, n_resamples
                )
            if order is not None:
                diff["order_flip"] = _paired(
                    _pick(order, judge, reference), _pick(order, judge, v), ORDER_PAIR, "flipped", seed, n_resamples
                )
            if padding is not None:
                diff["padding_flip"] = _paired(
                    _pick(padding, judge, reference), _pick(padding, judge, v), PADDED, "flipped", seed, n_resamples
                )
            diff["self_preference"] = sp.get(judge)
            differences.append(diff)
    return {
        "reference": reference,
        "variants": variants,
        "paired": paired_words(),
        "alpha": alphas,
        "alpha_differences": alpha_differences,
        "differences": differences,
    }


def _ok(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    if frame is None or frame.empty:
        return None
    if "judge_variant" not in frame.columns:
        frame = frame.assign(judge_variant=HOLISTIC)
    ok = frame[frame["status"] == "ok"]
    return ok.assign(sign_code=ok["sign_code"].astype(str))


def _pick(frame: pd.DataFrame, judge: str, variant: str) -> pd.DataFrame:
    return frame[(frame["judge_model"] == judge) & (frame["judge_variant"] == variant)]
