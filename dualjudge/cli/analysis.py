"""`dualjudge analyze | stats | human`: analysis of any verdict table, agreement statistics, the human check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from dualjudge.analysis.shared.choices import (
    MAX_RESAMPLES,
    MIN_RESAMPLES,
    N_RESAMPLES,
    AltTestKind,
    Grouping,
    Level,
    Lineage,
    Metric,
    Outcome,
)
from dualjudge.cli.common import Alias, ScaleMax, aliases, console, err_console, stage_progress
from dualjudge.errors import DualjudgeError
from dualjudge.rundir import RunDir

if TYPE_CHECKING:  # imported where used: the CLI starts without pandas
    import pandas as pd

stats_app = typer.Typer(
    rich_markup_mode=None, help="Agreement statistics on long label tables (columns item, annotator, label).", no_args_is_help=True
)
human_app = typer.Typer(
    rich_markup_mode=None,
    help="The human check: a blinded sample to annotate, and its comparison with the judges.",
    no_args_is_help=True,
)


def analyze(
    table: Annotated[Path, typer.Argument(help="A verdict table (CSV or Parquet), from a run or made elsewhere.")],
    out: Annotated[Path, typer.Option(help="Folder for summary.json, report.md, report.html, figures/.")] = Path("analysis"),
    lineage: Annotated[Lineage, typer.Option(help="Family definition: family (vendor) or base_llm (text backbone).")] = "family",
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.", min=MIN_RESAMPLES, max=MAX_RESAMPLES)] = N_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", min=0, max=2**63 - 1)] = 0,
    scale_max: ScaleMax = 10.0,
    high: Annotated[float, typer.Option(help='"Good" above this score (Type II; the paper: 7).')] = 7.0,
    low: Annotated[float, typer.Option(help='"Poor" below this score (Type I; the paper: 5).')] = 5.0,
    high_inclusive: Annotated[bool, typer.Option(help="Count a score equal to --high as good.")] = False,
    low_inclusive: Annotated[bool, typer.Option(help="Count a score equal to --low as poor.")] = False,
    alias: Alias = None,
) -> None:
    """Tables 1-3, self-preference with CIs, agreement, probes and more; writes the report.

    The table needs item_id, system_model, judge_model and overall and/or equivalent; every other
    column of the contract is optional and unlocks its sections (docs/verdict-table.md). A pairwise
    table (item_id, judge_model, system_a, system_b, winner, shown_first) gets the pairwise analysis."""
    from dualjudge.analysis.pairwise.table import is_pairwise_file
    from dualjudge.analysis.shared.scale import Scale
    from dualjudge.report.build import analyze as run_analysis
    from dualjudge.report.findings import best_system, estimated_outcome

    if is_pairwise_file(table):
        _analyze_pairwise(table, out, resamples, seed)
        return
    scale = Scale(scale_max, high, low, high_inclusive, low_inclusive)
    try:
        with stage_progress("analysing") as progress:
            summary = run_analysis(table, out, lineage, seed, resamples, scale=scale, progress=progress, aliases=aliases(alias))
    except ValueError as e:
        raise DualjudgeError(str(e)) from None
    except KeyboardInterrupt:
        err_console.print(
            f"interrupted: {out} is as it was (the analysis writes its files only once all are made)", highlight=False
        )
        raise typer.Exit(130) from None
    shown = estimated_outcome(summary)
    judges = shown[1].judges if shown else []
    estimated = [j.judge for j in judges if j.estimate is not None]
    console.print(
        f"analysed {summary.n_rows} rows in {summary.analysis_seconds} s; self-preference "
        f"({shown[0] if shown else 'overall'}) estimated for {len(estimated)} of {len(judges)} judges"
        + ("" if len(estimated) == len(judges) else " (report.md says why not for the others)")
    )
    headline = best_system(summary)  # the report's own sentence: one answer on every surface
    if headline:
        console.print(headline, markup=False, highlight=False)
    console.print(f"wrote {out}/summary.json, report.md, report.html, figures/")


def _analyze_pairwise(table: Path, out: Path, resamples: int, seed: int) -> None:
    from dualjudge.report.build import analyze_pairwise
    from dualjudge.report.pairwise import headline

    try:
        with stage_progress("analysing") as progress:
            result = analyze_pairwise(table, out, seed, resamples, progress)
    except KeyboardInterrupt:
        err_console.print(
            f"interrupted: {out} is as it was (the analysis writes its files only once all are made)", highlight=False
        )
        raise typer.Exit(130) from None
    for line in headline(result):
        console.print(line, markup=False, highlight=False)
    console.print(f"wrote {out}/summary.json, report.md, report.html")


def _read_long(path: Path) -> pd.DataFrame:
    from dualjudge.analysis.shared.table import read_csv

    return read_csv(path, {"item": str, "annotator": str}, "label table", labels_as_text=True)


@stats_app.command("alpha")
def stats_alpha(
    file: Annotated[Path, typer.Argument(help="Long CSV: item, annotator, label (one row per label).")],
    level: Annotated[Level, typer.Option(help="nominal, ordinal, interval or ratio (always explicit).")] = ...,  # type: ignore[assignment]
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Krippendorff's alpha (missing labels allowed)."""
    from dualjudge.analysis.reliability.agreement import alpha_from_long

    value = alpha_from_long(_read_long(file), level)
    if as_json:
        print(json.dumps({"alpha": value, "level": level}))
    else:
        console.print(f"Krippendorff's alpha ({level}) = {value:.4f}")


