"""What the data say about the calibrated index's own assumptions, judge by judge.

The calibration model (calibration.py) holds when one latent quality per answer explains what the
judges share, each judge's errors are its own, and a verdict goes missing for reasons the other
judges can see. Real judge data break each of these; here each break is looked for and turned into
either a reason the judge is not identified (the data cannot support the model: no estimate is
printed) or a warning in words attached to the judges it can bias:

- fit problems: a judge that gives every answer the same score; a boundary (Heywood) solution, where
  the fit explains all of one judge's scores by quality; a scale that does not rise with quality; a
  family whose answers are rated only by neutral judges that hardly track quality;
- correlated judges: two judges whose residuals move together beyond what the model allows (the same
  backbone, the same model entered twice, or a shared taste for a second quality dimension), with the
  estimates recomputed with each of them left out;
- missing verdicts that depend on the judge's own would-be score: a judge that fails more often on its
  own family's answers, with a sensitivity analysis (the estimate if its missing verdicts had been
  lower than the model predicts, and the shift at which the conclusion changes).

Thresholds were set on the simulation study (benchmarks/stats/): on a realistic table with nothing
wrong no warning fires.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dualjudge.analysis.shared import calibration

if TYPE_CHECKING:
    from dualjudge.analysis.pointwise.grid import Grid

RELIABILITY_MIN = 0.2  # neutral judges explaining less of a family's quality than this: not identified
RELIABILITY_WARN = 0.4  # ... less than this: a warning
BINARY_SHARE = 0.25  # 0/1 verdicts carry less of the quality than scores: their thresholds are this share
EXCESS_MIN = 0.08  # residual correlation beyond the model's own: at least this, ...
EXCESS_Z = 4.0  # ... and this many standard errors of a correlation (1/sqrt(shared answers))
COPIED = 0.98  # raw correlation of two judges' verdicts above which they are taken for one model twice
MISSING_GAP = 0.05  # own-family missing rate above the other families' by more than this
SHIFTS = (0.25, 0.5, 1.0, 2.0)  # how much lower (in score points, or probability for 0/1) missing verdicts are tried


def score_spread(d: calibration.Design) -> np.ndarray:
    """(J,) each judge's standard deviation of its verdicts."""
    out = np.zeros(d.n_judges)
    for j in range(d.n_judges):
        values = d.y[j][d.present[j]]
        out[j] = float(values.std()) if len(values) else 0.0
    return out


def _own(d: calibration.Design, j: int) -> np.ndarray:
    """(A,) the answers of judge j's own family (own model or same family), rated or not."""
    return np.asarray(d.terms[:, j].sum(axis=0) > 0)


# -- fit problems -----------------------------------------------------------------------------------------
def fit_problems(grid: Grid, full: calibration.Fit) -> tuple[dict[str, str], dict[str, list[str]]]:
    """What the full fit says the data cannot support, per judge: reasons a judge is not identified
    (a constant judge, a boundary solution, a scale that does not rise with quality, neutral judges that
    do not track the quality its family's answers are measured against) and warnings (weak neutral
    judges)."""
    d = grid.design
    families = np.array([grid.judge_family[j] for j in grid.judges])
    reliability = calibration.neutral_reliability(full, d, families)
    binary = set(np.unique(d.y[d.present]).tolist()) <= {0.0, 1.0}
    low, warn = (
        (RELIABILITY_MIN, RELIABILITY_WARN) if not binary else (RELIABILITY_MIN * BINARY_SHARE, RELIABILITY_WARN * BINARY_SHARE)
    )
    reasons: dict[str, str] = {}
    warnings: dict[str, list[str]] = {j: [] for j in grid.judges}
    spread = score_spread(d)
    for j, judge in enumerate(grid.judges):
        if spread[j] == 0 and d.present[j].any():
            value = d.y[j][d.present[j]][0]
            reasons[judge] = (
                f"it gives every answer the same score ({value:g}), so it says nothing about them and "
                f"its own-family effect is not defined"
            )
        elif full.at_bound[0, j]:
            reasons[judge] = (
                f"boundary solution: the fit explains almost all of this judge's scores by the latent "
                f"quality (its residual variance sits at the lower bound, {calibration.PSI_FLOOR:.0%} of "
                f"its variance), so quality is mostly this judge's own score and its own-family effect "
                f"cannot be told apart from it; the other judges are fitted with that bound in place"
            )
        elif full.scale[0, j] <= 0:
            reasons[judge] = (
                f"its scores do not rise with the quality the other judges see (fitted scale "
                f"{full.scale[0, j]:+.2f}), so its use of the scale cannot be calibrated"
            )
    own_reliability = np.maximum(full.scale[0], 0.0) ** 2 / (np.maximum(full.scale[0], 0.0) ** 2 + full.psi[0])
    for j, judge in enumerate(grid.judges):
        if judge not in reasons and np.isfinite(own_reliability[j]) and own_reliability[j] < low:
            warnings[judge].append(
                f"this judge hardly tracks the quality the others agree on (quality explains "
                f"{own_reliability[j]:.0%} of its scores), so its leniency and scale are barely "
                f"pinned and its interval may be too narrow"
            )
        r = reliability[j]
        if not np.isfinite(r) or judge in reasons:
            continue
        fam = grid.judge_family[judge]
        rated_own = d.present[j] & _own(d, j)
        neutral = sorted(grid.judges[k] for k in range(d.n_judges) if families[k] != fam and (d.present[k] & rated_own).any())
        who = ", ".join(neutral) or "none"
        if r < low:
            reasons[judge] = (
                f"the neutral judges of the {fam} answers ({who}) hardly track quality (their verdicts "
                f"explain {r:.0%} of the quality this judge is measured against), so its own-family "
                f"effect cannot be separated from the quality of those answers; add a judge of another "
                f"family that agrees with the others"
            )
        elif r < warn:
            warnings[judge].append(
                f"weak neutral judges: {who} explain only {r:.0%} of the quality of the {fam} "
                f"answers this judge is measured against; its interval is wide for that reason"
            )
    return reasons, warnings


