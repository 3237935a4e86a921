"""Agreement between judges: Krippendorff's alpha (level named), Cohen's kappa, correlation.

- between judge models on the same responses: alpha (interval) on overall, alpha (nominal) on
  equivalent, and pairwise Cohen's kappa on equivalent;
- between one model's two judges: point-biserial r (in the dual-judge section), Cohen's kappa between
  "overall > 7" and "equivalent", and their raw agreement.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa

from dualjudge.analysis.pointwise.dual_judge import both_rows
from dualjudge.analysis.shared.choices import Level
from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.analysis.shared.table import ANSWER_IN_RUN
from dualjudge.errors import DualjudgeError
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY

RESPONSE = ANSWER_IN_RUN


MAX_DISTINCT = 1_000  # the krippendorff package builds a values x values matrix per unit (ordinal, nominal)


def interval_sums(units: np.ndarray) -> np.ndarray:
    """Sums [n, S1, S2, W] over the pairable units of a (coders x units) array with NaN for missing:
    n pairable values, their sum and sum of squares, and W = sum over units of the within-unit sum of
    squared differences over ordered pairs divided by (m_u - 1), i.e. 2 (m S2_u - S1_u^2) / (m - 1)."""
    present = ~np.isnan(units)
    m = present.sum(axis=0)
    keep = m >= 2
    v = np.where(present, units, 0.0)[:, keep]
    m = m[keep].astype(np.float64)
    s1, s2 = v.sum(axis=0), (v * v).sum(axis=0)
    w = float((2 * (m * s2 - s1**2) / (m - 1)).sum()) if len(m) else 0.0
    return np.array([m.sum(), s1.sum(), s2.sum(), w])


def alpha_from_sums(s: np.ndarray) -> np.ndarray:
    """Interval alpha (also nominal alpha on 0/1 values, whose metric is the same) from rows of sums
    [n, S1, S2, W]: alpha = 1 - D_o / D_e = 1 - (n - 1) W / (2 (n S2 - S1^2)). NaN where the pairable
    values do not vary (D_e = 0: alpha is undefined)."""
    s = np.atleast_2d(s)
    n, s1, s2, w = (s[:, i] for i in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(1 - (n - 1) * w / (2 * (n * s2 - s1**2)))


def why_no_alpha(units: np.ndarray) -> str | None:
    """Why alpha is undefined for (coders x units) data, in words; None when it is defined."""
    pairable = units[:, np.sum(~np.isnan(units), axis=0) >= 2]
    values = pairable[~np.isnan(pairable)]
    if values.size == 0:
        return "no unit was rated by two judges"
    if np.unique(values).size < 2:
        return f"every pairable rating is the same value ({values[0]:g}): agreement beyond chance is undefined"
    return None


def alpha(reliability: np.ndarray, level: Level, value_domain: list[Any] | None = None) -> float:
    """Krippendorff's alpha for (coders x units) data with np.nan for missing (level always explicit).
    The interval level, and the nominal level on 0/1 values, in closed form from sums (any number of
    distinct values, no value-by-value matrix); other levels through the krippendorff package."""
    reason = why_no_alpha(reliability)
    if reason is not None:
        raise DualjudgeError(f"Krippendorff's alpha cannot be computed: {reason}")
    values = reliability[~np.isnan(reliability)]
    if level == "interval" or (level == "nominal" and set(np.unique(values)) <= {0.0, 1.0}):
        return float(alpha_from_sums(interval_sums(reliability))[0])
    distinct = len(value_domain) if value_domain is not None else int(np.unique(values).size)
    if distinct > MAX_DISTINCT:
        raise DualjudgeError(
            f"{level} alpha on {distinct} distinct labels needs a {distinct} x {distinct} matrix per "
            f"unit; use --level interval for continuous labels, or round them"
        )
    try:
        return float(krippendorff.alpha(reliability_data=reliability, level_of_measurement=level, value_domain=value_domain))
    except ValueError as e:
        raise DualjudgeError(f"Krippendorff's alpha cannot be computed: {e}") from None


def kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Cohen's kappa for two binary raters (statsmodels), None when undefined."""
    table = np.zeros((2, 2))
    for x, y in zip(a.astype(int), b.astype(int)):
        table[x, y] += 1
    if table.sum() == 0:
        return None
    expected = table.sum(1) @ table.sum(0) / table.sum() ** 2
    if np.isclose(expected, 1.0):
        return None  # both raters constant and identical: chance agreement is total
    return float(cohens_kappa(table, return_results=False))


