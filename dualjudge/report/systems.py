"""The report's "Which system is best" section, from the summary's calibrated leaderboard (`systems`)."""

from __future__ import annotations

from dualjudge.analysis.shared.choices import Outcome
from dualjudge.analysis.shared.results import Bounds, Leaderboard, LeaderRow, RankedMean, Simulation, Systems
from dualjudge.report.tables import num, table

KINDS = {"system_model": "system model", "system": "strategy"}
PLURAL = {"system model": "system models", "strategy": "strategies"}
MAX_SENTENCES = 12  # ranking changes shown in words; the rest are in summary.json


def _rank(row: LeaderRow) -> str:
    if row.rank is None:
        return "-"
    span = "" if row.rank_low == row.rank_high else f" [{row.rank_low}-{row.rank_high}]"
    return f"{row.rank}{span}"


def _calibrated(row: LeaderRow, digits: int) -> str:
    if row.estimate is None:
        return "-"
    iv = "" if row.ci_low is None else f" [{num(row.ci_low, digits)}, {num(row.ci_high, digits)}]"
    return f"{num(row.estimate, digits)}{iv}"


def _plain(rows: list[RankedMean], group: str, digits: int) -> str:
    r = next((x for x in rows if x.group == group), None)
    return "-" if r is None or r.estimate is None else f"{num(r.estimate, digits)} ({r.rank})"


def _p_best(row: LeaderRow) -> str:
    return "-" if row.p_best is None else f"{100 * row.p_best:.0f}%"


def section(systems: Systems, simulation: Simulation | None = None) -> list[str]:
    parts = [
        "## Which system is best (the judges' biases taken out)",
        "",
        f"Calibrated score: {systems.method}. Intervals: {systems.interval}; {systems.resamples} resamples.",
        "",
    ]
    outcomes = systems.outcomes()
    main = main_outcome(systems)
    boards = outcomes.get(main) or {}
    first = boards.get("system_model")
    if first is None:
        return parts + ["Not computed: the table has no verdicts to rank by.", ""]
    if first.blocks:
        parts += [f"The table is {len(first.blocks)} disconnected blocks: {first.reason}.", ""]
        for i, block in enumerate(first.blocks):
            parts += [f"### {block.name[0].upper()}{block.name[1:]}", "", f"{block.words}.", ""]
            per_block = {by: b.blocks[i].board for by, b in boards.items() if len(b.blocks) > i}
            other = {by: b.blocks[i].board for by, b in (outcomes.get("equivalent") or {}).items() if len(b.blocks) > i}
            parts += _boards(per_block, other if main == "overall" else {}, main, simulation)
        return parts
    return parts + _boards(boards, outcomes.get("equivalent") or {} if main == "overall" else {}, main, simulation)


def main_outcome(systems: Systems) -> Outcome:
    """What the board ranks by: the 0-10 score where the table has it, else the binary verdict."""
    overall = (systems.overall or {}).get("system_model")
    has = overall is not None and (overall.estimable or overall.blocks or any(r.estimate is not None for r in overall.naive))
    return "overall" if has or systems.equivalent is None else "equivalent"


def _boards(
    boards: dict[str, Leaderboard], equivalent: dict[str, Leaderboard], main: Outcome, simulation: Simulation | None
) -> list[str]:
    """One connected table's boards: the table of every grouping, then each grouping's words and warnings."""
    parts: list[str] = []
    first = boards.get("system_model")
    assert first is not None
    if not first.estimable:
        held = [
            line for by, kind in KINDS.items() if (b := boards.get(by)) and b.bounds for line in bound_words(b.bounds, kind, False)
        ]
        return parts + [f"No calibrated ranking: {first.reason}.", "", *held, *_plain_only(boards), *_board_warnings(boards)]
    if main == "equivalent":
        parts += ["The table has binary verdicts only: the board ranks by the probability of an equivalent verdict.", ""]
    parts += [f"Scores are in {first.unit_words}; own-family effects are removed.", ""]
    planted = simulation.truth_systems if simulation else None
    digits = 2 if main == "overall" else 3
    header = [
        "",
        "system",
        f"calibrated {main} [95% CI]",
        "rank [interval]",
        "P(best)",
        "naive mean (rank)",
        "without same-family judges (rank)",
    ]
    if equivalent:
        header += ["equivalent, calibrated", "equivalent rank"]
    if planted:
        header.insert(3, f"planted {main} (this sample)")
    rows = []
    for by, kind in KINDS.items():
        board, eq = boards.get(by), equivalent.get(by)
        if board is None or not board.rows:
            continue
        eq_rows = {r.group: r for r in eq.rows} if eq and eq.estimable else {}
        for r in board.rows:
            e = eq_rows.get(r.group)
            row = [
                kind,
                r.group,
                _calibrated(r, digits),
                _rank(r),
                _p_best(r),
                _plain(board.naive, r.group, digits),
                _plain(board.self_excluded, r.group, digits),
            ]
            if equivalent:
                row += [_calibrated(e, 3) if e else "-", _rank(e) if e else "-"]
            if planted:
                row.insert(3, num(planted.get(main, {}).get(by, {}).get(r.group)))
            rows.append(row)
    parts += [table(header, rows), ""]
    for by, kind in KINDS.items():
        board = boards.get(by)
        if board is not None and board.estimable:
            parts += _words(board, kind)
    return parts + _board_warnings(boards)