# -- correlated judges ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    excess: float  # residual correlation beyond what the model implies
    copied: bool  # near-identical verdicts: one model entered twice
    mirror: tuple[str, str] | None  # with four judges, the pair the data cannot tell this one from


def copies(grid: Grid) -> list[tuple[str, str, float, int]]:
    """Judges whose verdicts are a copy of another's: (kept, copy, r, shared answers) for every pair whose
    verdicts correlate above COPIED on at least 30 shared answers, the copy the later of the two names (a
    judge copying one already merged is merged into the same one)."""
    d = grid.design
    out: list[tuple[str, str, float, int]] = []
    merged: set[int] = set()
    for j in range(d.n_judges):
        for k in range(j + 1, d.n_judges):
            both = d.present[j] & d.present[k]
            if j in merged or k in merged or int(both.sum()) < 30 or not (d.y[j, both].std() and d.y[k, both].std()):
                continue
            r = float(np.corrcoef(d.y[j, both], d.y[k, both])[0, 1])
            if r > COPIED:
                out.append((grid.judges[j], grid.judges[k], r, int(both.sum())))
                merged.add(k)
    return out


def merge_copies(frame: pd.DataFrame, grid: Grid, outcome: str) -> tuple[pd.DataFrame, list[str]]:
    """The table without the judges that copy another (copies()), and one line for each merged: one model
    entered twice counts once, in the self-preference fit and on the leaderboard alike."""
    merged = copies(grid)
    if not merged:
        return frame, []
    gone = {copy for _, copy, _, _ in merged}
    lines = [
        f"{copy} merged with {kept} before fitting: their {outcome} verdicts correlate at r = {r:.3f} on {shared} "
        f"shared answers (one model entered twice?)"
        for kept, copy, r, shared in merged
    ]
    return frame[~frame["judge_model"].astype(str).isin(gone)], lines


def correlated_pairs(grid: Grid, full: calibration.Fit, types: calibration.Types | None = None) -> list[Pair]:
    """Pairs of judges whose residuals are correlated beyond what the model allows, strongest first.

    The residuals of independent judges still correlate (negatively) through the estimated quality;
    calibration.expected_residual_correlations gives that level, and a pair is flagged when its observed
    correlation exceeds it by EXCESS_MIN and by EXCESS_Z standard errors. With four judges a positive
    excess for one pair and for the complementary pair fit the data equally well (one-factor tetrads),
    so both are named."""
    d = grid.design
    types = types or calibration.Types.of(d)
    observed = calibration.residual_correlations(full, d, types)
    expected = calibration.expected_residual_correlations(full)
    raws = np.nan_to_num(calibration.pairwise_correlations(d.y, d.present), nan=0.0)  # the verdicts themselves
    shares = d.present.astype(np.int64) @ d.present.T.astype(np.int64)
    out = []
    n_j = d.n_judges
    for j in range(n_j):
        for k in range(j + 1, n_j):
            shared = int(shares[j, k])
            if not np.isfinite(observed[j, k]) or shared < 30:
                continue
            excess = float(observed[j, k] - expected[j, k])
            raw = float(raws[j, k])
            copied = raw > COPIED
            if copied or (excess > EXCESS_MIN and excess > EXCESS_Z / np.sqrt(shared)):
                rest = [grid.judges[i] for i in range(n_j) if i not in (j, k)]
                mirror = (rest[0], rest[1]) if n_j == 4 and not copied else None
                out.append(Pair(grid.judges[j], grid.judges[k], excess, copied, mirror))
    return sorted(out, key=lambda p: -p.excess)