def _wide(frame: pd.DataFrame, value: str, status: str) -> pd.DataFrame:
    ok = frame[frame[status] == "ok"]
    data = ok.assign(_v=ok[value].astype("float64"))
    return data.pivot_table(index=RESPONSE, columns="judge_model", values="_v", aggfunc="first")


def between_judges(frame: pd.DataFrame) -> dict[str, Any]:
    judges = sorted(frame["judge_model"].astype(str).unique())
    out: dict[str, Any] = {"judges": judges}
    if len(judges) < 2:
        out["reason"] = "needs at least two judge models"
        return out
    overall = _wide(frame, "overall", QUALITY.status)
    equivalent = _wide(frame, "equivalent", EQUIVALENCE.status)
    levels: tuple[tuple[str, pd.DataFrame, Level], ...] = (("overall", overall, "interval"), ("equivalent", equivalent, "nominal"))
    for name, wide, level in levels:
        data = wide.reindex(columns=judges).to_numpy().T
        data = data[:, np.sum(~np.isnan(data), axis=0) >= 2]  # only units two judges rated are pairable
        entry: dict[str, Any] = {"level": level, "units": int(data.shape[1])}
        try:
            entry["alpha"] = alpha(data, level) if data.shape[1] else None
        except DualjudgeError as e:
            entry["alpha"] = None
            entry["reason"] = str(e).split(": ", 1)[-1]
        if data.shape[1] == 0:
            entry["reason"] = "no answer was rated by two judges"
        out[f"alpha_{name}"] = entry
    pairs = {}
    for a, b in combinations(judges, 2):
        both = equivalent[[a, b]].dropna() if {a, b} <= set(equivalent.columns) else pd.DataFrame()
        pairs[f"{a} vs {b}"] = {
            "kappa_equivalent": kappa(both[a].to_numpy(), both[b].to_numpy()) if len(both) else None,
            "raw_agreement": float((both[a] == both[b]).mean()) if len(both) else None,
            "n": int(len(both)),
        }
    out["pairwise"] = pairs
    return out


def within_judge(frame: pd.DataFrame, scale: Scale = PAPER_SCALE) -> dict[str, Any]:
    """One judge model's two judges: kappa and raw agreement of "good" (overall > 7) with equivalent."""
    both = both_rows(frame)
    if both.empty:
        return {"kappa": None, "raw_agreement": None, "n": 0}
    high = scale.good(both["overall"]).to_numpy()
    eq = both["equivalent"].astype(bool).to_numpy()
    return {"kappa": kappa(high, eq), "raw_agreement": float((high == eq).mean()), "n": int(len(both))}


def check_label_table(long: pd.DataFrame) -> None:
    """A long label table: columns item, annotator, label; one label per item and annotator."""
    for col in ("item", "annotator", "label"):
        if col not in long.columns:
            raise DualjudgeError(f"the label table needs columns item, annotator, label (missing {col})")
    for col in ("item", "annotator"):
        blank = long[col].isna() | (long[col].astype(str).str.strip() == "")
        if blank.any():
            raise DualjudgeError(
                f"the label table's {col} is blank in row {int(blank.to_numpy().argmax()) + 1}; every label needs its {col}"
            )
    if long.duplicated(["item", "annotator"]).any():
        dup = long[long.duplicated(["item", "annotator"])].iloc[0]
        raise DualjudgeError(f"duplicate label for item {dup['item']!r} by annotator {dup['annotator']!r}")


def alpha_from_long(long: pd.DataFrame, level: Level) -> float:
    """alpha from a long table (item, annotator, label): one row per label, missing allowed."""
    check_label_table(long)
    long = long.dropna(subset=["label"])
    if level == "nominal":
        labels = long["label"].astype(str)
        codes = {v: i for i, v in enumerate(sorted(labels.unique()))}
        coded = long.assign(label=labels.map(codes).astype(float))
        wide = coded.pivot(index="annotator", columns="item", values="label")
        return alpha(wide.to_numpy(dtype=float), level)
    wide = long.pivot(index="annotator", columns="item", values="label")
    try:
        data = wide.apply(pd.to_numeric, errors="raise").to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise DualjudgeError(f"level {level} needs numeric labels") from None
    if np.isinf(data).any():
        raise DualjudgeError(f"level {level} needs finite numeric labels (found an infinite one)")
    domain = sorted(np.unique(data[~np.isnan(data)]).tolist()) if level == "ordinal" else None
    return alpha(data, level, domain)
