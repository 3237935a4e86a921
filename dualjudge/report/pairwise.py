"""The report's pairwise sections: per judge the raw own-choice rate beside its order consistency, first-slot
preference and the calibrated own-family term (logit and points of the rate, with what quality and position
explain); the pairwise leaderboard; a judge that judged both ways set side by side with its pointwise index."""

from __future__ import annotations

from pathlib import Path

from dualjudge.analysis.shared.results import Estimate, PairwiseAnalysis, PairwiseBoard, PairwiseJudge, SideBySide, TestedEstimate
from dualjudge.files import write_text
from dualjudge.report.escape import markdown_to_html, md_strings, page
from dualjudge.report.tables import num, pvalue, rate, table
from dualjudge.rundir import RunDir


def _est(e: Estimate | None, digits: int = 2, signed: bool = True) -> str:
    if e is None:
        return "-"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    return f"{f.format(e.estimate)} [{f.format(e.ci_low)}, {f.format(e.ci_high)}]"


def _points(e: Estimate | None) -> str:
    """A difference of rates in percentage points."""
    if e is None:
        return "-"
    return f"{100 * e.estimate:+.1f} [{100 * e.ci_low:+.1f}, {100 * e.ci_high:+.1f}] pts"


def _rate_ci(e: Estimate | None) -> str:
    return "-" if e is None else f"{e.estimate:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"


def _explained(j: PairwiseJudge) -> str:
    x = j.explained
    if x is None:
        return "-"
    return (
        f"quality {100 * x.quality:+.1f}, position {100 * x.position:+.1f}, own {100 * x.own:+.1f}, rest {100 * x.unexplained:+.1f}"
    )


def judges_section(a: PairwiseAnalysis) -> list[str]:
    rows = []
    for j in a.judges:
        own = _est(j.own_logit)
        if j.own_logit is not None and j.own_logit.p_adjusted is not None:
            own += f", p_adj {pvalue(j.own_logit.p_adjusted)}"
        rows.append(
            [
                j.judge,
                f"{j.comparisons:,}" + (f" ({j.missing:,} missing)" if j.missing else ""),
                _rate_ci(j.raw_own_rate),
                rate(j.order_consistency),
                rate(j.first_share),
                _est(j.position),
                _est(j.decisiveness, signed=False),
                own if not j.position_only else "position-only judge",
                _points(j.own_points),
                _explained(j),
            ]
        )
    parts = [
        "## Pairwise judges: self-preference",
        "",
        f"{a.n_answered:,} answered comparisons of {a.n_rows:,} by {len(a.judges)} judge(s) of {len(a.systems)} systems "
        f"on {a.clusters:,} clusters. Model: Bradley-Terry with ties (Davidson), a strength per system and, per judge, a "
        f"decisiveness, a first-slot term, an own-family term and a tie propensity, fitted together; intervals: "
        f"{a.interval}, {a.resamples} resamples (seed {a.seed}). A pairwise verdict is never turned into a pointwise "
        f"score.",
        "",
        table(
            [
                "judge",
                "comparisons",
                "raw own-choice rate",
                "order consistency",
                "first slot",
                "position (logit)",
                "decisiveness",
                "own term (logit)",
                "own term (rate)",
                "raw rate above 1/2, in points",
            ],
            rows,
        ),
        "",
    ]
    said: dict[str, list[str]] = {}  # a reason, and the judges it concerns (said once for all that share it)
    for j in a.judges:
        for line in [j.reason, j.position_reason, j.decisiveness_reason, *j.warnings]:
            if line:
                said.setdefault(line, []).append(j.judge)
    for line, judges in said.items():
        who = "every judge" if len(judges) == len(a.judges) > 1 else ", ".join(judges)
        parts.append(f"- {who}: {line}")
    if said:
        parts.append("")
    parts += _model_lines(a)
    parts += _belief_lines(a)
    parts += ["How each column is defined:", ""]
    parts += [f"- **{name.replace('_', ' ')}**: {text}" for name, text in a.definitions.items()]
    return parts + [""]


