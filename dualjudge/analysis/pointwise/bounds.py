"""Bounds over what the data cannot pin: the leaderboard when some judge's own-family effect is in doubt.

A judge's own-family effect is in doubt when the design cannot separate it from its family's quality
(identification), when the full fit holds the judge at a boundary or finds that its neutral judges hardly
track quality (diagnostics.fit_problems), or when the fit did not converge. The board then refits with
each such judge's own-family effects held at 0 and at its naive gap (its difference from each neutral judge,
one of neither its family nor the answer's, on its own family's answers less on the others'), one judge at a time
(all together where the design cannot be fitted otherwise), and reads those refits beside the
leave-one-judge-out and leave-one-family-out refits: each group's score range over the held refits, its
rank range over every refit, and whether the top group is the same in all of them. A group whose rank
is the same in every refit holds it; the top holds only if no refit puts another group first. Score
ranges are read on the outcome's scale: a held refit can extrapolate past its ends, and the range then
stops at the end: the row keeps the refit's own value beside it (`refit_low`, `refit_high`) and every
surface says the range was clipped (said in `clipped` too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import product
from typing import Any

import numpy as np

from dualjudge.analysis.pointwise.grid import Grid
from dualjudge.analysis.shared.choices import Grouping

Scores = Mapping[Grouping, dict[str, float]]  # grouping -> group -> calibrated score
MAX_JOINT = 4  # judges held together in every combination of 0 and naive (2^4 refits); more: all at 0, all naive


def naive_gaps(grid: Grid) -> dict[str, float]:
    """Each judge's naive own-family gap against neutral judges: for each judge k of another family, the judge's
    mean verdict minus k's on the judge's own family's answers, less that difference on the other answers it
    rated, both over answers where k is of neither family (so k is a yardstick on both sides, and its leniency
    cancels); the mean over such judges, weighted by the own-family answers each compared. A sibling of the
    judge, or of an answer's generator, is no yardstick: it may share the preference being measured. A judge
    with no neutral judge (two families only) is measured against the mean of the others, as the design allows."""
    d = grid.design
    y, present = d.y, d.present.astype(bool)
    fams = sorted(set(grid.judge_family.values()) | set(grid.families))
    judge_fam = np.array([fams.index(grid.judge_family[j]) for j in grid.judges])  # (J,)
    answer_fam = np.array([fams.index(grid.families[f]) for f in grid.answer_family])  # (A,)
    out: dict[str, float] = {}
    for j, judge in enumerate(grid.judges):
        own = answer_fam == judge_fam[j]
        total = weight = 0.0
        for k in np.flatnonzero(judge_fam != judge_fam[j]):
            both = present[j] & present[k] & (answer_fam != judge_fam[k])  # k neutral on the answer
            a, b = both & own, both & ~own
            if a.any() and b.any():
                diff = y[j] - y[k]
                total += a.sum() * (diff[a].mean() - diff[b].mean())
                weight += a.sum()
        out[judge] = float(total / weight) if weight else _against_others(y, present, own, j)
    return out


def _against_others(y: np.ndarray, present: np.ndarray, own: np.ndarray, j: int) -> float:
    """The judge's verdict minus the other judges' mean on the same answer, on its own family's answers less on
    the others' (0 where it has no own-family answer rated by another judge)."""
    count, total = present.sum(axis=0), (y * present).sum(axis=0)
    others = count - present[j]
    ok = present[j] & (others > 0)
    diff = y[j] - (total - y[j] * present[j]) / np.maximum(others, 1)
    a, b = ok & own, ok & ~own
    return float(diff[a].mean() - (diff[b].mean() if b.any() else 0.0)) if a.any() else 0.0


def held(grid: Grid, values: dict[str, float]) -> np.ndarray:
    """(J, K) the effects to hold (NaN: estimated): every own-family indicator of each named judge at its value."""
    out = np.full((grid.design.n_judges, grid.design.n_terms), np.nan)
    for judge, value in values.items():
        out[grid.judges.index(judge)] = value
    return out


