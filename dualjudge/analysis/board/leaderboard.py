"""Which system is best, with the judges' biases taken out: the calibrated leaderboard.

The judge calibration (calibration.py) gives every answer one latent quality, pinned by every judge
that rated it, with each judge's leniency, scale and own-model / same-family effects fitted as separate
terms. A system's calibrated score is the mean latent quality of its answers, put on the score scale
of the panel's average judge: mean leniency + mean scale x mean quality (for `equivalent`, a
probability: the linear probability model). A judge's preference for its own family moves its own
effect term, not the quality of the answers, so it does not lift its family's systems.

Intervals come from the sign-cluster bootstrap that refits the whole model (the self-preference index's
bootstrap: same seed, same resamples of signs). Pairwise differences are Bonferroni-adjusted across the
pairs; each system's rank interval is read off its Bonferroni-adjusted differences with the others
(Mogstad, Romano, Shaikh and Wilhelm 2024, "Inference for ranks": the rank lies between 1 + the number
of systems surely above and U - the number surely below, a marginal 95% set); p_best is the share of
resamples in which the system comes first.

Beside it, the rankings users make today: the naive mean over every verdict, each judge alone, and the
panel without same-family judges (self-exclusion). `changes` lists every pair such a ranking puts in
the other order from a calibrated difference whose adjusted interval excludes zero. Panel sensitivity:
the calibrated ranking refitted without each judge and without each judge family. Where some judge's
own-family effect is in doubt (the design cannot separate it, the fit holds the judge at a boundary or
its neutral judges hardly track quality, the fit does not converge), `bounds` refits with that effect
held at 0 and at its naive gap and reads the ranks that hold across every refit (bounds.py); a design
that cannot be fitted at all still gets its bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from dualjudge.analysis.board.connectivity import Block, blocks
from dualjudge.analysis.board.duplicates import Aliases, duplicate_keys
from dualjudge.analysis.board.items import common_items, ease_gaps, ease_warnings
from dualjudge.analysis.board.ranks import calibrated_board, competition_ranks, ranking_changes
from dualjudge.analysis.pointwise.bounds import bounds, held, held_refits, naive_gaps
from dualjudge.analysis.pointwise.diagnostics import fit_problems, merge_copies
from dualjudge.analysis.pointwise.grid import OUTCOMES, Grid, answer_keys, build_grid, identification, lineage_columns
from dualjudge.analysis.shared import calibration
from dualjudge.analysis.shared.bootstrap import MIN_RELIABLE_SIGNS, t_interval_words
from dualjudge.analysis.shared.choices import N_RESAMPLES, Grouping, Lineage, Outcome
from dualjudge.analysis.shared.table import ANSWER_KEY
from dualjudge.analysis.shared.words import words

GROUPINGS: dict[Grouping, str] = {"system_model": "system model", "system": "strategy", "both": "system model x strategy"}
METHOD = (
    "each system's mean latent answer quality from the judge calibration (leniency, scale and own-model / "
    "same-family effects per judge are separate terms, so a judge's self-preference lifts no system), in the "
    "score units of the panel's average judge: mean leniency + mean scale x the mean quality of its answers"
)


def intervals_words() -> str:
    return (
        f"{t_interval_words()}; differences Bonferroni-adjusted across pairs (t quantile at 1 - 0.05/(2m)); rank "
        f"intervals from each system's adjusted differences with the others (Mogstad, Romano, Shaikh and Wilhelm "
        f"2024), marginal 95%; p_best: the share of bootstrap resamples in which the system is first"
    )


RANKINGS = {"naive": "the naive panel (mean of every verdict)", "self_excluded": "the panel without same-family judges"}
SEPARATOR = " / "  # between a system model and a strategy in a `both` group's name


def judge_ranking(judge: str) -> str:
    return f"judge:{judge}"


def ranking_words(ranking: str) -> str:
    if ranking.startswith("judge:"):
        return f"{ranking.removeprefix('judge:')} alone"
    return RANKINGS[ranking]


# -- the groups ------------------------------------------------------------------------------------------
def _codes(values: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's code and the distinct values as text (hashed once, not converted row by row)."""
    column = values if isinstance(values, pd.Series) else np.asarray(values)
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes, np.array([str(u) for u in uniques], dtype=str)


