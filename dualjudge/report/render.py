"""report.md and a self-contained report.html (figures embedded as data URLs), from summary.json."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from dualjudge.analysis.shared.choices import Lineage
from dualjudge.analysis.shared.results import Summary
from dualjudge.analysis.shared.statistics import sections as statistic_sections
from dualjudge.analysis.shared.words import speaking, words, words_for
from dualjudge.files import write_text
from dualjudge.report import figures as fig
from dualjudge.report.checks import section as checks_section
from dualjudge.report.clarification import section as clarification_section
from dualjudge.report.designs import section as designs_section
from dualjudge.report.designs import variant_sections
from dualjudge.report.escape import markdown_to_html, md_strings, md_text, page
from dualjudge.report.findings import section as findings_section
from dualjudge.report.once import explanations, once
from dualjudge.report.pairwise import sections as pairwise_sections
from dualjudge.report.pairwise import side_by_side_section
from dualjudge.report.paper import section as paper_section
from dualjudge.report.self_preference import section as self_preference_section
from dualjudge.report.systems import section as systems_section
from dualjudge.rundir import RunDir
from dualjudge.tasks.task import plural


def _figures(summary: Summary, out: Path, lineage: Lineage) -> list[tuple[str, Path]]:
    """The report's figures, drawn from the summary (the reference judge design's)."""
    made = []
    d = RunDir(out).figures
    absent = set(summary.absent_columns)  # a foreign table: only the figures its columns can draw
    varied = summary.by_visibility  # occluded variants (uk-signs, an image task): figures by visibility
    if varied and "overall" not in absent:
        made.append(
            (
                "Mean overall by visibility (all judges)",
                fig.degradation_figure(summary.degradation, d / "degradation.png", "Degradation with occlusion (all judges)"),
            )
        )
    for judge, s in summary.judges.items():
        safe = file_stem(judge)
        if not absent & {"overall", "equivalent"}:
            made.append(
                (
                    f"{judge}: its quality verdicts split by its equivalence verdicts",
                    fig.joint_figure(s.joint, d / f"joint_{safe}.png", f"Quality vs equivalence ({judge})"),
                )
            )
        if varied and s.type2_by_visibility:
            made.append(
                (
                    f"Type II rate by visibility: {judge}",
                    fig.type2_figure(s.type2_by_visibility, d / f"type2_{safe}.png", f"Type II ({judge})"),
                )
            )
    boards = {by: b for by, b in (summary.systems.overall or {}).items() if by != "both" and b.estimable and len(b.rows) > 1}
    if boards:
        planted = summary.simulation.truth_systems.get("overall") if summary.simulation else None
        made.append(
            (
                "Which system is best: calibrated scores with 95% intervals beside the naive means",
                fig.leaderboard_figure(boards, d / "systems.png", "Calibrated system scores (overall)", planted),
            )
        )
    matrices = {str(name): o.interaction for name, o in summary.self_preference.outcomes().items() if o.interaction}
    if matrices:
        made.append(
            (
                "Judge x generator family after calibration: mean of (verdict - leniency - scale x answer quality), "
                "own-family effects included; not raw means",
                fig.heatmap_figure(
                    matrices, d / "family_heatmap.png", f"Calibrated residuals, judge x generator family ({lineage})"
                ),
            )
        )
    return made


def file_stem(name: str) -> str:
    """A name as part of a figure's file name: kept where it is letters, digits, `.`, `_` and `-`, else those
    with a short hash of the whole name (a hub name's `/` is `_`), so no name puts markup in a path."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "judge"
    return stem if stem == name.replace("/", "_") else f"{stem[:60]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def markdown(
    summary: Summary,
    images: list[tuple[str, str]],
    findings: list[str] | None = None,
    links: bool = False,
    regeneration: str | None = None,
) -> str:
    parts = [
        f"# dualjudge report{SIMULATED_TITLE if summary.simulation else ''}",
        "",
        *([_regeneration(regeneration), ""] if regeneration else []),
        *_disconnected(summary),
        *_simulation(summary),
        *_task(summary),
        *(findings or []),
        *systems_section(summary.systems, summary.simulation),
        f"Rows: {summary.n_rows}; runs: {', '.join(summary.runs) or '-'}. "
        f"CIs: {words().unit}-level cluster bootstrap, {summary.bootstrap.resamples} resamples: percentile intervals, "
        f"except self-preference (its section says how its intervals are made). Scale: 0-{summary.scale.maximum:g}, "
        f"good {summary.scale.good}, poor {summary.scale.poor}.",
        "",
    ]
    if summary.variants:
        parts += [
            f"Judge variants: {', '.join([summary.judge_variant, *summary.variants])}. The main sections are the "
            f'{summary.judge_variant} judges\'; "Judge designs compared" sets the variants side by side, and each '
            f"other variant has its own section.",
            "",
        ]
    if summary.notes:
        parts += ["What the table lacks, and what the analysis does instead:", ""]
        parts += [f"- {note}" for note in summary.notes] + [""]
    parts += paper_section(summary, links)
    parts += self_preference_section(
        summary.self_preference, summary.simulation.truth_self_preference if summary.simulation else None
    )
    if summary.pairwise is not None:
        parts += pairwise_sections(summary.pairwise) + side_by_side_section(summary.pairwise.side_by_side)
    parts += checks_section(summary)
    parts += statistic_sections(summary.statistics)  # declared statistics (analysis/shared/statistics.py)
    if summary.designs:
        parts += designs_section(summary.designs)
    if summary.clarification:
        parts += clarification_section(summary.clarification)
    parts += variant_sections(summary)
    parts += ["## Figures", ""]
    for caption, src in images:
        parts += [f"![{caption}]({src})", ""]
    return "\n".join(parts) + "\n"