def held_refits(doubts: dict[str, str], blocked: set[str], gaps: dict[str, float]) -> list[tuple[str, dict[str, float]]]:
    """(name, held values) of the refits: the judges the design cannot fit are always held (every combination
    of 0 and naive, or all at 0 and all at naive when many); each other doubtful judge in turn at 0 and naive."""
    always = sorted(blocked)
    if len(always) <= MAX_JOINT:
        joint = [dict(zip(always, choice)) for choice in product(*[(0.0, gaps[j]) for j in always])]
    else:
        joint = [dict.fromkeys(always, 0.0), {j: gaps[j] for j in always}]
    refits = []
    for base in joint or [{}]:
        alone = [j for j in sorted(doubts) if j not in blocked]
        extra = [{j: v} for j in alone for v in (0.0, gaps[j])] or [{}]
        for more in extra:
            values = {**base, **more}
            if values:
                refits.append((_name(values, gaps), values))
    return refits


def _name(values: dict[str, float], gaps: dict[str, float]) -> str:
    parts = [f"{j} at 0" if v == 0.0 else f"{j} at its naive gap {gaps[j]:+.2f}" for j, v in sorted(values.items())]
    return "own-family effect of " + ", ".join(parts)


def bounds(
    doubts: dict[str, str],
    refits: list[tuple[str, dict[str, float]]],
    score: Callable[[dict[str, float]], Scores | None],
    groupings: Iterable[Grouping],
    full: Scores | None,
    leave_outs: Mapping[Grouping, list[dict[str, Any]]] | None,
    limits: tuple[float, float] = (-np.inf, np.inf),
) -> dict[Grouping, dict[str, Any]]:
    """Per grouping: the refits (name, ranking, top), each group's score range over the held refits (on the
    scale `limits`) and its rank range over every refit (the full fit and the leave-outs included), the groups
    whose rank holds and whether the top does."""
    lo_end, hi_end = limits
    fitted = [(name, score(values)) for name, values in refits]
    out: dict[Grouping, dict[str, Any]] = {}
    for by in groupings:
        rankings: list[list[str]] = []
        listed: list[dict[str, Any]] = []
        scores: list[dict[str, float]] = []
        for name, s in fitted:
            if s is None:
                listed.append({"name": name, "ranking": None, "top": None, "reason": "the refit has no estimate"})
                continue
            ranked = {g: v for g, v in s[by].items() if np.isfinite(v)}
            order = sorted(ranked, key=lambda g: (-ranked[g], g))
            scores.append(ranked)
            rankings.append(order)
            listed.append({"name": name, "ranking": order, "top": order[0] if order else None, "reason": None})
        if full is not None:
            ranked = {g: v for g, v in full[by].items() if np.isfinite(v)}
            scores.append(ranked)
            rankings.append(sorted(ranked, key=lambda g: (-ranked[g], g)))
        rankings += [x["ranking"] for x in (leave_outs or {}).get(by, []) if x.get("ranking")]
        groups = sorted({g for r in rankings for g in r})
        rows = []
        clipped = []
        for g in groups:
            ranks = [r.index(g) + 1 for r in rankings if g in r]
            values = [s[g] for s in scores if g in s]
            if values and (min(values) < lo_end or max(values) > hi_end):
                clipped.append(g)
            low, high = (float(min(values)), float(max(values))) if values else (None, None)
            rows.append(
                {
                    "group": g,
                    "low": None if low is None else float(np.clip(low, lo_end, hi_end)),
                    "high": None if high is None else float(np.clip(high, lo_end, hi_end)),
                    "rank_best": min(ranks),
                    "rank_worst": max(ranks),
                    "refit_low": low if low is not None and low < lo_end else None,
                    "refit_high": high if high is not None and high > hi_end else None,
                }
            )
        rows.sort(key=lambda r: (r["rank_best"], r["rank_worst"], r["group"]))
        tops = {r[0] for r in rankings if r}
        out[by] = {
            "judges": dict(doubts),
            "refits": listed,
            "rows": rows,
            "top_holds": len(tops) == 1,
            "top": next(iter(tops)) if len(tops) == 1 else None,
            "holding": [r["group"] for r in rows if r["rank_best"] == r["rank_worst"]],
            "clipped": clipped,
        }
    return out