def group_codes(
    system_model: pd.Series | np.ndarray, strategy: pd.Series | np.ndarray, by: Grouping
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group as a code, and each code's name: its system model, its strategy, or both joined by
    SEPARATOR (the text is made for the distinct groups only)."""
    if by == "system_model":
        return _codes(system_model)
    if by == "system":
        return _codes(strategy)
    mc, mn = _codes(system_model)
    sc, sn = _codes(strategy)
    width = max(len(sn), 1)
    pair, codes = np.unique(mc.astype(np.int64) * width + sc, return_inverse=True)
    names = np.array([f"{mn[p // width]}{SEPARATOR}{sn[p % width]}" for p in pair], dtype=str)
    return codes.reshape(-1), names


def group_labels(system_model: pd.Series | np.ndarray, strategy: pd.Series | np.ndarray, by: Grouping) -> np.ndarray:
    """Each row's group as text (group_codes)."""
    codes, names = group_codes(system_model, strategy, by)
    return np.asarray(names[codes])


def _answer_parts(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """(system model, strategy) of each answer of the grid, from its key."""
    parts = [a.split("\x1f") for a in grid.answers]
    i_model, i_system = ANSWER_KEY.index("system_model"), ANSWER_KEY.index("system")
    return np.array([p[i_model] for p in parts], dtype=str), np.array([p[i_system] for p in parts], dtype=str)


@dataclass(frozen=True)
class Units:
    """The finest groups (system model x strategy) of the grid's answers, and each grouping's groups as
    a 0/1 matrix over them."""

    fine: list[str]
    codes: np.ndarray  # (A,) fine unit of each answer
    groups: dict[Grouping, list[str]]
    maps: dict[Grouping, sparse.csr_matrix]  # (U_fine, U_by), one 1 per row
    code_of: dict[str, int]  # each answer key's fine unit

    @classmethod
    def of(cls, grid: Grid) -> Units:
        models, strategies = _answer_parts(grid)
        both = group_labels(models, strategies, "both")
        fine, codes = np.unique(both, return_inverse=True)
        first = {b: i for i, b in reversed(list(enumerate(both)))}
        groups: dict[Grouping, list[str]] = {}
        maps: dict[Grouping, np.ndarray] = {}
        for by in GROUPINGS:
            of_fine = group_labels(models[[first[f] for f in fine]], strategies[[first[f] for f in fine]], by)
            names = sorted(set(of_fine.tolist()))
            groups[by] = names
            maps[by] = _onehot(np.searchsorted(np.array(names), of_fine), len(names))
        codes = codes.reshape(-1).astype(int)
        return cls(list(fine), codes, groups, maps, dict(zip(grid.answers, codes.tolist())))

    def of_answers(self, answers: list[str]) -> Units:
        """The same groups for a subset of the answers (a grid without some judges' verdicts)."""
        index = pd.Index(list(self.code_of))
        codes = np.fromiter(self.code_of.values(), dtype=int, count=len(self.code_of))[index.get_indexer(answers)]
        return Units(self.fine, codes, self.groups, self.maps, self.code_of)


# -- calibrated scores and their bootstrap -----------------------------------------------------------
@dataclass
class Draws:
    """Per fine unit, the sum of its answers' latent quality and their count, and the panel's mean
    leniency and scale: the full fit's (index 0) and every bootstrap refit's (1..B)."""

    total: np.ndarray  # (1+B, U)
    count: np.ndarray  # (1+B, U)
    leniency: np.ndarray  # (1+B,)
    scale: np.ndarray  # (1+B,)

    def scores(self, mapping: np.ndarray) -> np.ndarray:
        """(1+B, groups) each group's score: mean leniency + mean scale x mean quality of its answers."""
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = _times(self.total, mapping) / _times(self.count, mapping)
        return np.asarray(self.leniency[:, None] + self.scale[:, None] * mean)


def _unit_statistics(sums: calibration.Sums, f: calibration.Fit, n_units: int) -> Draws:
    q1 = calibration.quality_sums(sums, f.a, f.b)  # (B, T) sum of quality over each type's answers
    assert sums.types.unit is not None
    onehot = _onehot(sums.types.unit, n_units)  # (T, U)
    return Draws(_times(q1, onehot), _times(sums.n, onehot), f.leniency.mean(axis=1), f.scale.mean(axis=1))


def _onehot(codes: np.ndarray, n: int) -> sparse.csr_matrix:
    """(len(codes), n) with a 1 at each row's code: sparse, so thousands of systems cost no dense square."""
    codes = np.asarray(codes, dtype=int).reshape(-1)
    return sparse.csr_matrix((np.ones(len(codes)), (np.arange(len(codes)), codes)), shape=(len(codes), n))


def _times(dense: np.ndarray, onehot: sparse.csr_matrix) -> np.ndarray:
    """dense @ onehot, for a dense (rows, T) and a sparse (T, U)."""
    return np.asarray((onehot.T @ np.asarray(dense, dtype=float).T).T)


def calibrated_draws(
    grid: Grid, units: Units, scale_free: bool, n_resamples: int, seed: int, fixed: np.ndarray | None = None
) -> tuple[Draws, calibration.Fit]:
    design = calibration.Design(**{**grid.design.__dict__, "unit": units.codes})
    by_unit = calibration.Types.of(design)  # the judges are fitted on the plain types (as self-preference fits them)
    fits = calibration.refits(calibration.Types.of(grid.design), scale_free, n_resamples, seed, fixed, read_on=by_unit)
    full_sums, full = next(fits)
    parts = [_unit_statistics(full_sums, full, len(units.fine))]
    parts += [_unit_statistics(sums, refit, len(units.fine)) for sums, refit in fits]
    return Draws(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("total", "count", "leniency", "scale"))), full


def point_scores(grid: Grid, units: Units, scale_free: bool, fixed: np.ndarray | None = None) -> dict[Grouping, dict[str, float]]:
    """Each grouping's calibrated scores from one fit (no bootstrap); `fixed`: effects held (calibration.fit)."""
    draws, _ = calibrated_draws(grid, units, scale_free, 0, 0, fixed)
    return {by: dict(zip(units.groups[by], draws.scores(units.maps[by])[0].tolist())) for by in GROUPINGS}


def calibrated_scores(
    frame: pd.DataFrame, outcome: Outcome = "overall", lineage: Lineage = "family"
) -> dict[Grouping, dict[str, float]] | None:
    """Each grouping's calibrated scores from one fit, or None where no calibrated ranking can be made."""
    if frame["judge_model"].nunique() < 2:
        return None
    grid, units, _, _ = _fit_or_reason(frame, outcome, lineage)
    if units is None:
        return None
    return point_scores(grid, units, grid.design.n_judges >= 3)


# -- the rankings users make today -------------------------------------------------------------------
def _rated(frame: pd.DataFrame, outcome: Outcome) -> pd.DataFrame:
    value, status = OUTCOMES[outcome]
    return frame[frame[status] == "ok"].assign(_y=lambda f: f[value].astype("float64"))


def mean_ranking(rows: pd.DataFrame, by: Grouping, groups: list[str]) -> list[dict[str, Any]]:
    """[{group, estimate, rank}] of the mean verdict per group, best first (a group without verdicts last)."""
    codes, names = group_codes(rows["system_model"], rows["system"], by)
    y = rows["_y"].to_numpy(dtype=float)
    ok = np.isfinite(y)  # as pandas' mean, a missing value counts for nothing
    codes, y = codes[ok], y[ok]
    counts = np.bincount(codes, minlength=len(names))
    sums = np.bincount(codes, weights=y, minlength=len(names))
    # rounded to 12 decimals: the order of summation must not split a tie (a mean is never that precise)
    means = {str(n): round(float(sums[i] / counts[i]), 12) for i, n in enumerate(names) if counts[i]}
    values: dict[str, float | None] = {g: means.get(g) for g in groups}
    ranks = competition_ranks(values)
    out = [{"group": g, "estimate": values[g], "rank": ranks[g]} for g in groups]
    return sorted(out, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["group"]))


