"""Stability across repeated judge passes (judges.passes = k >= 2): does a judge give the same verdict
when asked again?

Per judge and kind, over the answers with every pass ok: exact agreement (the share of answers on
which all k passes agree), the rate at which the pass/fail verdict flips between passes (for the
quality judge, "good" by the scale's high cut; for the equivalence judge, the decision), and for the
quality judge's overall the one-way random-effects intraclass correlation ICC(1) (answers as targets,
passes as interchangeable raters: (MSB - MSW) / (MSB + (k - 1) MSW)). Read from judge_passes.csv next
to the verdict table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.analysis.shared.table import STORE_ANSWER, cluster_named
from dualjudge.protocol.kinds import QUALITY, judge_kind
from dualjudge.rundir import RunDir

PASSES_FILE = RunDir.JUDGE_PASSES
ANSWER = STORE_ANSWER


def icc1(values: np.ndarray) -> float | None:
    """ICC(1) of an (answers x passes) array, no missing cells."""
    n, k = values.shape
    if n < 2 or k < 2:
        return None
    grand = values.mean()
    msb = k * ((values.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    msw = ((values - values.mean(axis=1, keepdims=True)) ** 2).sum() / (n * (k - 1))
    denominator = msb + (k - 1) * msw
    return float((msb - msw) / denominator) if denominator > 0 else None


def stability(passes: pd.DataFrame, scale: Scale = PAPER_SCALE) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (judge, kind), g in passes.groupby(["judge_model", "kind"], sort=True):
        spec = judge_kind(str(kind))
        value, boolean = spec.value, next(f for f in spec.scores if f.name == spec.value).type == "boolean"
        ok = g[g["status"] == "ok"]
        wide = ok.pivot_table(index=ANSWER, columns="pass_index", values=value, aggfunc="first")
        k = int(g["pass_index"].nunique())
        complete = wide.dropna().to_numpy(dtype=float)
        entry: dict[str, Any] = {"passes": k, "answers": int(len(complete)), "incomplete": int(len(wide) - len(complete))}
        if len(complete):
            decided = (
                complete.astype(bool)
                if boolean
                else scale.good(pd.DataFrame(complete)).to_numpy()
                if spec is QUALITY
                else np.vectorize(spec.decided)(complete)
            )
            entry["exact_agreement"] = float((complete == complete[:, :1]).all(axis=1).mean())
            entry["flip_rate"] = float((decided != decided[:, :1]).any(axis=1).mean())
            entry["icc1"] = None if boolean else icc1(complete)
        out.setdefault(str(judge), {})[str(kind)] = entry
    return out


def stability_near(table_path: Path, scale: Scale = PAPER_SCALE, variant: str = "holistic") -> dict[str, Any] | None:
    """The stability of one judge variant's verdicts, from the passes table next to a verdict table."""
    path = table_path.parent / PASSES_FILE
    if not path.is_file():
        return None
    frame = cluster_named(pd.read_csv(path, dtype={"sign_code": str, "group": str}))
    if "judge_variant" in frame.columns:
        frame = frame[frame["judge_variant"] == variant]
    elif variant != "holistic":
        return None
    return stability(frame, scale) if len(frame) else None