def pair_warning(pair: Pair, left_out: dict[str, dict[str, float | None]], judge: str) -> str:
    """The warning a judge carries for a correlated pair, with its estimate when each member is left out."""
    if pair.copied:
        what = (
            f"{pair.first} and {pair.second} give near-identical verdicts (the same model entered twice?); the "
            f"model counts them as two independent judges, which pulls the latent quality toward them"
        )
    else:
        what = (
            f"the residuals of {pair.first} and {pair.second} move together beyond what one quality dimension "
            f"allows ({pair.excess:+.2f} correlation above the model's): the same backbone, or a shared taste for "
            f"a second quality dimension, which shows as self-preference where their families' answers are "
            f"strong in it"
        )
        if pair.mirror:
            what += f" (with four judges this cannot be told apart from {pair.mirror[0]} and {pair.mirror[1]} moving together)"
    shown = [
        f"without {gone}: {estimates[judge]:+.2f}"
        for gone, estimates in left_out.items()
        if gone != judge and estimates.get(judge) is not None
    ]
    return f"{what}; this judge's estimate " + ", ".join(shown) if shown else what


def flagged(pairs: list[Pair]) -> list[Pair]:
    """The pairs to report: copied judges alone when there are any (the other excesses follow from them)."""
    copied = [p for p in pairs if p.copied]
    return copied or pairs


# -- missing verdicts that depend on the judge's own score ------------------------------------------------
def missing_gaps(missing: dict[str, dict[str, dict[str, float]]], judge_family: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Judges that miss more of their own family's verdicts than of the other families': (own, other) rates."""
    out = {}
    for judge, cells in missing.items():
        fam = judge_family.get(judge)
        own = cells.get(fam) if fam is not None else None
        others = [c for f, c in cells.items() if f != fam]
        if own is None or not others:
            continue
        other_rate = sum(c["missing"] for c in others) / max(1, sum(c["total"] for c in others))
        if own["rate"] - other_rate > MISSING_GAP:
            out[judge] = (float(own["rate"]), float(other_rate))
    return out


def imputed_estimates(
    grid: Grid,
    full: calibration.Fit,
    judge: str,
    shifts: tuple[float, ...] = SHIFTS,
    scale_free: bool = True,
    value: float | None = None,
) -> dict[float, float]:
    """The judge's own-family estimate if its missing own-family verdicts (answers other judges rated)
    were there, `shift` below what the model predicts for them, refitting the whole model each time; with
    `value`, once, every missing verdict that value (the worst case of a 0/1 verdict: 0), keyed nan."""
    d = grid.design
    j = grid.judges.index(judge)
    types = calibration.Types.of(d)
    quality = full.quality(d, types)
    effects = np.nan_to_num(full.effects[0][j])
    predicted = full.leniency[0, j] + full.scale[0, j] * quality + effects @ d.terms[:, j]
    gap = ~d.present[j] & _own(d, j)
    out: dict[float, float] = {}
    for shift in (float("nan"),) if value is not None else shifts:
        y = d.y.copy()
        present = d.present.copy()
        y[j, gap] = value if value is not None else predicted[gap] - shift
        present[j, gap] = True
        filled = calibration.Design(y, present, d.terms, d.cluster, d.n_clusters, d.group)
        sums = calibration.Types.of(filled).resampled(None)
        f = calibration.fit(sums, scale_free=scale_free)
        per_term = sums.wx[0, j]
        out[shift] = float(np.nansum(f.effects[0, j] * per_term) / per_term.sum()) if per_term.sum() else float("nan")
    return out


def missing_warning(
    judge: str,
    rates: tuple[float, float],
    estimate: float,
    half_width: float,
    imputed: dict[float, float],
    unit: str,
    worst: float | None = None,
) -> str:
    """Words for a judge that misses more of its own family's verdicts, with the sensitivity analysis;
    `worst`: the estimate with every missing own-family verdict at the bottom of a 0/1 scale."""
    own, other = rates
    text = (
        f"{judge} misses {own:.0%} of its own family's verdicts against {other:.0%} of the others': if it fails "
        f"when it would have scored low, the estimate is biased upward (nothing in the data can rule this out)"
    )
    if worst is not None and np.isfinite(worst):
        text += f". With every missing own-family verdict 0 (the worst case of a 0/1 verdict) the estimate is {worst:+.3f}"
    points = ", ".join(f"{v:+.2f} at {s:g}" for s, v in imputed.items() if np.isfinite(v))
    if points:
        text += f". With the missing verdicts filled in below the model's prediction by so many {unit}, the estimate is {points}"
    significant = estimate - half_width > 0 or estimate + half_width < 0
    xs = [0.0, *imputed]
    ys = [estimate, *imputed.values()]
    target = (half_width if estimate > 0 else -half_width) if significant else 0.0
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if np.isfinite(y0) and np.isfinite(y1) and (y0 - target) * (y1 - target) <= 0 and y0 != y1:
            at = x0 + (target - y0) * (x1 - x0) / (y1 - y0)
            text += (
                f"; the conclusion changes (the interval {'reaches 0' if significant else 'changes sign'}) "
                f"at about {at:.2f} {unit} lower"
            )
            break
    else:
        text += f"; the conclusion holds up to {xs[-1]:g} {unit} lower"
    return text
