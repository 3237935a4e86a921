"""Ranks from bootstrap draws of group scores: every pairwise difference at once, rank intervals, P(best), and
the pairs a plain ranking orders against the calibrated one. Written on (U, U) arrays, so a board of 5,000
systems takes seconds, not hours.

- The standard error of each difference a - b is the standard deviation of its draws over the resamples
  where both are finite (bootstrap.cluster_se's rule), from sums over the resamples written as matrix
  products: every pair at once.
- A rank interval is 1 + the number of groups surely above to U - the number surely below, each "surely"
  a Bonferroni-adjusted difference (Mogstad, Romano, Shaikh and Wilhelm 2024).
- Up to `LIST_ALL` groups every pair is listed; beyond, the neighbours in rank (the pairs a reader
  compares), and every ranking change is still counted, the largest `MAX_CHANGES` per ranking listed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dualjudge.analysis.shared.bootstrap import CI_LEVEL, t_interval

LIST_ALL = 60  # groups up to which every pairwise difference is listed (1,770 pairs)
MAX_CHANGES = 50  # ranking changes listed per plain ranking on a larger board (all are counted)
CHUNK = 1024  # rows of a (U, U) comparison made at once, so memory stays O(CHUNK x U)


def competition_ranks(values: dict[str, float | None]) -> dict[str, int | None]:
    """1 + the number of groups strictly ahead (ties share a rank); None without a value."""
    known = np.sort(np.array([v for v in values.values() if v is not None and np.isfinite(v)], dtype=float))
    return {
        g: None if v is None or not np.isfinite(v) else 1 + int(len(known) - np.searchsorted(known, v, "right"))
        for g, v in values.items()
    }


def bonferroni(n_signs: int, comparisons: int) -> float:
    return float(stats.t.ppf(1 - (1 - CI_LEVEL) / (2 * max(comparisons, 1)), n_signs - 1))


def p_best(scores: np.ndarray) -> np.ndarray:
    """(U,) the share of resamples in which each group has the highest score (ties split)."""
    s = np.where(np.isfinite(scores), scores, -np.inf)
    top = s == s.max(axis=1, keepdims=True)
    return np.asarray((top / top.sum(axis=1, keepdims=True)).mean(axis=0))


def pair_se(draws: np.ndarray, n_signs: int) -> np.ndarray:
    """(U, U) the cluster bootstrap standard error of every difference of two groups' scores, as
    bootstrap.cluster_se gives it for the draws of a - b: over the resamples where both are finite, None
    (NaN here) when fewer than max(10, 90%) are; the diagonal NaN. Written as sums over the resamples
    (pairwise-complete), a block of rows at a time."""
    n_draws, n = draws.shape
    out = np.full((n, n), np.nan)
    if n_signs < 2 or n_draws < 10:
        return out
    finite = np.isfinite(draws)
    mask = finite.astype(float)
    centre = np.nanmean(np.where(finite, draws, np.nan), axis=0) if finite.any() else np.zeros(n)
    x = np.where(finite, draws - np.nan_to_num(centre), 0.0)  # centred: the sums below lose no precision
    x2 = x * x
    need = max(10, 0.9 * n_draws)
    for start in range(0, n, CHUNK):
        rows = slice(start, start + CHUNK)
        both = mask[:, rows].T @ mask  # [a, b]: resamples where both are finite
        sum_a = x[:, rows].T @ mask  # sum of a over them
        sum_b = mask[:, rows].T @ x  # sum of b over them
        squares = x2[:, rows].T @ mask + mask[:, rows].T @ x2 - 2 * (x[:, rows].T @ x)  # sum of (a - b)^2
        with np.errstate(invalid="ignore", divide="ignore"):
            var = (squares - (sum_a - sum_b) ** 2 / both) / (both - 1)
        se = np.sqrt(np.clip(var, 0, None) * n_signs / (n_signs - 1))
        out[rows] = np.where(both >= need, se, np.nan)
    np.fill_diagonal(out, np.nan)
    return out


def _surely_above(point: np.ndarray, se: np.ndarray, crit: float) -> Callable[[slice], np.ndarray]:
    """rows -> (rows, U) whether group i is ahead of group j by more than `crit` standard errors."""

    def block(rows: slice) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.asarray(point[rows, None] - point[None, :] - crit * se[rows] > 0)

    return block


@dataclass
class Board:
    rows: list[dict[str, Any]]  # best first
    differences: list[dict[str, Any]]  # every pair (up to LIST_ALL groups), else neighbours in rank
    significant: Callable[[slice], np.ndarray]  # rows -> whether i is ahead of j, adjusted across all pairs
    point: np.ndarray
    se: np.ndarray
    crit_pairs: float
    groups: list[str]


def calibrated_board(scores: np.ndarray, groups: list[str], n_signs: int) -> Board:
    """Rows (group, estimate, interval, rank, rank interval, p_best), best first, and the pairwise
    differences, higher minus lower, with their Bonferroni-adjusted intervals and p."""
    n = len(groups)
    point = scores[0]
    se = pair_se(scores[1:], n_signs)
    crit_rank = bonferroni(n_signs, n - 1)
    best = p_best(scores[1:]) if len(scores) > 1 else np.full(n, np.nan)
    ranks = competition_ranks(dict(zip(groups, point.tolist())))
    above, below = np.zeros(n, dtype=int), np.zeros(n, dtype=int)
    ahead = _surely_above(point, se, crit_rank)
    for start in range(0, n, CHUNK):
        block = ahead(slice(start, start + CHUNK))  # [i, j]: i surely ahead of j
        above += block.sum(axis=0)  # j has i above it
        below[start : start + CHUNK] = block.sum(axis=1)  # i has j below it
    rows = []
    for u, group in enumerate(groups):
        iv = t_interval(float(point[u]), scores[1:, u], n_signs)
        rows.append(
            {
                "group": group,
                "estimate": _num(point[u]),
                "se": iv.se if iv else None,
                "ci_low": iv.low if iv else None,
                "ci_high": iv.high if iv else None,
                "rank": ranks[group],
                "rank_low": 1 + int(above[u]),
                "rank_high": n - int(below[u]),
                "p_best": _num(best[u]),
            }
        )
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["group"]))
    pairs = n * (n - 1) // 2
    crit = bonferroni(n_signs, pairs)
    if n <= LIST_ALL:
        listed = [(a, b) for a in range(n) for b in range(a + 1, n)]
    else:
        order = _order(rows, groups)
        listed = list(zip(order, order[1:]))
    differences = [d for a, b in listed if (d := _difference(a, b, point, se, crit, pairs, n_signs, groups))]
    differences.sort(key=lambda x: -float(x["difference"]))
    return Board(rows, differences, _surely_above(point, se, crit), point, se, crit, groups)


def _order(rows: list[dict[str, Any]], groups: list[str]) -> list[int]:
    index = {g: i for i, g in enumerate(groups)}
    return [index[r["group"]] for r in rows]


def _difference(
    a: int, b: int, point: np.ndarray, se: np.ndarray, crit: float, pairs: int, n_signs: int, groups: list[str]
) -> dict[str, Any] | None:
    hi, lo = (a, b) if point[a] >= point[b] else (b, a)
    d, s = float(point[hi] - point[lo]), float(se[hi, lo])
    if not np.isfinite(d) or not np.isfinite(s):
        return None
    p = float(2 * stats.t.sf(abs(d) / s, n_signs - 1)) if s > 0 else (0.0 if d else 1.0)
    return {
        "higher": groups[hi],
        "lower": groups[lo],
        "difference": d,
        "se": s,
        "ci_low": d - crit * s,
        "ci_high": d + crit * s,
        "p": p,
        "p_adjusted": min(1.0, p * pairs),
    }


def ranking_changes(
    board: Board, rankings: dict[str, list[dict[str, Any]]], sentence: Callable[[dict[str, Any]], str]
) -> tuple[list[dict[str, Any]], int]:
    """Every pair a plain ranking orders against a calibrated difference whose adjusted interval excludes 0:
    the changes listed (each ranking's, largest difference first; at most MAX_CHANGES per ranking on a board
    of more than LIST_ALL groups) and how many there are in all."""
    n = len(board.groups)
    index = {g: i for i, g in enumerate(board.groups)}
    out: list[dict[str, Any]] = []
    total = 0
    for name, ranked in rankings.items():
        plain = np.full(n, np.nan)
        for r in ranked:
            if r["estimate"] is not None and r["group"] in index:
                plain[index[r["group"]]] = r["estimate"]
        found: list[tuple[int, int]] = []
        for start in range(0, n, CHUNK):
            rows = slice(start, start + CHUNK)
            against = board.significant(rows) & (plain[None, :] > plain[rows, None])
            found += [(start + int(i), int(j)) for i, j in zip(*np.nonzero(against))]
        total += len(found)
        found.sort(key=lambda p: (-(board.point[p[0]] - board.point[p[1]]), p))
        for hi, lo in found if n <= LIST_ALL else found[:MAX_CHANGES]:
            d, s = float(board.point[hi] - board.point[lo]), float(board.se[hi, lo])
            change = {
                "higher": board.groups[hi],
                "lower": board.groups[lo],
                "ranking": name,
                "difference": d,
                "ci_low": d - board.crit_pairs * s,
                "ci_high": d + board.crit_pairs * s,
            }
            change["sentence"] = sentence(change)
            out.append(change)
    return out, total


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
