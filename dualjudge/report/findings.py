"""The report's opening: what the numbers say, in sentences generated from them, before the tables.

What was run (models, families, signs, variants, verdicts, failures), the dual-judge headline per judge
(point-biserial r, the Type II rate and the visibility where its conditional rate peaks), the
self-preference headline per judge, and the warnings (few signs, judges the design cannot identify,
uneven missing verdicts). With `links`, the numbers open the run explorer on the rows behind them.
"""

from __future__ import annotations

from dualjudge.analysis.shared.bootstrap import MIN_RELIABLE_SIGNS
from dualjudge.analysis.shared.choices import Outcome
from dualjudge.analysis.shared.results import JudgeSummary, Leaderboard, OutcomeSelfPreference, Summary
from dualjudge.analysis.shared.words import words
from dualjudge.report.links import linked, visibility_key
from dualjudge.report.self_preference import belief_sentence, sentence
from dualjudge.report.systems import main_outcome
from dualjudge.report.tables import num, rate
from dualjudge.storage.truncation import Truncation
from dualjudge.tasks.task import plural


def section(summary: Summary, links: bool = False) -> list[str]:
    """The findings, every number read from the summary."""
    parts = ["## Findings", "", _what_was_run(summary), ""]
    variant = summary.judge_variant
    alone = [judge for judge, js in summary.judges.items() if js.point_biserial_n == 0]
    for judge, js in summary.judges.items():
        if js.point_biserial_n:
            parts.append(f"- {_dual_judge(judge, js, links, variant)}")
    if alone:  # said once for every judge it holds for
        parts.append(
            f"- {', '.join(alone)}: no row has both verdicts of the judge, so the dual-judge statistics are not available."
        )
    if summary.judges:
        parts.append("")
    parts += _self_preference(summary, links)
    best = best_system(summary)
    if best:
        parts += [f"- {best}", ""]
    warnings = _warnings(summary)
    if warnings:
        parts += [f"- **Warning:** {w}" for w in warnings] + [""]
    return parts


def estimated_outcome(summary: Summary) -> tuple[Outcome, OutcomeSelfPreference] | None:
    """The outcome whose self-preference the headlines give: the overall score's where it has judges, else the
    equivalence verdict's (a table of equivalence verdicts only); None where neither has."""
    return next(((n, o) for n, o in summary.self_preference.outcomes().items() if o.judges), None)


def _self_preference(summary: Summary, links: bool) -> list[str]:
    """The self-preference headline of the outcome that was estimated: the overall score's, or, where the table
    gives it none (equivalence verdicts only), the equivalence verdict's; not estimable only when neither is."""
    outcomes = summary.self_preference.outcomes()
    if not outcomes:
        return []
    headline = estimated_outcome(summary)
    if headline is None:
        return [f"- Self-preference: not estimable ({'; '.join(f'{n}: {o.reason}' for n, o in outcomes.items())}).", ""]
    name, shown = headline
    label = "Self-preference" if name == "overall" else f"Self-preference ({name} verdicts)"
    parts = []
    for entry in shown.judges:
        text = sentence(entry, name)
        if links and entry.estimate is not None:
            variant = summary.judge_variant
            text += f" ({linked('its own-family verdicts', True, judge=entry.judge, own=1, sort='residual', variant=variant)})"
        parts.append(f"- {label}: {text}")
        parts += [f"  - {line}" for line in [belief_sentence(entry, name)] if line]
    if shown.belief_reason:
        parts.append(f"- Agreement with the judge's own answer is not held fixed: {shown.belief_reason}.")
    return parts + [""]


def _what_was_run(summary: Summary) -> str:
    d = summary.design

    def fam(models: dict[str, str]) -> str:
        return ", ".join(f"{m} ({f})" for m, f in models.items())

    failed = ", ".join(f"{n} {kind}" for kind, n in d.failed_verdicts.items())
    text = (
        f"Run {', '.join(summary.runs) or '-'}: {d.answers} answers from {len(d.system_models)} system model(s), "
        f"{fam(d.system_models)}, with strategies {', '.join(d.strategies)}, on {_where(summary)}; judged by "
        f"{len(d.judge_models)} judge model(s), {fam(d.judge_models)} ({summary.judge_variant} judges), "
        f"{summary.n_rows} answer x judge rows. Failed verdicts: {failed}"
    )
    if summary.missingness.failed_system_calls:
        text += f"; {summary.missingness.failed_system_calls} system calls gave no answer"
    if summary.requests is not None:
        r = summary.requests
        text += f". The run sent {r.sent} requests to its models over {r.sessions} session(s); {r.failed} failed"
    return text + "."


def _where(summary: Summary) -> str:
    """What the answers were about: signs and variants for a dualjudge run, items (each its own bootstrap
    cluster) for a table without sign codes."""
    d, w = summary.design, words()
    if d.signs is None:
        return f"{d.items} items (no sign column: each item is its own bootstrap cluster)"
    if w.unit == w.noun:  # each item its own cluster
        return f"{d.items} {w.units}"
    variants = "variants" if w.paper or summary.by_visibility else plural(w.noun)
    return f"{d.signs} {w.units} and {d.items} {variants}"