@stats_app.command("alt-test")
def stats_alt_test(
    file: Annotated[Path, typer.Argument(help="Long CSV: item, annotator, label; the candidate is one annotator.")],
    candidate: Annotated[str, typer.Option(help="The annotator (e.g. an LLM judge) tested as a human replacement.")],
    epsilon: Annotated[float, typer.Option(help="Cost-benefit allowance (0.2 experts, 0.15 skilled, 0.1 crowd).")] = 0.2,
    q: Annotated[float, typer.Option(help="Benjamini-Yekutieli level.")] = 0.05,
    metric: Annotated[Metric, typer.Option(help="accuracy or neg_rmse.")] = "accuracy",
    min_items: Annotated[int, typer.Option(help="Annotators with fewer items are not tested.")] = 30,
    humans: Annotated[
        Optional[str],
        typer.Option(
            help="Comma-separated human annotators (default: every annotator "
            "but the candidate; name them when the file also holds other "
            "LLMs)."
        ),
    ] = None,
    test: Annotated[AltTestKind, typer.Option(help="t (the authors') or wilcoxon (signed-rank, for few items).")] = "t",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The alternative annotator test (Calderon et al. 2025): omega, rho, pass/fail, per-annotator results."""
    from dualjudge.analysis.reliability.alt_test import alt_test, check_options
    from dualjudge.cli.common import csv_list

    check_options(epsilon, q, metric, min_items)
    if humans is not None and not csv_list(humans):
        raise DualjudgeError("--humans names no annotator; leave it out to take every annotator but the candidate")
    res = alt_test(_read_long(file), candidate, epsilon, q, metric, min_items, csv_list(humans), test)
    if as_json:
        d = res.as_dict()
        print(json.dumps({k: d[k] for k in ("omega", "rho", "passed", "annotators")}))
        return
    console.print(
        f"omega (winning rate) = {res.omega:.3f}; rho (advantage probability) = {res.rho:.3f}; "
        f"{'PASSED' if res.passed else 'FAILED'} (epsilon {epsilon}, q {q}, {metric})"
    )
    for a in res.annotators:
        p = "-" if a.p_value is None else f"{a.p_value:.4f}"
        console.print(f"  {a.annotator}: n={a.n} rho={a.rho:.3f} p={p} rejected={a.rejected}")


@stats_app.command("self-preference")
def stats_self_preference(
    table: Annotated[Path, typer.Argument(help="A verdict table (CSV or Parquet).")],
    outcome: Annotated[Outcome, typer.Option(help="overall (0-10) or equivalent (0/1, linear probability).")] = "overall",
    lineage: Annotated[Lineage, typer.Option(help="Family definition: family (vendor) or base_llm (text backbone).")] = "family",
    resamples: Annotated[
        int, typer.Option(help="Sign-cluster bootstrap refits.", min=MIN_RESAMPLES, max=MAX_RESAMPLES)
    ] = N_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", min=0, max=2**63 - 1)] = 0,
    scale_max: ScaleMax = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The calibrated self-preference index per judge, with CIs and adjusted p-values."""
    from dualjudge.analysis.pointwise.self_preference import cli_json, for_outcome
    from dualjudge.analysis.shared.scale import Scale
    from dualjudge.analysis.shared.table import read_table
    from dualjudge.report.self_preference import belief_sentence, sentence

    sp, result = for_outcome(read_table(table, Scale.with_maximum(scale_max)), outcome, lineage, resamples, seed)
    if as_json:
        print(json.dumps(cli_json(sp, outcome)))
        return
    console.print(f"{sp.method}\nintervals: {sp.interval}; p adjusted: {sp.adjustment}", markup=False)
    for entry in result.judges:
        console.print(f"  {sentence(entry, outcome)}", markup=False)
        parts = belief_sentence(entry, outcome)
        if parts:
            console.print(f"    {parts}", markup=False)
        for warning in entry.warnings:
            console.print(f"    warning: {warning}", markup=False)
    for warning in result.warnings:
        console.print(f"warning: {warning}", markup=False)
    if result.belief_reason:
        console.print(f"agreement with the judge's own answer not held fixed: {result.belief_reason}", markup=False)
    if result.never_answered:
        console.print(
            f"never answered as a system, so left out of the decomposition: {', '.join(result.never_answered)}", markup=False
        )


@stats_app.command("systems")
def stats_systems(
    table: Annotated[Path, typer.Argument(help="A verdict table (CSV or Parquet).")],
    by: Annotated[
        Grouping, typer.Option(help="Rank system models, strategies (system) or each model x strategy (both).")
    ] = "system_model",
    outcome: Annotated[Outcome, typer.Option(help="overall (0-10) or equivalent (0/1, linear probability).")] = "overall",
    lineage: Annotated[Lineage, typer.Option(help="Family definition: family (vendor) or base_llm (text backbone).")] = "family",
    resamples: Annotated[
        int, typer.Option(help="Sign-cluster bootstrap refits.", min=MIN_RESAMPLES, max=MAX_RESAMPLES)
    ] = N_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", min=0, max=2**63 - 1)] = 0,
    variant: Annotated[
        Optional[str], typer.Option(help="The judge variant to rank by (default: the reference one, holistic when present).")
    ] = None,
    scale_max: ScaleMax = 10.0,
    alias: Alias = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Which system is best with the judges' biases taken out: calibrated scores, rank intervals, P(best),
    beside the naive, self-excluded and single-judge rankings, and where they disagree."""
    from dualjudge.analysis.board.leaderboard import cli_json, leaderboard
    from dualjudge.analysis.shared.scale import Scale
    from dualjudge.analysis.shared.table import read_table

    frame = read_table(table, Scale.with_maximum(scale_max))
    frame, chosen, others = _one_variant(frame, variant)
    board = leaderboard(frame, outcome, lineage, resamples, seed, scale_max, aliases(alias))[by]
    result = cli_json(board, chosen)
    if others:
        result["warnings"].append(
            f"the table has other judge variants ({', '.join(others)}); ranked by {chosen} (--variant chooses)"
        )
    if as_json:
        print(json.dumps(result))
        return
    console.print(f"{result['method']}\nintervals: {result['interval']}", markup=False)
    if result["blocks"]:
        console.print(f"no ranking across blocks: {result['reason']}", markup=False)
        for block in result["blocks"]:
            console.print(f"{block['words']}:", markup=False)
            _print_board(block["board"], "  ")
    else:
        _print_board(result, "")
    for warning in result["warnings"]:
        console.print(f"warning: {warning}", markup=False)


def _print_board(result: dict[str, Any], indent: str) -> None:
    """One connected board as `stats systems` prints it: the same rows, settledness and sentences as report.md."""
    from dualjudge.report.tables import num

    if result["unit_words"]:
        console.print(f"{indent}unit: {result['unit_words']}", markup=False)
    if not result["rows"]:
        console.print(f"{indent}no calibrated ranking: {result['reason']}", markup=False)
    for r in result["rows"]:
        console.print(
            f"{indent}  {r['rank']}. {r['group']}: {num(r['estimate'], 3)} [{num(r['ci_low'], 3)}, {num(r['ci_high'], 3)}]"
            f" rank {r['rank_low']}-{r['rank_high']}, P(best) {num(r['p_best'])}",
            markup=False,
        )
    if not result["settled"]:
        console.print(f"{indent}the top is not settled ({'; '.join(result['unsettled'])}): no P(best) is given", markup=False)
    console.print(
        f"{indent}naive: " + ", ".join(f"{r['rank']}. {r['group']} {num(r['estimate'], 3)}" for r in result["naive"]),
        markup=False,
    )
    bounds = result["bounds"]
    if bounds:
        held = f"{bounds['top']} first in every refit" if bounds["top_holds"] else "no group first in every refit"
        console.print(
            f"{indent}bounds (own-family effect of {', '.join(bounds['judges'])} held at 0 and at its naive gap, "
            f"{len(bounds['refits'])} refits): {held}; ranks " + "; ".join(_bound_row(r) for r in bounds["rows"]),
            markup=False,
        )
    for c in result["changes"]:
        console.print(f"{indent}  change: {c['sentence']}", markup=False)
    if result["changes_total"] > len(result["changes"]):
        console.print(
            f"{indent}  ({result['changes_total']} ranking changes in all; the largest per ranking are listed)", markup=False
        )
    if indent:
        for warning in result["warnings"]:
            console.print(f"{indent}warning: {warning}", markup=False)


def _bound_row(row: dict[str, Any]) -> str:
    """A group's rank range and score range, as report.md words them (a clipped range said so)."""
    from dualjudge.analysis.shared.results import GroupBounds

    r = GroupBounds.model_validate(row)
    scores = r.score_range()
    return f"{r.group} {r.rank_best}-{r.rank_worst}" + ("" if scores is None else f" ({scores})")


def _one_variant(frame: pd.DataFrame, variant: str | None) -> tuple[pd.DataFrame, str, list[str]]:
    """The rows of one judge variant (the reference one unless named), its name, and the other variants."""
    from dualjudge.analysis.pointwise.designs import variant_order

    variants = variant_order(frame["judge_variant"])
    chosen = variants[0] if variant is None else variant
    if chosen not in variants:
        raise DualjudgeError(f"no judge variant {chosen!r} in the table (it has {', '.join(variants)})")
    rows = frame[frame["judge_variant"] == chosen].copy()
    rows.attrs = frame.attrs
    return rows, chosen, [v for v in variants if v != chosen]


@human_app.command("export")
def human_export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (with verdicts.parquet).")],
    out: Annotated[Path, typer.Option(help="CSV to write for the annotators.")] = Path("sample.csv"),
    n: Annotated[int, typer.Option(help="Sample size.", min=1, max=100_000)] = 49,
    seed: Annotated[int, typer.Option(help="Sampling seed.", min=0, max=2**63 - 1)] = 0,
    replace_key: Annotated[
        bool, typer.Option(help="Replace an earlier, different sample key (its annotations will no longer import).")
    ] = False,
    type2: Annotated[
        int,
        typer.Option(
            help="Type II cases after one answer per visibility x system cell; the rest "
            "are answers both judges call good (the paper: 12 and 9).",
            min=0,
        ),
    ] = 12,
) -> None:
    """A stratified, blinded sample (no judge scores) to annotate."""
    from dualjudge.analysis.reliability.human import export_sample

    sample = export_sample(RunDir(run_dir).verdicts, out, n, seed, replace_key, type2)
    console.print(
        f"wrote {len(sample)} samples to {out}; fill annotator, human_overall (0-10) and equivalent (0/1), one "
        f"row per sample and annotator (accuracy, completeness, relevance are optional)"
    )


@human_app.command("import")
def human_import(
    run_dir: Annotated[Path, typer.Argument(help="The run directory the sample came from.")],
    annotations: Annotated[Path, typer.Argument(help="The filled CSV.")],
) -> None:
    """Validate annotations and compare them with the judges (human_check.json)."""
    from dualjudge.analysis.reliability.annotations import import_annotations

    res = import_annotations(run_dir, annotations)
    for judge, e in res["judges"].items():
        o = e["overall"]
        console.print(
            f"{judge}: overall Pearson {_fmt(o['pearson'])}, Spearman {_fmt(o['spearman'])}; "
            f"equivalence kappa {_fmt(e['equivalence']['kappa'])}, raw agreement "
            f"{_fmt(e['equivalence']['raw_agreement'])} (n={e['equivalence']['n']})"
        )
    console.print(f"wrote {run_dir}/human_check.json")


def _fmt(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.3f}"