def _belief_lines(a: PairwiseAnalysis) -> list[str]:
    """The own-family term decomposed: agreement with the judge's own answer held fixed, harmful and legitimate."""
    if a.belief_reason:
        return [f"The own-family term is not decomposed: {a.belief_reason}.", ""]
    judged = [j for j in a.judges if j.belief is not None]
    if not judged:
        return []

    def tested(e: TestedEstimate | None) -> str:
        if e is None:
            return "-"
        return _est(e) + ("" if e.p_adjusted is None else f", p_adj {pvalue(e.p_adjusted)}")

    rows = [
        [
            j.judge,
            _est(j.own_logit),
            tested(j.belief.controlled),
            _est(j.belief.explained),
            _est(j.belief.agreement),
            tested(j.belief.harmful),
            tested(j.belief.legitimate),
        ]
        for j in judged
        if j.belief is not None
    ]
    lines = [
        "### The own-family term, agreement with the judge's own answer held fixed",
        "",
        "A judge favours answers that say what its own answer says, and its own family's answers say it more often: "
        "that raises the own-family term with no favour for the family. Here the fit holds an answer's agreement with "
        "the judge's own label fixed (logits)"
        + (
            ", and splits the term by whether the judge's own answer on the item is wrong (harmful: the favour can lift "
            "a wrong answer) or right (legitimate)."
            if a.belief_gold
            else "; the table has no gold label, so the harmful and legitimate parts are not given."
        ),
        "",
        table(
            ["judge", "own term", "agreement held fixed", "explained by agreement", "agreement term", "harmful", "legitimate"],
            rows,
        ),
        "",
    ]
    for j in judged:
        b = j.belief
        if b is None:
            continue
        for line in (b.reason, b.harmful_reason if a.belief_gold else None, b.legitimate_reason if a.belief_gold else None):
            if line:
                lines.append(f"- {j.judge}: {line}")
    return lines + [""]


def _model_lines(a: PairwiseAnalysis) -> list[str]:
    out = []
    t = a.decisiveness_test
    if t is not None:
        plain = [f"{j.judge} {_est(j.plain_own_logit)}" for j in a.judges if j.plain_own_logit is not None]
        better = "fits better" if t.p < 0.05 else "does not fit detectably better"
        out.append(
            f"Letting each judge be more or less decisive {better} than one decisiveness for all (LR {t.lr:.1f} on "
            f"{t.df} df, p = {pvalue(t.p)})"
            + (
                f"; with one decisiveness the own terms would read {'; '.join(plain)}: a judge that separates "
                f"answers more sharply than the others gives the strong systems more wins, and a plain model books "
                f"that as favour for whichever of them is its own."
                if plain
                else "."
            )
        )
    tr = a.transitivity
    if tr.test is not None:
        verdict = (
            "one strength per system fits as well as a preference per judge and pair"
            if tr.fits
            else "**no Bradley-Terry model fits**: a preference per judge and pair fits better, so the judges' "
            "preferences are not those of one strength per system, and the strengths and terms are averages"
        )
        test = f"LR {tr.test.lr:.1f} on {tr.test.df} df, p = {pvalue(tr.test.p)}"
        out.append(f"Transitivity against the saturated model: {verdict} ({test}).")
    elif tr.reason:
        out.append(f"Transitivity not tested: {tr.reason}.")
    for line in a.unidentified:
        out.append(f"Not identifiable: {line}.")
    for line in a.warnings:
        out.append(f"**Warning**: {line}.")
    return [line for text in out for line in (text, "")]