def plain_rankings(
    frame: pd.DataFrame, outcome: Outcome, lineage: Lineage, by: Grouping, groups: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The naive ranking, the self-excluded one, and each judge's own: ranking name -> rows."""
    rated = _rated(frame, outcome)
    jf, gf = lineage_columns(rated, lineage)
    rated = rated[["system_model", "system", "judge_model", "_y"]]  # what a ranking reads: the groupby moves no more
    out = {"naive": mean_ranking(rated, by, groups), "self_excluded": mean_ranking(rated[(jf != gf).to_numpy()], by, groups)}
    for judge, rows in rated.groupby(rated["judge_model"].astype(str), sort=True):
        out[judge_ranking(str(judge))] = mean_ranking(rows, by, groups)
    return out


def change_sentence(c: dict[str, Any], unit: str) -> str:
    points = unit == "points"

    def amount(v: float) -> str:
        return f"{v:.2f}" if points else f"{100 * v:.1f}"

    size = "points" if points else "percentage points"
    return (
        f"{ranking_words(c['ranking'])} ranks {c['lower']} above {c['higher']}; with the judges' biases taken out "
        f"{c['higher']} is ahead by {amount(c['difference'])} {size} (95% CI {amount(c['ci_low'])} to "
        f"{amount(c['ci_high'])}, adjusted across pairs)"
    )


# -- the whole leaderboard of one outcome --------------------------------------------------------------
def _blocking(grid: Grid) -> dict[str, str]:
    """Judges whose own-family effect the design cannot separate from their families' systems' quality
    (a judge without own-family answers has no such effect, so it blocks nothing)."""
    d = grid.design
    has_own = {grid.judges[j] for j in range(d.n_judges) if (d.terms[:, j].sum(axis=0) * d.present[j]).any()}
    return {j: why for j, why in identification(grid).items() if j in has_own}


def _reason(grid: Grid, outcome: Outcome) -> str | None:
    """Why no calibrated ranking can be made from the grid, or None."""
    if grid.design.n_answers == 0:
        return f"no answer has {outcome} verdicts from two judges"
    if grid.design.n_clusters < 2:
        return f"{words().unit}-cluster intervals need at least two {words().units}"
    blocked = _blocking(grid)
    if blocked:
        return (
            "the design cannot separate these judges' self-preference from their families' answer quality, so no "
            "calibrated ranking can be made: " + "; ".join(f"{j}: {why}" for j, why in blocked.items())
        )
    return None


def _fit_or_reason(frame: pd.DataFrame, outcome: Outcome, lineage: Lineage) -> tuple[Grid, Units | None, str | None, list[str]]:
    """The grid (a judge that copies another merged into it: merged_grid), its units where a calibrated ranking
    can be made (else None and why not), and a line for each judge merged."""
    grid, merged = merged_grid(frame, outcome, lineage)
    reason = _reason(grid, outcome)
    return (grid, None, reason, merged) if reason else (grid, Units.of(grid), None, merged)


def merged_grid(frame: pd.DataFrame, outcome: Outcome, lineage: Lineage) -> tuple[Grid, list[str]]:
    """The grid with every judge that copies another merged into it, as the self-preference fit merges it, and
    the line that says so for each."""
    grid = build_grid(frame, outcome, lineage)
    kept, lines = merge_copies(frame, grid, outcome)
    return (build_grid(kept, outcome, lineage) if lines else grid), lines


def _doubts(grid: Grid, full: calibration.Fit, free_scales: bool) -> dict[str, str]:
    """Judges with own-family answers whose own-family effect the full fit cannot pin, and why."""
    d = grid.design
    has_own = {grid.judges[j] for j in range(d.n_judges) if (d.terms[:, j].sum(axis=0) * d.present[j]).any()}
    out = {j: why for j, why in (fit_problems(grid, full)[0] if free_scales else {}).items() if j in has_own}
    if not full.converged:
        out.update({j: f"the fit did not converge in {full.sweeps} sweeps" for j in sorted(has_own) if j not in out})
    return out


def _bounds(
    grid: Grid,
    units: Units,
    doubts: dict[str, str],
    blocked: set[str],
    full: dict[Grouping, dict[str, float]] | None,
    leave_outs: dict[Grouping, list[dict[str, Any]]] | None,
    limits: tuple[float, float],
) -> dict[Grouping, dict[str, Any]]:
    """The board's bounds over the doubtful judges' own-family effects (analysis/pointwise/bounds.py), on the scale."""
    free_scales = grid.design.n_judges >= 3
    refits = held_refits(doubts, blocked, naive_gaps(grid))

    def score(values: dict[str, float]) -> dict[Grouping, dict[str, float]] | None:
        try:
            return point_scores(grid, units, free_scales, held(grid, values))
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return None

    return bounds(doubts, refits, score, GROUPINGS, full, leave_outs, limits)


def sensitivity(grid: Grid, units: Units, outcome: Outcome, top: dict[Grouping, str | None]) -> dict[Grouping, dict[str, Any]]:
    """The calibrated ranking without each judge and without each judge family (point fits on the full
    grid less their verdicts), and how often its top group differs from the full panel's."""
    families = sorted(set(grid.judge_family.values()))
    out: dict[Grouping, dict[str, Any]] = {
        by: {"leave_one_judge_out": [], "leave_one_family_out": [], "top_changes": 0, "leave_outs": 0} for by in GROUPINGS
    }
    leave_outs = [("leave_one_judge_out", j, {j}) for j in grid.judges] + [
        ("leave_one_family_out", f, {j for j, g in grid.judge_family.items() if g == f}) for f in families if len(families) > 1
    ]
    for kind, name, gone in leave_outs:
        sub = grid.without(gone, with_long=False)
        n_left = sub.design.n_judges
        reason = _reason(sub, outcome) if n_left >= 2 else f"{n_left} judge left: no panel to calibrate"
        scores = point_scores(sub, units.of_answers(sub.answers), n_left >= 3) if reason is None else None
        for by in GROUPINGS:
            entry: dict[str, Any] = {"left_out": name, "ranking": None, "top": None, "reason": reason}
            if scores is not None:
                ranked = {g: v for g, v in scores[by].items() if np.isfinite(v)}  # a group left without answers: none
                order = sorted(ranked, key=lambda g: (-ranked[g], g))
                entry.update(ranking=order, top=order[0] if order else None)
                out[by]["leave_outs"] += 1
                out[by]["top_changes"] += int(entry["top"] != top[by])
            out[by][kind].append(entry)
    return out


def answers_of(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per answer of the table: its key (the grid's, build_grid), system model and strategy."""
    code, keys = answer_keys(frame)  # codes in order of first appearance
    _, first = np.unique(code, return_index=True)
    return pd.DataFrame(
        {
            "key": keys,
            "system_model": frame["system_model"].to_numpy()[first],
            "system": frame["system"].to_numpy()[first],
        },
        index=first,
    )


def _left_out(answers: pd.DataFrame, out_of_grid: np.ndarray, outcome: Outcome, by: Grouping) -> list[str]:
    """Groups some of whose answers have fewer than two verdicts (and so no calibrated quality)."""
    labels = group_labels(answers["system_model"], answers["system"], by)
    totals = pd.Series(1, index=labels).groupby(level=0).sum()
    missing = pd.Series(out_of_grid.astype(int), index=labels).groupby(level=0).sum()
    return [
        f"{group}: {missing[group]} of {totals[group]} answers have fewer than two {outcome} verdicts and are left "
        f"out of its calibrated score (the plain rankings use every verdict)"
        for group in sorted(missing.index)
        if missing[group]
    ]


def leaderboard(
    frame: pd.DataFrame,
    outcome: Outcome = "overall",
    lineage: Lineage = "family",
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    scale_max: float = 10.0,
    aliases: Aliases = (),
) -> dict[Grouping, dict[str, Any]]:
    """One outcome's leaderboard for each grouping (system model, strategy, both). A table of disconnected
    blocks (connectivity.py) gets one board per block and none across them. `aliases`: pairs of keys declared
    to name one model (flagged on the board: duplicates.py)."""
    parts = blocks(frame)
    if len(parts) > 1:
        return _blocked(frame, parts, outcome, lineage, n_resamples, seed, scale_max, aliases)
    return _board(frame, outcome, lineage, n_resamples, seed, scale_max, aliases)


def _blocked(
    frame: pd.DataFrame,
    parts: list[Block],
    outcome: Outcome,
    lineage: Lineage,
    n_resamples: int,
    seed: int,
    scale_max: float,
    aliases: Aliases,
) -> dict[Grouping, dict[str, Any]]:
    """The boards of a disconnected design: each block ranked on its own; no row, mean or sentence across blocks."""
    reason = (
        f"the table is {len(parts)} blocks that share no judge, system or item, so nothing puts their scores on one "
        f"scale: each block is ranked on its own, never against the others"
    )
    per_block = [(part, _board(frame[part.rows], outcome, lineage, n_resamples, seed, scale_max, aliases)) for part in parts]
    out: dict[Grouping, dict[str, Any]] = {}
    for by in GROUPINGS:
        board = _empty_board(outcome, by, reason)
        board["blocks"] = [
            {"name": part.name, "words": part.words(), "judges": part.judges, "systems": part.systems, "board": boards[by]}
            for part, boards in per_block
        ]
        board["warnings"] = [f"{reason}: {'; '.join(part.words() for part in parts)}"]
        out[by] = board
    return out


def _empty_board(outcome: Outcome, by: Grouping, reason: str | None) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "by": by,
        "unit": "points" if outcome == "overall" else "probability",
        "unit_words": None,
        "estimable": False,
        "reason": reason,
        "n_signs": None,
        "rows": [],
        "differences": [],
        "naive": [],
        "self_excluded": [],
        "judges": {},
        "common_items": [],
        "common_items_n": 0,
        "changes": [],
        "changes_total": 0,
        "sensitivity": None,
        "bounds": None,
        "settled": True,
        "unsettled": [],
        "blocks": [],
        "warnings": [],
    }


def _board(
    frame: pd.DataFrame, outcome: Outcome, lineage: Lineage, n_resamples: int, seed: int, scale_max: float, aliases: Aliases
) -> dict[Grouping, dict[str, Any]]:
    """One connected table's leaderboard for each grouping."""
    unit = "points" if outcome == "overall" else "probability"
    limits = (0.0, scale_max if outcome == "overall" else 1.0)
    grid, units, reason, merged = _fit_or_reason(frame, outcome, lineage)
    flagged = [*merged, *duplicate_keys(frame, outcome, aliases)]
    boards: dict[Grouping, dict[str, Any]] = {}
    rated = _rated(frame, outcome)
    item_warnings: dict[Grouping, list[str]] = {}
    for by in GROUPINGS:
        groups = sorted(set(group_labels(frame["system_model"], frame["system"], by).tolist()))
        plain = plain_rankings(frame, outcome, lineage, by, groups)
        codes, names = group_codes(rated["system_model"], rated["system"], by)
        labels = pd.Categorical.from_codes(codes, categories=names) if len(names) else pd.Categorical([])
        shared = common_items(rated, labels, groups)
        n_common = int(rated.loc[shared, "item_id"].nunique())
        common = mean_ranking(rated[shared], by, groups) if n_common else []
        item_warnings[by] = ease_warnings(ease_gaps(rated, labels), outcome, n_common)
        boards[by] = {
            **_empty_board(outcome, by, reason),
            "naive": plain.pop("naive"),
            "self_excluded": plain.pop("self_excluded"),
            "judges": {name.removeprefix("judge:"): rows for name, rows in plain.items()},
            "common_items": common,
            "common_items_n": n_common,
            "warnings": ([] if reason is None else [f"no calibrated ranking: {reason}"]) + flagged + item_warnings[by],
        }
    if units is None:
        blocked = _blocking(grid) if grid.design.n_answers and grid.design.n_clusters >= 2 else {}
        if blocked:
            held_boards = _bounds(grid, Units.of(grid), blocked, set(blocked), None, None, limits)
            for by in GROUPINGS:
                boards[by]["bounds"] = held_boards[by]
        return boards
    d = grid.design
    g, n_judges = d.n_clusters, d.n_judges
    free_scales = n_judges >= 3
    draws, full = calibrated_draws(grid, units, free_scales, n_resamples, seed)
    answers = answers_of(frame)
    out_of_grid = ~answers["key"].isin(grid.answers).to_numpy(dtype=bool)
    warnings = _fit_warnings(grid, full, free_scales, g)
    lam, scale = float(draws.leniency[0]), float(draws.scale[0])
    if outcome == "overall":
        words = (
            f"{outcome} score points of the panel's average judge (leniency {lam:.2f} and scale {scale:.2f} points "
            f"per unit of latent quality, averaged over {n_judges} judges: {', '.join(grid.judges)})"
        )
    else:
        words = (
            f"probability of an equivalent verdict from the panel's average judge (linear probability model; "
            f"leniency {lam:.3f} and scale {scale:.3f}, averaged over {n_judges} judges: {', '.join(grid.judges)})"
        )
    top: dict[Grouping, str | None] = {}
    for by in GROUPINGS:
        b = boards[by]
        scores = draws.scores(units.maps[by])
        board = calibrated_board(scores, units.groups[by], g)
        rows = board.rows
        b.update(
            estimable=True,
            reason=None,
            unit_words=words,
            n_signs=g,
            rows=rows,
            differences=board.differences,
            warnings=[*flagged, *warnings, *_left_out(answers, out_of_grid, outcome, by), *item_warnings[by]],
        )
        b["changes"], b["changes_total"] = ranking_changes(
            board,
            {"naive": b["naive"], "self_excluded": b["self_excluded"], **{judge_ranking(j): r for j, r in b["judges"].items()}},
            lambda c: change_sentence(c, unit),
        )
        degenerate = [r["group"] for r in rows if r["se"] is not None and r["se"] == 0]
        if degenerate:
            b["warnings"].append(
                f"{', '.join(degenerate)}: the score does not move across resamples (a degenerate fit, not a precise one)"
            )
        top[by] = rows[0]["group"] if rows and rows[0]["rank"] == 1 else None
    for by, panel in sensitivity(grid, units, outcome, top).items():
        boards[by]["sensitivity"] = panel
    doubts = _doubts(grid, full, free_scales)
    if doubts:
        full_scores = {by: dict(zip(units.groups[by], draws.scores(units.maps[by])[0].tolist())) for by in GROUPINGS}
        leave_outs = {
            by: [*boards[by]["sensitivity"]["leave_one_judge_out"], *boards[by]["sensitivity"]["leave_one_family_out"]]
            for by in GROUPINGS
        }
        for by, b in _bounds(grid, units, doubts, set(), full_scores, leave_outs, limits).items():
            boards[by]["bounds"] = b
    for settled in boards.values():
        settle(settled, unit)
    return boards


def refit_rankings(board: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(name, ranking) of every refit the board was read beside: one judge or family left out, a doubtful
    judge's own-family effect held at 0 or at its naive gap."""
    s, b = board["sensitivity"] or {}, board["bounds"] or {}
    out = [
        (f"without {x['left_out']}", x["ranking"]) for x in (*s.get("leave_one_judge_out", []), *s.get("leave_one_family_out", []))
    ]
    out += [(f"with the {x['name']}", x["ranking"]) for x in b.get("refits", [])]
    return [(name, ranking) for name, ranking in out if ranking]


def settle(board: dict[str, Any], unit: str) -> None:
    """One answer on every surface, in place: what the refits and bounds contradict is not shown as settled.
    Each row's rank interval also covers its rank in every refit; when a refit puts another group first, no
    group gets a probability of being best and `unsettled` says which refits; a ranking change that some refit
    reverses says so in its sentence and is marked not settled."""
    rows = board["rows"]
    refits = refit_rankings(board)
    for r in rows:
        ranks = [order.index(r["group"]) + 1 for _, order in refits if r["group"] in order]
        if ranks and r["rank"] is not None:
            r["rank_low"], r["rank_high"] = min(r["rank_low"], *ranks), max(r["rank_high"], *ranks)
    top = rows[0]["group"] if rows and len(rows) > 1 else None
    board["unsettled"] = [f"{name}: {order[0]} first" for name, order in refits if top is not None and order[0] != top]
    board["settled"] = not board["unsettled"]
    if not board["settled"]:
        for r in rows:
            r["p_best"] = None
    for c in board["changes"]:
        reversed_by = [
            name
            for name, order in refits
            if c["higher"] in order and c["lower"] in order and order.index(c["lower"]) < order.index(c["higher"])
        ]
        c["settled"] = not reversed_by
        if reversed_by:
            c["sentence"] = (
                f"{change_sentence(c, unit)} in the full fit, but the refit {reversed_by[0]} puts {c['lower']} ahead "
                f"({len(reversed_by)} refit(s) in all), so the order is not settled"
            )


def _fit_warnings(grid: Grid, full: calibration.Fit, free_scales: bool, n_signs: int) -> list[str]:
    out = []
    if n_signs < MIN_RELIABLE_SIGNS:
        w = words()
        out.append(f"only {n_signs} {w.units}: the {w.unit}-cluster intervals are unreliable below {MIN_RELIABLE_SIGNS} {w.units}")
    if not free_scales:
        out.append(
            "two judges cannot pin each other's use of the scale, so the scales are fixed at 1 (the "
            "answer-matched model): a judge that compresses or stretches the scale tilts the scores"
        )
    elif not full.converged:
        out.append(f"the calibration fit did not converge in {full.sweeps} sweeps: read the scores with care")
    if free_scales:
        problems, _ = fit_problems(grid, full)
        out += [f"{judge}: {why}" for judge, why in problems.items()]
    return out


def systems(
    frame: pd.DataFrame,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    outcomes: tuple[Outcome, ...] = ("overall", "equivalent"),
    scale_max: float = 10.0,
    aliases: Aliases = (),
) -> dict[str, Any]:
    """summary.json's `systems`: the leaderboard of each outcome and grouping (docs/summary.md)."""
    result: dict[str, Any] = {
        "lineage": lineage,
        "method": METHOD,
        "interval": intervals_words(),
        "resamples": n_resamples,
        "seed": seed,
    }
    for outcome in outcomes:
        result[outcome] = leaderboard(frame, outcome, lineage, n_resamples, seed, scale_max, aliases)
    return result


CLI_ROW = ("group", "estimate", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "p_best")
CLI_CHANGE = ("higher", "lower", "ranking", "difference", "ci_low", "ci_high", "settled")


def cli_json(board: dict[str, Any], variant: str) -> dict[str, Any]:
    """The `dualjudge stats systems --json` object."""
    return {
        "outcome": board["outcome"],
        "by": board["by"],
        "unit": board["unit"],
        "unit_words": board["unit_words"],
        "judge_variant": variant,
        "estimable": board["estimable"],
        "reason": board["reason"],
        "n_signs": board["n_signs"],
        "method": METHOD,
        "interval": intervals_words(),
        "rows": [{k: r[k] for k in CLI_ROW} for r in board["rows"]],
        "naive": board["naive"],
        "self_excluded": board["self_excluded"],
        "judges": board["judges"],
        "common_items": board["common_items"],
        "common_items_n": board["common_items_n"],
        "differences": board["differences"],
        "changes": [{k: c[k] for k in CLI_CHANGE} | {"sentence": c["sentence"]} for c in board["changes"]],
        "changes_total": board["changes_total"],
        "sensitivity": board["sensitivity"],
        "bounds": board["bounds"],
        "settled": board["settled"],
        "unsettled": board["unsettled"],
        "blocks": [
            {k: v for k, v in b.items() if k != "board"} | {"board": cli_json(b["board"], variant)} for b in board["blocks"]
        ],
        "warnings": board["warnings"],
    }
