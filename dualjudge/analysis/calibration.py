"""Judge calibration with answer fixed effects: the model behind the self-preference index.

Every answer is judged by every judge, so each answer's quality can be held fixed. For judge j and
answer a:

    y[j, a] = leniency[j] + scale[j] * quality[a] + sum_k effect[j, k] * X[k, j, a] + e,  Var e = psi[j]

with X the own-model and same-family-other-model indicators. `quality[a]` is one latent value per
answer, pinned by every judge that rates it; leniency and scale (how a judge uses the 0-10 scale) are
per judge, so a judge with a compressed scale or a harsh streak does not turn the quality gap between
families into self-preference. Verdicts that are missing because the answer was weak are harmless:
the answer's quality is still pinned by the other judges (selection on what the model conditions on).

The fit is alternating least squares, weighted by each judge's precision 1/psi[j] (re-estimated with a
leverage correction every sweep). Without the weights, a noisier judge would pull the latent quality
toward itself (least squares on a rank-one factor is consistent only with equal noise); with them, the
fixed point is the maximum-likelihood fit of a rank-one factor model with heteroscedastic noise.
Normalisation: quality has weighted mean 0 and variance 1, so the effects are in each judge's own
score points. `scale_free=False` fixes every scale at 1: the answer-matched two-way fixed-effects
model (unweighted), kept as a sensitivity check.

Fits are batched over bootstrap resamples: `counts` is (B, A), each answer's sign count in each
resample. A verdict's weight is its answer's count times its presence, so every sum over answers is a
matrix product of the counts with a fixed (rows, A) matrix: all B fits run as a few GEMMs per sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOL = 1e-7
MAX_SWEEPS = 500


@dataclass(frozen=True)
class Design:
    """A verdict table as a judge x answer grid. `present` marks the verdicts that exist; `terms[k]`
    is indicator k (own model, same family), whose coefficient is per judge."""

    y: np.ndarray  # (J, A), 0 where absent
    present: np.ndarray  # (J, A) bool
    terms: np.ndarray  # (K, J, A) 0/1
    cluster: np.ndarray  # (A,) sign codes 0..G-1
    n_clusters: int

    @property
    def n_judges(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_answers(self) -> int:
        return int(self.y.shape[1])

    @property
    def n_terms(self) -> int:
        return int(self.terms.shape[0])

    def counts(self, sign_counts: np.ndarray | None = None) -> np.ndarray:
        """(B, A) answer weights from (B, G) sign counts of bootstrap resamples; default one fit, all 1."""
        return np.ones((1, self.n_answers)) if sign_counts is None else sign_counts[:, self.cluster].astype(float)

    def judge_sums(self, counts: np.ndarray, per_verdict: np.ndarray) -> np.ndarray:
        """(B, A) counts, (..., J, A) values -> (B, ..., J): sums of count x presence x value over answers."""
        m = (per_verdict * self.present).reshape(-1, self.n_answers)
        return (counts @ m.T).reshape(len(counts), *per_verdict.shape[:-1])


@dataclass
class Fit:
    """Parameters of B fits (leading axis B)."""

    leniency: np.ndarray  # (B, J)
    scale: np.ndarray  # (B, J)
    effects: np.ndarray  # (B, J, K); NaN where a judge has no verdict with that indicator
    quality: np.ndarray  # (B, A)
    precision: np.ndarray  # (B, J), mean 1
    sweeps: int
    converged: bool


def fit(d: Design, counts: np.ndarray | None = None, scale_free: bool = True, start: Fit | None = None,
        tol: float = TOL, max_sweeps: int = MAX_SWEEPS) -> Fit:
    """Fit the calibration model once per row of `counts` (B, A); default one fit with unit weights."""
    c = d.counts() if counts is None else counts
    b, k, n_j = len(c), d.n_terms, d.n_judges
    fs = _Sums(d, c)
    if start is not None and scale_free:
        lam = np.broadcast_to(start.leniency, (b, n_j)).copy()
        scale = np.broadcast_to(start.scale, (b, n_j)).copy()
        eff = np.nan_to_num(np.broadcast_to(start.effects, (b, n_j, k))).copy()
        prec = np.broadcast_to(start.precision, (b, n_j)).copy()
    else:
        lam = fs.wy / np.maximum(fs.w, 1e-300)
        scale, eff, prec = np.ones((b, n_j)), np.zeros((b, n_j, k)), np.ones((b, n_j))
    quality = np.zeros((b, d.n_answers))
    converged, sweep = False, 0
    for sweep in range(1, max_sweeps + 1):
        before = np.concatenate([lam, scale, eff.reshape(b, -1)], axis=1)
        quality = _normalise(_quality(fs, lam, scale, eff, prec), fs, scale_free)
        lam, scale, eff, rss = _judge_step(fs, quality, scale_free)
        if scale_free:
            prec = _precision(fs, rss, scale, prec)
        after = np.concatenate([lam, scale, eff.reshape(b, -1)], axis=1)
        if np.max(np.abs(after - before)) < tol:
            converged = True
            break
    return Fit(lam, scale, np.where(fs.active, eff, np.nan), quality, prec, sweep, converged)


class _Sums:
    """What every sweep reuses. `stack` holds [present*y; present; present*x_1; ...; present*x_K] as
    ((2+K)J, A): with a verdict's weight = count[a] x present[j, a], a sum over answers of weight x
    (a per-answer value) x (a per-verdict value) is (count * value) @ stack.T."""

    def __init__(self, d: Design, counts: np.ndarray) -> None:
        x = d.terms.astype(np.float64)
        self.n_judges, self.n_terms = d.n_judges, d.n_terms
        self.present = d.present.astype(np.float64)
        self.stack = np.concatenate([self.present * d.y, self.present, *(self.present * x)], axis=0)
        self.counts = counts
        self.answer_weight = counts * self.present.sum(axis=0)  # (B, A)
        self.w = d.judge_sums(counts, np.ones_like(d.y))  # (B, J)
        self.wy = d.judge_sums(counts, d.y)
        self.wyy = d.judge_sums(counts, d.y**2)
        self.wx = d.judge_sums(counts, x).transpose(0, 2, 1)  # (B, J, K)
        self.wxy = d.judge_sums(counts, x * d.y).transpose(0, 2, 1)
        self.wxx = d.judge_sums(counts, x[:, None] * x[None, :]).transpose(0, 3, 1, 2)  # (B, J, K, K)
        self.active = self.wx > 0  # (judge, term) pairs with verdicts, per resample

    def with_quality(self, quality: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per judge: sum w q, sum w q^2, sum w y q and sum w x_k q (the last (B, J, K))."""
        n_j, b = self.n_judges, len(quality)
        cq = self.counts * quality
        lin = cq @ self.stack.T  # (B, (2+K)J)
        sqq = (cq * quality) @ self.present.T
        sqy, sq = lin[:, :n_j], lin[:, n_j:2 * n_j]
        sxq = lin[:, 2 * n_j:].reshape(b, self.n_terms, n_j).transpose(0, 2, 1)
        return sq, sqq, sqy, sxq