def board_section(b: PairwiseBoard | None) -> list[str]:
    if b is None:
        return [
            "## Which system is best (pairwise)",
            "",
            "No pairwise ranking: the design does not tie every system's strength to the others'.",
            "",
        ]
    rows = [
        [
            str(r.rank or "-"),
            r.group,
            "-" if r.estimate is None else f"{r.estimate:+.2f} [{num(r.ci_low)}, {num(r.ci_high)}]",
            f"{r.rank_low}-{r.rank_high}",
            rate(r.p_best),
        ]
        for r in b.rows
    ]
    naive = ", ".join(f"{n.group} {rate(n.estimate)}" for n in b.naive)
    top = b.rows[0] if b.rows else None
    if top is not None and top.rank_low == 1 and top.rank_high == 1:
        head = (
            f"Best system by the pairwise judges, their biases taken out: {top.group} (first in {rate(top.p_best)} of "
            "the resamples)."
        )
    else:
        head = "Which system is best is not settled by the pairwise judges: the top rank interval is shared."
    return [
        "## Which system is best (pairwise)",
        "",
        head,
        "",
        f"Strengths in {b.unit_words}; rank intervals hold across all systems at once ({b.n_clusters} clusters).",
        "",
        table(["rank", "system", "strength", "rank interval", "P(best)"], rows),
        "",
        f"Raw win rates (ties half, judges pooled, nothing taken out): {naive}.",
        "",
        *[f"- {w}" for w in b.warnings],
    ]


def side_by_side_section(rows: list[SideBySide]) -> list[str]:
    if not rows:
        return []
    body = [
        [
            r.judge,
            _est(r.pointwise),
            _est(r.pairwise_logit),
            _points(r.pairwise_points),
        ]
        for r in rows
    ]
    outcome = rows[0].pointwise_outcome
    return [
        "## Self-preference, pointwise beside pairwise",
        "",
        f"The same judges judged both ways. Pointwise: the calibrated index on {outcome} (points of the score); "
        "pairwise: the own-family term of the Bradley-Terry fit. Different scales and designs: read the signs and "
        "intervals, not the sizes, against each other.",
        "",
        table(["judge", f"pointwise index ({outcome})", "pairwise own term (logit)", "pairwise own term (rate)"], body),
        "",
    ]


def sections(a: PairwiseAnalysis) -> list[str]:
    return [*judges_section(a), *board_section(a.board)]


def render_pairwise_report(a: PairwiseAnalysis, out: Path) -> None:
    """report.md and report.html of a pairwise table analysed alone; every name escaped as text."""
    shown = PairwiseAnalysis.model_validate(md_strings(a.model_dump()))
    md = "\n".join(
        [
            "# dualjudge report: pairwise judges",
            "",
            f"Table: {shown.table or '-'}; analysed in {shown.analysis_seconds} s.",
            "",
            *sections(shown),
        ]
    )
    write_text(RunDir(out).report_md, md + "\n")
    write_text(RunDir(out).report_html, page(markdown_to_html(md)))


def headline(a: PairwiseAnalysis) -> list[str]:
    """What `dualjudge analyze` prints of a pairwise table: a line per judge, and the best system."""
    estimated = [j for j in a.judges if j.own_logit is not None]
    lines = [
        f"analysed {a.n_rows:,} pairwise rows in {a.analysis_seconds} s; own-family term estimated for "
        f"{len(estimated)} of {len(a.judges)} judges" + ("" if len(estimated) == len(a.judges) else " (report.md says why not)")
    ]
    for j in a.judges:
        raw = f"raw own-choice rate {_rate_ci(j.raw_own_rate)}"
        if j.position_only:
            lines.append(f"  {j.judge}: {raw}; position-only judge, not estimated")
        elif j.own_logit is None:
            lines.append(f"  {j.judge}: {raw}; own term not estimated")
        else:
            lines.append(f"  {j.judge}: {raw}; own term {_est(j.own_logit)} logit, {_points(j.own_points)}")
    board = board_section(a.board)
    if len(board) > 2:
        lines.append(board[2])
    return lines