def _disconnected(summary: Summary) -> list[str]:
    """A table of blocks that share no judge, system or item says so before anything else: nothing ranks across."""
    for boards in summary.systems.outcomes().values():
        board = boards.get("system_model")
        if board is not None and board.blocks:
            return [
                f"**This table is {len(board.blocks)} disconnected blocks** that share no judge, system or item: "
                f"{'; '.join(b.words for b in board.blocks)}. Systems are ranked within each block, never across "
                f'("Which system is best").',
                "",
            ]
    return []


def _regeneration(settings: str) -> str:
    return (
        f"Regeneration: {md_text(settings)}. A rerun is answered from results.sqlite; `dualjudge reproduce RUN_DIR` "
        "(this report's folder) sends a sample of its requests again, uncached, and says what matched."
    )


def _task(summary: Summary) -> list[str]:
    t = summary.task
    if t is None:
        return []
    label = f"; answers end with a {t.label} line" if t.label else ""
    return [
        f"Task **{t.name}** ({t.domain}): each {t.noun} is judged against its reference{label}; "
        f"intervals resample {plural(t.unit)}.",
        "",
    ]


SIMULATED_TITLE = ": SIMULATED DATA (planted values beside the estimates)"


def _simulation(summary: Summary) -> list[str]:
    s = summary.simulation
    if s is None:
        return []
    planted = "; ".join(f"{name}: " + ", ".join(f"{k} {v:+g}" for k, v in values.items()) for name, values in s.planted.items())
    return [
        f'**These data are simulated**: {s.description} (scenario "{s.scenario}", seed {s.seed}; made by '
        f"`{s.made_by}`). Nothing here was measured on a model. Planted: {planted}. The planted self-preference "
        f"and system scores are shown beside the estimates, so the reader can see each estimator recover them.",
        "",
    ]


def render_report(
    summary: Summary, out: Path, lineage: Lineage, figures: bool = True, links: bool = False, regeneration: str | None = None
) -> None:
    """report.md and report.html, every number and figure read from the summary; with `links` (a run
    directory, whose explorer.html sits beside them) the headline numbers link to the explorer filtered to
    the rows behind them; `regeneration`: a run directory's line on how its answers can be regenerated."""
    with speaking(words_for(summary.task, summary.absent_columns)):  # the task's words, in every sentence made here
        made = [(md_text(c), p) for c, p in _figures(summary, out, lineage)] if figures else []
        shown = as_text(summary)
        findings = findings_section(shown, links)
        md = markdown(shown, [(c, str(p.relative_to(out))) for c, p in made], findings, links, regeneration)
    md = once(md, explanations(shown.model_dump()))  # each reason said once
    write_text(RunDir(out).report_md, md)
    embedded = {str(p.relative_to(out)): "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode() for _, p in made}
    write_text(RunDir(out).report_html, _html(md, embedded))


def as_text(summary: Summary) -> Summary:
    """The summary as the report's Markdown shows it: every name (models, families, judges, runs, a foreign
    table's values) escaped as text (report/escape.py), so no name becomes markup or splits a line. The
    figures are drawn from the summary itself; links to the explorer take the names back (links.py)."""
    return Summary.model_validate(md_strings(summary.model_dump()))


def _html(md: str, figures: dict[str, str]) -> str:
    """The report's Markdown as one HTML page, each figure embedded as its data URL; raw HTML in it (from
    model or family names, or a foreign table) is escaped, never run (report/escape.py). The figures go in
    after the Markdown is rendered: its parser normalizes every link character by character, which takes
    minutes on megabytes of base64."""
    body = markdown_to_html(md)
    for path, data in figures.items():  # a figure's path is letters, digits, . _ - and / (file_stem)
        body = body.replace(f'src="{path}"', f'src="{data}"')
    return page(body)