def _quality(fs: _Sums, lam: np.ndarray, scale: np.ndarray, eff: np.ndarray, prec: np.ndarray) -> np.ndarray:
    """Quality given the judges: each answer's precision-weighted regression of its verdicts on the
    scales, sum_j p c (y - lam - eff.x) / sum_j p c scale with c = prec * scale (counts cancel)."""
    c = prec * scale
    coef = np.concatenate([c, -c * lam, *(-c * eff[:, :, t] for t in range(fs.n_terms))], axis=1)
    num = coef @ fs.stack
    den = (c * scale) @ fs.present
    return np.divide(num, den, out=np.zeros_like(den), where=den > 0)


def _normalise(quality: np.ndarray, fs: _Sums, scale_free: bool) -> np.ndarray:
    """Weighted mean 0 (and variance 1 when the scales are free) over the rated answers."""
    wa = fs.answer_weight
    total = wa.sum(axis=1, keepdims=True)
    mean = (wa * quality).sum(axis=1, keepdims=True) / total
    centred = np.where(wa > 0, quality - mean, 0.0)
    if not scale_free:
        return centred
    sd = np.sqrt((wa * centred**2).sum(axis=1, keepdims=True) / total)
    return centred / np.where(sd > 0, sd, 1.0)


def _judge_step(fs: _Sums, quality: np.ndarray, scale_free: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per judge, the normal equations of [1, quality, indicators] (or, with the slope fixed at 1, of
    [1, indicators] on what quality leaves), solved for every resample at once. Also returns each
    judge's residual sum of squares (y'Wy - coef'X'Wy at the solution)."""
    sq, sqq, sqy, sxq = fs.with_quality(quality)
    b, n_j, k = fs.wx.shape
    p = k + (2 if scale_free else 1)
    first = p - k
    xtx = np.zeros((b, n_j, p, p))
    xty = np.zeros((b, n_j, p))
    xtx[:, :, 0, 0] = fs.w
    xtx[:, :, 0, first:] = xtx[:, :, first:, 0] = fs.wx
    xtx[:, :, first:, first:] = fs.wxx
    if scale_free:
        xtx[:, :, 0, 1] = xtx[:, :, 1, 0] = sq
        xtx[:, :, 1, 1] = sqq
        xtx[:, :, 1, first:] = xtx[:, :, first:, 1] = sxq
        xty[:, :, 0], xty[:, :, 1], xty[:, :, first:] = fs.wy, sqy, fs.wxy
    else:
        xty[:, :, 0], xty[:, :, first:] = fs.wy - sq, fs.wxy - sxq
    for t in range(k):  # an indicator without verdicts: its coefficient is pinned at 0
        off = ~fs.active[:, :, t]
        xtx[:, :, first + t, :][off] = 0.0
        xtx[:, :, :, first + t][off] = 0.0
        xtx[:, :, first + t, first + t][off] = 1.0
        xty[:, :, first + t][off] = 0.0
    coef = np.linalg.solve(xtx + 1e-12 * np.eye(p), xty[..., None])[..., 0]
    lam = coef[:, :, 0]
    scale = coef[:, :, 1] if scale_free else np.ones_like(lam)
    rss = fs.wyy - (coef * xty).sum(axis=2) if scale_free else np.zeros_like(lam)
    return lam, scale, coef[:, :, first:], rss


def _precision(fs: _Sums, rss: np.ndarray, scale: np.ndarray, prec: np.ndarray) -> np.ndarray:
    """1 / residual variance per judge, mean 1. Each verdict's share of its answer's quality (its
    leverage h = prec*scale^2 over the answer's sum of those) is taken off the degrees of freedom:
    a judge that dominates the answers' quality would otherwise look noiseless."""
    info = prec * scale**2  # (B, J)
    total = info @ fs.present  # (B, A)
    ratio = np.divide(fs.counts, total, out=np.zeros_like(total), where=total > 0)
    dof = fs.w - info * (ratio @ fs.present.T)
    psi = np.divide(rss, dof, out=np.full_like(dof, np.nan), where=dof > 1e-9)
    psi = np.where(np.isfinite(psi) & (psi > 1e-12), psi, np.nan)
    fallback = np.nanmean(np.where(np.isnan(psi).all(axis=1, keepdims=True), 1.0, psi), axis=1, keepdims=True)
    out = 1.0 / np.where(np.isnan(psi), fallback, psi)
    return out / out.mean(axis=1, keepdims=True)


# -- identification ------------------------------------------------------------------------------------
def unidentified(judges: list[str], judge_family: dict[str, str], cells: set[tuple[str, str]],
                 own_rows: dict[str, int]) -> dict[str, str]:
    """Judges whose own-family effect the design cannot separate from leniency and quality, with why.

    `cells` holds (judge, generator family) pairs with answers that some other judge also rated. A judge's
    effect is identified when its own family's answers are rated by it and a chain of neutral judgements
    (cells where the judge is not of the answer's family) links the judge to that family: then its
    leniency and scale are pinned elsewhere and the family's answer quality by judges outside it.
    """
    parent: dict[str, str] = {}

    def find(v: str) -> str:
        parent.setdefault(v, v)
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for judge, fam in cells:
        if judge_family[judge] != fam:
            parent[find("j:" + judge)] = find("f:" + fam)
    reasons: dict[str, str] = {}
    for j in judges:
        fam = judge_family[j]
        if own_rows.get(j, 0) == 0:
            reasons[j] = f"no answer from a generator of the judge's own family ({fam})"
        elif not any(judge == j and f != fam for judge, f in cells):
            reasons[j] = "the judge rated no answer of another family, so its leniency and scale are not pinned"
        elif find("j:" + j) != find("f:" + fam):
            reasons[j] = (f"no chain of neutral judgements links this judge to the {fam} answers (their quality is "
                          f"pinned only by judges of the same family); add a judge or a generator of a third family")
    return reasons
