"""A run directory's files, named once.

`dualjudge run CONFIG --out RUN` writes everything under RUN: the store (results.sqlite, with its
lock), the testbed it rendered, the exported tables, the manifest, the analysis (summary.json,
report.md, report.html, figures/) and the explorer. Every module that reads or writes one of these
names it through `RunDir`, so a file is renamed here or nowhere. `dualjudge analyze TABLE --out DIR`
writes the analysis files into any folder: the same names, through `RunDir(DIR)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunDir:
    root: Path

    STORE = "results.sqlite"
    LOCK = "run.lock"
    TESTBED = "testbed"
    LOGS = "logs"
    RUBRICS = "rubrics"
    FIGURES = "figures"
    VERDICTS_PARQUET = "verdicts.parquet"
    VERDICTS_CSV = "verdicts.csv"
    ORDER_PROBES = "probes_order.csv"
    PADDING_PROBES = "probes_padding.csv"
    JUDGE_PASSES = "judge_passes.csv"
    RECOGNITION_PROBES = "probes_recognition.csv"
    PAIRWISE_PARQUET = "pairwise.parquet"  # the pairwise judge's table (docs/verdict-table.md)
    PAIRWISE_CSV = "pairwise.csv"
    MANIFEST = "manifest.json"
    SUMMARY = "summary.json"
    REPORT_MD = "report.md"
    REPORT_HTML = "report.html"
    EXPLORER = "explorer.html"
    TASK = "task.json"  # a run of a task other than uk-signs: its words, labels and items (the report and explorer read it)
    PLANTED = "planted.json"  # beside a simulated table: what the simulator planted (the analysis shows it)

    # what a run writes beside its store (an --out folder holding other files is refused)
    RUN_FILES = (
        VERDICTS_PARQUET,
        VERDICTS_CSV,
        PAIRWISE_PARQUET,
        PAIRWISE_CSV,
        ORDER_PROBES,
        PADDING_PROBES,
        JUDGE_PASSES,
        RECOGNITION_PROBES,
        MANIFEST,
        TASK,
    )
    ANALYSIS_FILES = (SUMMARY, REPORT_MD, REPORT_HTML)

    def __truediv__(self, name: str) -> Path:
        return self.root / name

    @property
    def store(self) -> Path:
        return self.root / self.STORE

    @property
    def lock(self) -> Path:
        return self.root / self.LOCK

    @property
    def testbed(self) -> Path:
        return self.root / self.TESTBED

    @property
    def logs(self) -> Path:
        return self.root / self.LOGS

    @property
    def rubrics(self) -> Path:
        return self.root / self.RUBRICS

    @property
    def figures(self) -> Path:
        return self.root / self.FIGURES

    @property
    def verdicts(self) -> Path:
        """The verdict table (Parquet; verdicts_csv is the same table as CSV)."""
        return self.root / self.VERDICTS_PARQUET

    @property
    def verdicts_csv(self) -> Path:
        return self.root / self.VERDICTS_CSV

    @property
    def pairwise(self) -> Path:
        """The pairwise judge's table (Parquet; the CSV beside it is the same table)."""
        return self.root / self.PAIRWISE_PARQUET

    @property
    def task(self) -> Path:
        return self.root / self.TASK

    @property
    def planted(self) -> Path:
        return self.root / self.PLANTED

    @property
    def order_probes(self) -> Path:
        return self.root / self.ORDER_PROBES

    @property
    def padding_probes(self) -> Path:
        return self.root / self.PADDING_PROBES

    @property
    def judge_passes(self) -> Path:
        return self.root / self.JUDGE_PASSES

    @property
    def manifest(self) -> Path:
        return self.root / self.MANIFEST

    @property
    def summary(self) -> Path:
        return self.root / self.SUMMARY

    @property
    def report_md(self) -> Path:
        return self.root / self.REPORT_MD

    @property
    def report_html(self) -> Path:
        return self.root / self.REPORT_HTML

    @property
    def explorer(self) -> Path:
        return self.root / self.EXPLORER
