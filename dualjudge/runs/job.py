"""A whole run: the runner, then the verdict table, the manifest and a short summary."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dualjudge.config import RunConfig
from dualjudge.runs.export import verdict_table, write_probe_tables, write_table
from dualjudge.runs.manifest import build_manifest, write_manifest
from dualjudge.runs.runner import STORE_FILE, Runner, RunReport, load_variants
from dualjudge.runs.stages import Progress
from dualjudge.runs.store import Store


@dataclass
class JobResult:
    out: Path
    report: RunReport
    table: pd.DataFrame
    counts: dict[str, dict[str, int]]


def counts(store: Store) -> dict[str, dict[str, int]]:
    return {t: store.counts(t) for t in ("answers", "verdicts", "order_probe", "padding_texts", "padding_probe")}


def export_run(config: RunConfig, out: Path, store: Store) -> pd.DataFrame:
    table = verdict_table(store, load_variants(out), config.run.name, config.judges.models, config.judges.kinds)
    write_table(table, out)
    write_probe_tables(store, out)
    return table


def run_job(config: RunConfig, out: Path, progress: Progress | None = None) -> JobResult:
    runner = Runner(config, out, progress)
    try:
        report = asyncio.run(runner.run())
        table = export_run(config, out, runner.store)
        if len(table):
            from dualjudge.analysis.analyze import analyze

            analyze(out / "verdicts.parquet", out, seed=config.run.seed)
        c = counts(runner.store)
        write_manifest(build_manifest(config, out, {
            "last_session": {"session": runner.session, "requests_sent": report.sessions_requests,
                             "cache_hits": report.cache_hits, "models_loaded": report.models_loaded,
                             "failures": report.failures},
            "counts": c, "cache_file": config.engine.cache or str(out / STORE_FILE)}), out)
        return JobResult(out, report, table, c)
    finally:
        runner.store.close()


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per system model, strategy and judge: n, mean overall, equivalence rate, format compliance."""
    if table.empty:
        return pd.DataFrame(columns=["system_model", "system", "judge_model", "n", "mean_overall",
                                     "equivalence_rate", "format_compliance"])
    g = table.groupby(["system_model", "system", "judge_model"], sort=True)
    return g.agg(n=("item_id", "size"), mean_overall=("overall", "mean"),
                 equivalence_rate=("equivalent", "mean"), format_compliance=("format_ok", "mean")).reset_index()
