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

from dualjudge.analysis.choices import Level
from dualjudge.analysis.dual_judge import both_rows
from dualjudge.analysis.scale import PAPER_SCALE, Scale
from dualjudge.errors import DualjudgeError

RESPONSE = ["item_id", "repeat", "system", "system_model"]


MAX_CELLS = 50_000_000  # the package builds a (units x values x values) array; above this, units are sampled


def alpha(reliability: np.ndarray, level: Level, value_domain: list[Any] | None = None) -> float:
    """Krippendorff's alpha for (coders x units) data with np.nan for missing (level always explicit)."""
    try:
        return float(krippendorff.alpha(reliability_data=reliability, level_of_measurement=level,
                                        value_domain=value_domain))
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
    overall = _wide(frame, "overall", "quality_status")
    equivalent = _wide(frame, "equivalent", "equivalence_status")
    for name, wide, level in (("overall", overall, "interval"), ("equivalent", equivalent, "nominal")):
        data = wide.reindex(columns=judges).to_numpy().T
        data = data[:, np.sum(~np.isnan(data), axis=0) >= 2]  # only units two judges rated are pairable
        n_values = max(2, len(np.unique(data[~np.isnan(data)])))
        entry: dict[str, Any] = {"level": level, "units": int(data.shape[1])}
        limit = MAX_CELLS // n_values**2
        if data.shape[1] > limit:
            keep = np.sort(np.random.default_rng(0).choice(data.shape[1], limit, replace=False))
            data = data[:, keep]
            entry["units_sampled"] = int(limit)
        try:
            entry["alpha"] = alpha(data, level) if data.shape[1] else None
        except DualjudgeError:
            entry["alpha"] = None
        out[f"alpha_{name}"] = entry
    pairs = {}
    for a, b in combinations(judges, 2):
        both = equivalent[[a, b]].dropna() if {a, b} <= set(equivalent.columns) else pd.DataFrame()
        pairs[f"{a} vs {b}"] = {"kappa_equivalent": kappa(both[a].to_numpy(), both[b].to_numpy()) if len(both) else None,
                               "raw_agreement": float((both[a] == both[b]).mean()) if len(both) else None,
                               "n": int(len(both))}
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
    domain = sorted(np.unique(data[~np.isnan(data)]).tolist()) if level == "ordinal" else None
    return alpha(data, level, domain)
