"""Decision risk: how likely is the run to name the wrong winner between two systems?

For each pair of strategies, the per-sign difference of mean overall (all judges pooled). The
observed winner is the sign of the mean difference; a sign-cluster bootstrap gives the probability
that a resample names the other one. Under a normal approximation, the number of signs for which the
right winner is named 90% of the time is (z_0.9 * sd / |mean difference|)^2 (sd across signs).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.bootstrap import resample_counts
from dualjudge.analysis.choices import N_RESAMPLES
from dualjudge.analysis.dual_judge import quality_rows
from dualjudge.analysis.words import words

Z90 = float(stats.norm.ppf(0.9))


def decision_risk(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    per_sign = quality_rows(frame).groupby(["sign_code", "system"])["overall"].mean().unstack("system")
    if per_sign.shape[1] < 2:
        return {"pairs": {}, "reason": "needs two or more systems (strategies)"}
    if per_sign.shape[0] < 2:
        return {"pairs": {}, "reason": f"needs two or more {words().units}"}
    pairs: dict[str, Any] = {}
    for a, b in combinations(sorted(per_sign.columns), 2):
        d = (per_sign[a] - per_sign[b]).dropna().to_numpy()
        if len(d) < 2:
            continue
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        counts = resample_counts(len(d), n_resamples, seed)
        boot = counts @ d / len(d)
        wrong = float(np.mean(np.sign(boot) != np.sign(mean))) if mean else 0.5
        needed = int(np.ceil((Z90 * sd / abs(mean)) ** 2)) if mean and sd > 0 else None
        pairs[f"{a} vs {b}"] = {
            "winner": a if mean > 0 else b if mean < 0 else None,
            "mean_difference": mean,
            "signs": int(len(d)),
            "p_wrong_winner": wrong,
            "signs_for_90pct": needed,
        }
    return {"pairs": pairs}
