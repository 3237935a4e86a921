"""The whole analysis of a verdict table: summary.json, figures and the report.

`dualjudge analyze TABLE --out DIR` runs it on any table; `dualjudge run` runs it at the end of a run.
Top-level `systems` and `paired_tests` pool the judge models (each cell's mean over repeats and
judges); per-judge results are under `judges`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from dualjudge.analysis import agreement, dual_judge
from dualjudge.analysis.bootstrap import T_INTERVAL
from dualjudge.analysis.choices import N_RESAMPLES, Lineage
from dualjudge.analysis.files import ANALYSIS_FILES, ANALYSIS_FOLDERS
from dualjudge.analysis.probes import probes_near
from dualjudge.analysis.self_preference import self_preference
from dualjudge.analysis.table import read_table
from dualjudge.files import check_output_dir, write_text


def summarize(frame: pd.DataFrame, lineage: Lineage = "family", seed: int = 0,
              n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    judges: dict[str, Any] = {}
    for judge, g in frame.groupby("judge_model", sort=True):
        summary = dual_judge.judge_summary(g, seed, n_resamples)
        summary["within_judge_agreement"] = agreement.within_judge(g)
        judges[str(judge)] = summary
    return {
        "n_rows": int(len(frame)),
        "runs": sorted(frame["run_id"].dropna().astype(str).unique().tolist()),
        "systems": dual_judge.system_means(frame),
        "system_models": dual_judge.system_means(frame, "system_model"),
        "paired_tests": dual_judge.paired_tests(frame),
        "judges": judges,
        "self_preference": self_preference(frame, lineage, seed, n_resamples),
        "agreement": agreement.between_judges(frame),
        "bootstrap": {"resamples": n_resamples, "seed": seed, "cluster": "sign_code",
                      "ci": {"self_preference": T_INTERVAL, "other statistics": "percentile 95%"}},
    }


def write_json(data: dict[str, Any], path: Path) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=False, default=_jsonable))


def _jsonable(o: object) -> object:
    if hasattr(o, "item"):
        return o.item()  # numpy scalars
    return str(o)


def analyze(table: Path, out: Path, lineage: Lineage = "family", seed: int = 0,
            n_resamples: int = N_RESAMPLES, figures: bool = True) -> dict[str, Any]:
    from dualjudge.report.render import render_report

    check_output_dir(out, "--out", ANALYSIS_FILES, ANALYSIS_FOLDERS)
    t0 = time.perf_counter()
    frame = read_table(table)
    summary = summarize(frame, lineage, seed, n_resamples)
    probes = probes_near(table, seed, n_resamples)
    if probes:
        summary["probes"] = probes
    summary["table"] = str(table)
    summary["analysis_seconds"] = round(time.perf_counter() - t0, 2)
    out.mkdir(parents=True, exist_ok=True)
    write_json(summary, out / "summary.json")
    render_report(frame, summary, out, lineage, figures=figures)
    return summary
