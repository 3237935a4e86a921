"""Judge-probe results: order-probe flip rate and padding-probe score shift and flip rate, with
sign-level cluster-bootstrap CIs. They read the probe tables a run exports next to its verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis.bootstrap import mean_ci
from dualjudge.analysis.choices import N_RESAMPLES

ORDER_FILE = "probes_order.csv"
PADDING_FILE = "probes_padding.csv"


def _with_ci(frame: pd.DataFrame, column: str, seed: int, n_resamples: int) -> dict[str, Any]:
    values = frame[column].astype("float64")
    if len(values) == 0:
        return {"estimate": None, "ci": None, "n": 0}
    if frame["sign_code"].nunique() < 2:
        return {"estimate": float(values.mean()), "ci": None, "n": int(len(values)),
                "reason": "a CI needs at least two signs"}
    est, ci = mean_ci(frame, values, seed, n_resamples)
    return {"estimate": est, "ci": list(ci) if ci else None, "n": int(len(values))}


def order_probe(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    ok = frame[frame["status"] == "ok"]
    out: dict[str, Any] = {"overall": _with_ci(ok, "flipped", seed, n_resamples), "per_judge": {}}
    for judge, g in ok.groupby("judge_model", sort=True):
        out["per_judge"][str(judge)] = _with_ci(g, "flipped", seed, n_resamples)
    out["not_ok"] = int((frame["status"] != "ok").sum())
    return out


def padding_probe(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    ok = frame[frame["status"] == "ok"]
    kinds: dict[str, Any] = {}
    out: dict[str, Any] = {"kinds": kinds}
    for kind, g in ok.groupby("kind", sort=True):
        kinds[str(kind)] = {"shift": _with_ci(g, "shift", seed, n_resamples),
                          "flip_rate": _with_ci(g, "flipped", seed, n_resamples),
                          "per_judge": {str(j): {"shift": _with_ci(h, "shift", seed, n_resamples),
                                                 "flip_rate": _with_ci(h, "flipped", seed, n_resamples)}
                                        for j, h in g.groupby("judge_model", sort=True)}}
    out["not_ok"] = int((frame["status"] != "ok").sum())
    return out


def probes_near(table_path: Path, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """Probe summaries from the probe tables next to a verdict table, when there are any."""
    out: dict[str, Any] = {}
    order, padding = table_path.parent / ORDER_FILE, table_path.parent / PADDING_FILE
    if order.is_file():
        frame = pd.read_csv(order, dtype={"sign_code": str})
        if len(frame):
            out["order"] = order_probe(frame, seed, n_resamples)
    if padding.is_file():
        frame = pd.read_csv(padding, dtype={"sign_code": str})
        if len(frame):
            out["padding"] = padding_probe(frame, seed, n_resamples)
    return out
