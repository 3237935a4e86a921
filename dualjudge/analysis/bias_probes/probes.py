"""Judge-probe results: order-probe flip rate and padding-probe score shift and flip rate, with
sign-level cluster-bootstrap CIs. They read the probe tables a run exports next to its verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis.shared.bootstrap import mean_ci
from dualjudge.analysis.shared.choices import N_RESAMPLES
from dualjudge.analysis.shared.table import cluster_named
from dualjudge.analysis.shared.words import words
from dualjudge.rundir import RunDir

ORDER_FILE = RunDir.ORDER_PROBES
PADDING_FILE = RunDir.PADDING_PROBES


def rate_with_ci(frame: pd.DataFrame, column: str, seed: int, n_resamples: int) -> dict[str, Any]:
    values = frame[column].astype("float64")
    if len(values) == 0:
        return {"estimate": None, "ci": None, "n": 0}
    if frame["sign_code"].nunique() < 2:
        return {
            "estimate": float(values.mean()),
            "ci": None,
            "n": int(len(values)),
            "reason": f"a CI needs at least two {words().units}",
        }
    est, ci = mean_ci(frame, values, seed, n_resamples)
    return {"estimate": est, "ci": list(ci) if ci else None, "n": int(len(values))}


def order_probe(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    ok = frame[frame["status"] == "ok"]
    out: dict[str, Any] = {"overall": rate_with_ci(ok, "flipped", seed, n_resamples), "per_judge": {}}
    for judge, g in ok.groupby("judge_model", sort=True):
        out["per_judge"][str(judge)] = rate_with_ci(g, "flipped", seed, n_resamples)
    out["not_ok"] = int((frame["status"] != "ok").sum())
    return out


def padding_probe(frame: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    ok = frame[frame["status"] == "ok"]
    kinds: dict[str, Any] = {}
    out: dict[str, Any] = {"kinds": kinds}
    for kind, g in ok.groupby("kind", sort=True):
        kinds[str(kind)] = {
            "shift": rate_with_ci(g, "shift", seed, n_resamples),
            "flip_rate": rate_with_ci(g, "flipped", seed, n_resamples),
            "per_judge": {
                str(j): {
                    "shift": rate_with_ci(h, "shift", seed, n_resamples),
                    "flip_rate": rate_with_ci(h, "flipped", seed, n_resamples),
                }
                for j, h in g.groupby("judge_model", sort=True)
            },
        }
    out["not_ok"] = int((frame["status"] != "ok").sum())
    return out


def probe_frames(table_path: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The order and padding probe tables next to a verdict table (None where absent or empty); tables
    from before judge variants are the holistic design's."""
    frames = []
    for name in (ORDER_FILE, PADDING_FILE):
        path = table_path.parent / name
        frame = cluster_named(pd.read_csv(path, dtype={"sign_code": str, "group": str})) if path.is_file() else None
        if frame is not None and "judge_variant" not in frame.columns:
            frame = frame.assign(judge_variant="holistic")
        frames.append(frame if frame is not None and len(frame) else None)
    return frames[0], frames[1]


def probes_of(
    order: pd.DataFrame | None, padding: pd.DataFrame | None, variant: str, seed: int = 0, n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """Probe summaries of one judge variant."""
    out: dict[str, Any] = {}
    for name, frame, summarise in (("order", order, order_probe), ("padding", padding, padding_probe)):
        rows = frame[frame["judge_variant"] == variant] if frame is not None else None
        if rows is not None and len(rows):
            out[name] = summarise(rows, seed, n_resamples)
    return out