def _board_warnings(boards: dict[str, Leaderboard]) -> list[str]:
    """Every warning the boards carry (summary.json holds the same), each once."""
    seen: set[str] = set()
    out = []
    for board in boards.values():
        for w in board.warnings:
            if w not in seen:
                seen.add(w)
                out.append(f"**Warning ({KINDS.get(board.by, board.by)}):** {w}")
    return out + ([""] if out else [])


def bound_words(b: Bounds, kind: str, leave_outs: bool = True) -> list[str]:
    """The bounds in words: whose effect is in doubt, what the refits hold, each group's rank and score range."""
    names = ", ".join(b.judges)
    held = (
        f"{b.top} is first in every refit"
        if b.top_holds
        else "no single group is first in every refit, so no best " + kind + " is named"
    )
    ranks = "; ".join(
        f"{r.group} {r.rank_best}"
        + ("" if r.rank_best == r.rank_worst else f"-{r.rank_worst}")
        + ("" if (scores := r.score_range()) is None else f" ({scores})")
        for r in b.rows
    )
    return [
        f"- Bounds ({kind}): the data do not pin the own-family effect of {names}, so the scores are refitted with "
        f"each such effect at 0 and at its naive gap ({len(b.refits)} refits"
        + (", read beside the leave-one-out refits" if leave_outs else "")
        + f"): {held}. Rank range (score range over the held refits): {ranks}.",
        *[f"  - {judge}: {why}" for judge, why in b.judges.items()],
        "",
    ]


def _words(board: Leaderboard, kind: str) -> list[str]:
    out = []
    top = board.rows[0] if board.rows else None
    if top is not None and len(board.rows) > 1 and not board.settled:
        out.append(
            f"- No single best {kind}: with every judge {top.group} comes first, but a refit without one judge or "
            f"family, or with a doubtful judge's own-family effect held, changes the top ({'; '.join(board.unsettled)}), "
            f"so no probability of being best is given and each rank interval covers the refits' ranks."
        )
    elif top is not None and len(board.rows) > 1:
        out.append(
            f"- Best {kind}: {top.group}, {_calibrated(top, 2)} {board.unit}, first in "
            f"{_p_best(top)} of the bootstrap resamples (rank interval {top.rank_low}-{top.rank_high})."
        )
    changes = board.changes
    if changes:
        shown = changes[:MAX_SENTENCES]
        out += [f"- Ranking change: {c.sentence}." for c in shown]
        total = max(board.changes_total, len(changes))
        if total > len(shown):
            listed = "" if total == len(changes) else f"; the {len(changes)} largest are listed there"
            out.append(f"- ... and {total - len(shown)} more ranking changes (summary.json, `systems`{listed}).")
    elif len(board.rows) > 1:
        out.append(
            f"- No plain ranking (naive, without same-family judges, any judge alone) puts a pair of "
            f"{PLURAL[kind]} in the other order from a calibrated difference whose adjusted interval excludes zero."
        )
    s = board.sensitivity
    if s is not None and s.leave_outs:
        moved = [
            f"without {x.left_out}: {x.top} first"
            for x in (*s.leave_one_judge_out, *s.leave_one_family_out)
            if x.top is not None and top and x.top != top.group
        ]
        text = (
            f"- Panel sensitivity ({kind}): leaving out one judge or one judge family at a time, the top {kind} "
            f"changes in {s.top_changes} of {s.leave_outs} refits"
        )
        out.append(text + (f" ({'; '.join(moved)})." if moved else "."))
    if board.bounds is not None:
        out += bound_words(board.bounds, kind)[:-1]
    return out + ([""] if out else [])


def _plain_only(boards: dict[str, Leaderboard]) -> list[str]:
    rows = []
    for by, kind in KINDS.items():
        board = boards.get(by)
        if board is None:
            continue
        rows += [[kind, r.group, _plain(board.naive, r.group, 2), _plain(board.self_excluded, r.group, 2)] for r in board.naive]
    if not rows:
        return []
    return [
        "The plain rankings, for reference (they keep every judge's biases):",
        "",
        table(["", "system", "naive mean (rank)", "without same-family judges (rank)"], rows),
        "",
    ]
