"""The whole analysis of a verdict table, as one summary (what summary.json holds; docs/summary.md).

Top-level `systems` and `paired_tests` pool the judge models (each cell's mean over repeats and
judges); per-judge results are under `judges`. Writing it and the report is report/build.py's job.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis import agreement, dual_judge
from dualjudge.analysis.annotations import human_check_near
from dualjudge.analysis.bootstrap import T_INTERVAL
from dualjudge.analysis.choices import N_RESAMPLES, Lineage
from dualjudge.analysis.decision import decision_risk
from dualjudge.analysis.identification import identification
from dualjudge.analysis.missingness import missingness
from dualjudge.analysis.probes import probes_near
from dualjudge.analysis.results import Summary
from dualjudge.analysis.scale import PAPER_SCALE, Scale
from dualjudge.analysis.self_preference import self_preference
from dualjudge.analysis.stability import stability_near
from dualjudge.analysis.table import read_table


def summarize(frame: pd.DataFrame, lineage: Lineage = "family", seed: int = 0,
              n_resamples: int = N_RESAMPLES, scale: Scale = PAPER_SCALE, **extra: Any) -> Summary:
    judges: dict[str, Any] = {}
    for judge, g in frame.groupby("judge_model", sort=True):
        summary = dual_judge.judge_summary(g, scale, seed, n_resamples)
        summary["within_judge_agreement"] = agreement.within_judge(g, scale)
        judges[str(judge)] = summary
    return Summary.model_validate({
        "notes": frame.attrs.get("notes", []),
        "overall_convention": _convention(frame),
        "scale": scale.as_dict(),
        "n_rows": int(len(frame)),
        "runs": sorted(frame["run_id"].dropna().astype(str).unique().tolist()),
        "systems": dual_judge.system_means(frame),
        "system_models": dual_judge.system_means(frame, "system_model"),
        "paired_tests": dual_judge.paired_tests(frame),
        "judges": judges,
        "self_preference": self_preference(frame, lineage, seed, n_resamples),
        "agreement": agreement.between_judges(frame),
        "identification": identification(frame, scale),
        "missingness": missingness(frame),
        "decision_risk": decision_risk(frame, seed, n_resamples),
        "bootstrap": {"resamples": n_resamples, "seed": seed, "cluster": "sign_code",
                      "ci": {"self_preference": T_INTERVAL, "other statistics": "percentile 95%"}},
        **extra,
    })


def _convention(frame: pd.DataFrame) -> str:
    """How the table's overall was made: the column's value, or (for tables without it) the paper's."""
    if "overall_convention" in frame.columns and frame["overall_convention"].notna().any():
        values = sorted(set(frame["overall_convention"].dropna().astype(str)))
        return values[0] if len(values) == 1 else "mixed: " + ", ".join(values)
    return "mean_of_subscores (assumed: the table does not say)"


def summarize_table(table: Path, lineage: Lineage = "family", seed: int = 0,
                    n_resamples: int = N_RESAMPLES, scale: Scale = PAPER_SCALE) -> tuple[pd.DataFrame, Summary]:
    """Read a verdict table (and the probe tables beside it) and summarise it."""
    t0 = time.perf_counter()
    frame = read_table(table, scale)
    probes = probes_near(table, seed, n_resamples) or None
    summary = summarize(frame, lineage, seed, n_resamples, scale, probes=probes, table=str(table),
                        stability=stability_near(table, scale), human=human_check_near(table))
    return frame, summary.model_copy(update={"analysis_seconds": round(time.perf_counter() - t0, 2)})