def _dual_judge(judge: str, js: JudgeSummary, links: bool, variant: str) -> str:
    r_ci = f" [{num(js.point_biserial_ci[0])}, {num(js.point_biserial_ci[1])}]" if js.point_biserial_ci else ""
    count = linked(str(js.type2.count), links, judge=judge, type="type2", variant=variant)
    text = (
        f"{judge}: its quality and equivalence verdicts correlate at r = {num(js.point_biserial_r)}{r_ci}; "
        f"Type II (not equivalent yet scored good) {count} of {js.point_biserial_n} ({rate(js.type2.rate)})"
    )
    by_level = js.type2_by_visibility.items() if len(js.type2_by_visibility) > 1 else ()
    peaks = [(v, x) for v, x in by_level if x.conditional_rate is not None and x.count > 0]
    if peaks:
        v, x = max(peaks, key=lambda p: (p[1].conditional_rate, -float(p[0])))
        at = linked(f"v = {visibility_key(v)}", links, judge=judge, type="type2", visibility=visibility_key(v), variant=variant)
        text += (
            f"; conditionally on a good score it peaks at {at}: {x.count} of {x.n_high} good scores "
            f"({rate(x.conditional_rate)}) are not equivalent"
        )
    return text + "."


def best_system(summary: Summary) -> str | None:
    """The calibrated leaderboard's headline: the best system model, and whether the naive panel agrees."""
    board = (summary.systems.outcomes().get(main_outcome(summary.systems)) or {}).get("system_model")
    if board is None:
        return None
    if board.blocks:
        return f"Which system is best: {board.reason}. " + " ".join(
            f"In {b.name} ({len(b.judges)} judges): {_best_of(b.board) or 'fewer than two systems'}" for b in board.blocks
        )
    if len(board.naive) < 2:
        return None
    return _best_of(board)


def _best_of(board: Leaderboard) -> str | None:
    if len(board.naive) < 2:
        return None
    if not board.estimable or not board.rows:
        b = board.bounds
        if b is None:
            return f"Which system is best: no calibrated ranking ({board.reason})."
        held = (
            f"{b.top} comes first in every one of {len(b.refits)} refits with the own-family effects of "
            f"{', '.join(b.judges)} held at 0 and at their naive gaps"
            if b.top_holds
            else f"the refits with the own-family effects of {', '.join(b.judges)} held at 0 and at their naive "
            f"gaps do not agree on the top, so these judges leave it open"
        )
        return f"Which system is best: no calibrated ranking ({board.reason}); {held}."
    top = board.rows[0]
    naive_top = board.naive[0].group if board.naive and board.naive[0].rank == 1 else None
    if not board.settled:
        return (
            f"Which system is best is not settled: with the judges' biases taken out {top.group} comes first with "
            f"every judge, but a refit without one judge or family, or with a doubtful judge's own-family effect "
            f"held, puts another first ({'; '.join(board.unsettled)})."
        )
    text = (
        f"Best system model with the judges' biases taken out: {top.group}, {num(top.estimate)} "
        f"[{num(top.ci_low)}, {num(top.ci_high)}] {board.unit}, first in {rate(top.p_best)} of the resamples"
    )
    text += "; the naive panel agrees" if naive_top == top.group else f"; the naive panel puts {naive_top} first"
    if board.changes:
        text += f'; {max(board.changes_total, len(board.changes))} ranking change(s) under "Which system is best"'
    return text + "."


def _warnings(summary: Summary) -> list[str]:
    out = []
    for model, t in sorted((summary.truncation or {}).items()):
        if t.cut:
            out.append(
                Truncation(t.answers, t.cut, t.max_tokens, t.suffices).words(model)
                + ": its answers are judged as cut, and a constrained final line may have been forced in early."
            )
    w = words()
    signs = summary.self_preference.overall.n_signs if summary.self_preference.overall else None
    if signs is not None and signs < MIN_RELIABLE_SIGNS:
        out.append(f"only {signs} {w.units}: {w.unit}-cluster intervals are unreliable below {MIN_RELIABLE_SIGNS} {w.units}.")
    for name, o in summary.self_preference.outcomes().items():
        lost = [j.judge for j in o.judges if j.estimate is None]
        if lost:
            out.append(f"self-preference on {name} is not estimable for {', '.join(lost)} (see its section).")
        warned = [j.judge for j in o.judges if j.estimate is not None and j.warnings]
        if warned:
            out.append(
                f"self-preference on {name}: the estimates of {', '.join(warned)} carry warnings about what may "
                f"bias them (see its section)."
            )
        out += [line for line in o.warnings if f" {w.units}: " not in line]  # the one above says it for all
    return out
