"""Decision risk: how likely is the run to name the wrong winner between two systems?

For each pair of strategies, the per-sign difference of mean overall (all judges pooled): the same per-sign means
as the paired t-test on per-sign means (Table 2), so its mean difference is that test's delta. The observed winner
is the sign of the mean difference; the probability that the run names the wrong one is that test's one-sided
p-value (a t on signs - 1 degrees of freedom: with few signs it says how little they settle, where a percentile
bootstrap over seven signs that all point one way said 0%). Under a normal approximation, the number of signs for
which the right winner is named 90% of the time is (z_0.9 * sd / |mean difference|)^2 (sd across signs).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.pointwise.dual_judge import cell_means
from dualjudge.analysis.shared.words import words

Z90 = float(stats.norm.ppf(0.9))


def decision_risk(frame: pd.DataFrame) -> dict[str, Any]:
    cells = cell_means(frame)
    if cells.shape[1] < 2:
        return {"pairs": {}, "reason": "needs two or more systems (strategies)"}
    if cells.index.get_level_values("sign_code").nunique() < 2:
        return {"pairs": {}, "reason": f"needs two or more {words().units}"}
    pairs: dict[str, Any] = {}
    for a, b in combinations(sorted(cells.columns), 2):
        per_sign = cells[[a, b]].dropna().groupby(level="sign_code").mean()  # as the paired test on per-sign means
        d = (per_sign[a] - per_sign[b]).to_numpy()
        if len(d) < 2:
            continue
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        if not mean:
            wrong = 0.5
        elif sd == 0:
            wrong = 0.0  # every sign points the same way by the same amount
        else:
            wrong = float(stats.t.sf(abs(mean) / (sd / np.sqrt(len(d))), len(d) - 1))
        needed = int(np.ceil((Z90 * sd / abs(mean)) ** 2)) if mean and sd > 0 else None
        pairs[f"{a} vs {b}"] = {
            "winner": a if mean > 0 else b if mean < 0 else None,
            "mean_difference": mean,
            "signs": int(len(d)),
            "p_wrong_winner": wrong,
            "signs_for_90pct": needed,
        }
    return {"pairs": pairs}
