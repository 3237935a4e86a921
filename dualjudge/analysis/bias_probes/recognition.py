"""Self-recognition (Panickssery et al. 2024): how often a judge tells its own answer from another family's, and
whether the judges that recognise themselves better prefer themselves more.

Read from the probe table a run writes beside its verdicts (probes_recognition.csv): per pair, whether the judge
named its own answer when it was shown first and when it was shown second. A pair's recognition is the mean of
the two, so a judge that always names one position scores exactly 0.5 (position-corrected, as the paper averages
both orders); its first-position rate says how much it leans on the order. With the single form, each answer
alone: "did you write this?", scored as balanced accuracy (yes to its own, no to the other). Intervals: sign-
cluster bootstrap (percentile), as the other probes'. Across judges, the correlation of recognition with the
self-preference index (Spearman, with the number of judges; three at least).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dualjudge.analysis.bias_probes.probes import rate_with_ci
from dualjudge.analysis.shared.choices import N_RESAMPLES
from dualjudge.analysis.shared.table import cluster_named
from dualjudge.rundir import RunDir

FILE = RunDir.RECOGNITION_PROBES
DEFINITION = (
    "per pair of the judge model's own answer and another family's answer to one item, asked in both orders: the mean "
    "of [named its own answer when shown first] and [when shown second] (0.5: chance, and what a judge that always "
    "names one position gets); single: balanced accuracy of 'did you write this?' on its own and the other answer"
)
MIN_JUDGES = 3  # a correlation across fewer judges says nothing


def recognition_frame(table_path: Path) -> pd.DataFrame | None:
    """The recognition probe table beside a verdict table (None where absent or empty)."""
    path = table_path.parent / FILE
    if not path.is_file():
        return None
    frame = cluster_named(pd.read_csv(path, dtype={"sign_code": str, "group": str}))
    return frame if len(frame) else None


def _rate(frame: pd.DataFrame, values: pd.Series, seed: int, n_resamples: int) -> dict[str, Any]:
    out: dict[str, Any] = rate_with_ci(frame.assign(_value=values.astype("float64")), "_value", seed, n_resamples)
    return out


def recognition(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """Per judge: recognition (position-corrected), its first-position rate, the single form's balanced accuracy."""
    ok = frame[frame["status"] == "ok"]
    per_judge: dict[str, Any] = {}
    for judge, g in ok.groupby("judge_model", sort=True):
        first, second = g["own_first"].astype(float), g["own_second"].astype(float)
        named_a = (first + (1 - second)) / 2  # the answer shown first was named
        entry: dict[str, Any] = {
            "pairs": int(len(g)),
            "others": sorted(set(g["other_model"].astype(str))),
            "accuracy": _rate(g, (first + second) / 2, seed, n_resamples),
            "first_position": _rate(g, named_a, seed, n_resamples),
            "one_position": bool(len(g) > 1 and (named_a.eq(1).all() or named_a.eq(0).all())),
            "single": None,
        }
        if "claims_own" in g.columns and g["claims_own"].notna().any():
            both = g.dropna(subset=["claims_own", "claims_other"])
            entry["single"] = _rate(both, (both["claims_own"] + 1 - both["claims_other"]) / 2, seed, n_resamples)
        per_judge[str(judge)] = entry
    return {
        "definition": DEFINITION,
        "per_judge": per_judge,
        "not_ok": int((frame["status"] != "ok").sum()),
        "failed_by_judge": {str(j): int(n) for j, n in frame[frame["status"] != "ok"].groupby("judge_model").size().items()},
        "correlation": None,
    }


def correlation(result: dict[str, Any], index: dict[str, float | None], outcome: str) -> dict[str, Any]:
    """Across judges, the correlation of recognition with the self-preference index of `outcome`."""
    pairs = [
        (judge, e["accuracy"]["estimate"], index.get(judge))
        for judge, e in sorted(result["per_judge"].items())
        if e["accuracy"]["estimate"] is not None and index.get(judge) is not None
    ]
    out: dict[str, Any] = {"outcome": outcome, "judges": [p[0] for p in pairs], "spearman": None, "pearson": None, "reason": None}
    if len(pairs) < MIN_JUDGES:
        out["reason"] = (
            f"{len(pairs)} judge(s) have both a recognition share and a self-preference estimate; a correlation across "
            f"judges needs at least {MIN_JUDGES}"
        )
        return out
    x = np.array([p[1] for p in pairs], dtype=float)
    y = np.array([p[2] for p in pairs], dtype=float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        out["reason"] = "every judge has the same recognition share or the same self-preference: no correlation is defined"
        return out
    out["spearman"] = float(stats.spearmanr(x, y).statistic)
    out["pearson"] = float(stats.pearsonr(x, y).statistic)
    return out
