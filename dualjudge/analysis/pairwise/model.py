"""The pairwise model: Bradley-Terry with ties (Davidson 1970), per judge a decisiveness, a first-position effect,
an own-family term and a tie propensity, fitted by Fisher scoring on aggregated cells.

For a comparison by judge j of the answer shown first (F) with the one shown second (S):

    eta = delta_j * (s_F - s_S) + sum_k beta_jk * x_k        x_0 = 1 (the first slot), x_1 = own_F - own_S, ...
    P(F wins) = e^(eta/2) / Z,  P(S wins) = e^(-eta/2) / Z,  P(tie) = nu_j / Z,  Z = e^(eta/2) + e^(-eta/2) + nu_j

s is a strength per system (the first system's held at 0 while fitting; reported centred), delta_j = exp(d_j) how
sharply judge j separates answers (the pairwise form of a judge's scale use; one judge's held at 1 while fitting,
then renormalised to a geometric mean of 1), beta_j0 its first-slot preference and beta_j1 its own-family term, both
in logits, nu_j = exp(tau_j) its tie propensity (0 for a judge that never ties). Without x_1 and with a pair-specific
term per judge in place of the strengths the model is saturated (the transitivity test's alternative).

A parameter the design cannot identify (its column of the Jacobian lies in the span of the others') is held at 0
and named with the reason, never estimated (`free_terms`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

FIRST_WINS, SECOND_WINS, TIE = range(3)
RIDGE = 1e-4  # a weak penalty on every parameter: a separated term stays finite (and is then flagged, never reported)
TOLERANCE = 1e-8  # the largest parameter step at convergence
RESAMPLE_TOLERANCE = 1e-6  # ... in a bootstrap refit (a hundredth of the smallest standard error any interval shows)
MAX_STEPS = 200
FLAT = 1e-12  # a step that gains less than this share of the objective: converged (a direction the data leave flat)
DEPENDENT = 1e-9  # a column whose residual on the kept ones has less than this share of its norm adds nothing


@dataclass(frozen=True)
class Cells:
    """Comparisons aggregated by what the model sees: the judge, the system shown first and second, the terms."""

    judge: np.ndarray  # (C,) judge index
    first: np.ndarray  # (C,) system index of the answer shown first
    second: np.ndarray  # (C,) system index of the answer shown second
    x: np.ndarray  # (C, K) per-judge covariates; column 0 is 1 (the first slot)
    counts: np.ndarray  # (C, 3) first wins, second wins, ties
    n_judges: int
    n_systems: int

    def with_counts(self, counts: np.ndarray) -> Cells:
        return replace(self, counts=counts)


@dataclass(frozen=True)
class Spec:
    """Which parameters are free; the others are held (strengths and d at 0, beta at 0, tau at minus infinity)."""

    strengths: bool
    decisive: np.ndarray  # (J,) d_j free
    beta: np.ndarray  # (J, K) beta_jk free
    ties: np.ndarray  # (J,) tau_j free (the judge tied at least once)


@dataclass(frozen=True)
class Params:
    s: np.ndarray  # (S,)
    d: np.ndarray  # (J,)
    beta: np.ndarray  # (J, K)
    tau: np.ndarray  # (J,) -inf where the judge never ties

    def centred(self, scaled: np.ndarray) -> Params:
        """Strengths centred, decisiveness renormalised to a geometric mean of 1 over the `scaled` judges (those
        that separate answers at all; the strengths scaled to match, so eta is unchanged)."""
        m = float(self.d[scaled].mean()) if scaled.any() else 0.0
        s = self.s * np.exp(m)
        return replace(self, s=s - s.mean(), d=np.where(scaled, self.d - m, self.d))

    def eta(self, cells: Cells) -> np.ndarray:
        scaled = np.exp(self.d)[cells.judge] * (self.s[cells.first] - self.s[cells.second])
        return np.asarray(scaled + np.einsum("ck,ck->c", cells.x, self.beta[cells.judge]))


@dataclass(frozen=True)
class Fit:
    params: Params
    loglik: float  # the unpenalised log-likelihood
    converged: bool
    steps: int
    theta: np.ndarray  # the free parameters, in Layout order
    info: np.ndarray  # the Fisher information of the free parameters at the fit


class Layout:
    """Where each free parameter sits in the parameter vector: strengths (all but the first), the free d's, the free
    betas (judge-major), the free taus."""

    def __init__(self, spec: Spec, n_judges: int, n_systems: int, n_terms: int) -> None:
        self.spec, self.n_judges, self.n_systems, self.n_terms = spec, n_judges, n_systems, n_terms
        self.n_s = n_systems - 1 if spec.strengths else 0
        self.d_at = np.full(n_judges, -1)
        self.d_at[spec.decisive] = self.n_s + np.arange(int(spec.decisive.sum()))
        start = self.n_s + int(spec.decisive.sum())
        self.beta_at = np.full((n_judges, n_terms), -1)
        self.beta_at[spec.beta] = start + np.arange(int(spec.beta.sum()))
        start += int(spec.beta.sum())
        self.tau_at = np.full(n_judges, -1)
        self.tau_at[spec.ties] = start + np.arange(int(spec.ties.sum()))
        self.size = start + int(spec.ties.sum())

    def unpack(self, theta: np.ndarray) -> Params:
        s = np.zeros(self.n_systems)
        if self.n_s:
            s[1:] = theta[: self.n_s]
        d = np.where(self.d_at >= 0, theta[np.maximum(self.d_at, 0)] if self.size else 0.0, 0.0)
        beta = np.where(self.beta_at >= 0, theta[np.maximum(self.beta_at, 0)] if self.size else 0.0, 0.0)
        tau = np.where(self.tau_at >= 0, theta[np.maximum(self.tau_at, 0)] if self.size else 0.0, -np.inf)
        return Params(s, d, beta, tau)

    def pack(self, p: Params) -> np.ndarray:
        theta = np.zeros(self.size)
        if self.n_s:
            theta[: self.n_s] = p.s[1:] - p.s[0]
        theta[self.d_at[self.d_at >= 0]] = p.d[self.d_at >= 0]
        theta[self.beta_at[self.beta_at >= 0]] = p.beta[self.beta_at >= 0]
        theta[self.tau_at[self.tau_at >= 0]] = np.where(np.isfinite(p.tau), p.tau, -5.0)[self.tau_at >= 0]
        return theta


def probabilities(eta: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """(C, 3) P(first wins), P(second wins), P(tie), computed stably."""
    half = np.abs(eta) / 2
    big, small = np.ones_like(eta), np.exp(-2 * half)  # e^{|eta|/2} and e^{-|eta|/2}, both divided by e^{|eta|/2}
    tie = np.exp(np.where(np.isfinite(tau), tau, -np.inf) - half)
    z = big + small + tie
    winner, loser = big / z, small / z
    first = np.where(eta >= 0, winner, loser)
    second = np.where(eta >= 0, loser, winner)
    return np.stack([first, second, tie / z], axis=1)


def loglik(cells: Cells, p: Params, counts: np.ndarray | None = None) -> float:
    counts = cells.counts if counts is None else counts
    probs = probabilities(p.eta(cells), p.tau[cells.judge])
    with np.errstate(divide="ignore"):
        logs = np.where(counts > 0, np.log(probs), 0.0)
    return float(np.sum(counts * logs))


def _entries(cells: Cells, layout: Layout, p: Params) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """d eta / d theta as blocks of (rows, columns, values), each (row, column) at most once per block."""
    c = np.arange(len(cells.judge))
    blocks = []
    delta = np.exp(p.d)[cells.judge]
    if layout.n_s:
        for side, sign in ((cells.first, 1.0), (cells.second, -1.0)):
            keep = side > 0
            blocks.append((c[keep], side[keep] - 1, sign * delta[keep]))
    at = layout.d_at[cells.judge]
    keep = at >= 0
    blocks.append((c[keep], at[keep], (delta * (p.s[cells.first] - p.s[cells.second]))[keep]))
    for k in range(layout.n_terms):
        at = layout.beta_at[cells.judge, k]
        keep = (at >= 0) & (cells.x[:, k] != 0)
        blocks.append((c[keep], at[keep], cells.x[keep, k]))
    return blocks


class Slots:
    """d eta / d theta of every cell in fixed-width rows: each cell's few nonzero columns (its two systems'
    strengths, its judge's decisiveness, its judge's terms; a spare column `size` where a slot is empty), so the
    gradient and the information are bincounts over the cells' column pairs, however many cells."""

    def __init__(self, cells: Cells, layout: Layout) -> None:
        self.cells, self.layout, size = cells, layout, layout.size
        spare = size
        cols = []
        if layout.n_s:
            cols += [np.where(cells.first > 0, cells.first - 1, spare), np.where(cells.second > 0, cells.second - 1, spare)]
        at = layout.d_at[cells.judge]
        cols.append(np.where(at >= 0, at, spare))
        for k in range(layout.n_terms):
            at = layout.beta_at[cells.judge, k]
            cols.append(np.where((at >= 0) & (cells.x[:, k] != 0), at, spare))
        self.cols = np.stack(cols, axis=1) if cols else np.zeros((len(cells.judge), 0), dtype=np.int64)
        width = self.cols.shape[1]
        self.pairs = (self.cols[:, :, None] * (size + 1) + self.cols[:, None, :]).reshape(len(cells.judge), width * width)
        self.tau = layout.tau_at[cells.judge]

    def values(self, p: Params) -> np.ndarray:
        cells, layout = self.cells, self.layout
        delta = np.exp(p.d)[cells.judge]
        vals = []
        if layout.n_s:
            vals += [delta, -delta]
        vals.append(delta * (p.s[cells.first] - p.s[cells.second]))
        vals += [cells.x[:, k] for k in range(layout.n_terms)]
        out = np.stack(vals, axis=1) if vals else np.zeros((len(cells.judge), 0))
        return np.where(self.cols < layout.size, out, 0.0)


def _jacobian(cells: Cells, layout: Layout, p: Params) -> np.ndarray:
    """d eta / d theta, one row per cell (dense: the rank check's)."""
    dense = np.zeros((len(cells.judge), layout.size))
    for rows, cols, vals in _entries(cells, layout, p):
        dense[rows, cols] += vals
    return dense


def score_and_information(slots: Slots, p: Params) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of the log-likelihood and the Fisher information (the model is an exponential family in
    (eta/2, tau) per cell: its information is the covariance of ((1_F - 1_S)/2, 1_T) times the cell's count)."""
    cells, size = slots.cells, slots.layout.size
    n = cells.counts.sum(axis=1)
    probs = probabilities(p.eta(cells), p.tau[cells.judge])
    pf, ps, pt = probs[:, 0], probs[:, 1], probs[:, 2]
    g_eta = (cells.counts[:, 0] - cells.counts[:, 1]) / 2 - n * (pf - ps) / 2
    w_ee = n * ((pf + ps) / 4 - (pf - ps) ** 2 / 4)
    vals = slots.values(p)
    grad = np.bincount(slots.cols.ravel(), weights=(vals * g_eta[:, None]).ravel(), minlength=size + 1)[:size]
    outer = (vals[:, :, None] * vals[:, None, :]).reshape(len(n), -1) * w_ee[:, None]
    info = np.bincount(slots.pairs.ravel(), weights=outer.ravel(), minlength=(size + 1) ** 2)
    info = info.reshape(size + 1, size + 1)[:size, :size].copy()
    has = slots.tau >= 0
    if has.any():  # the tie parameters: one per judge, each cell's derivative 1 in its judge's
        at = slots.tau[has]
        g_tau = cells.counts[has, 2] - n[has] * pt[has]
        w_tt = n[has] * pt[has] * (1 - pt[has])
        w_et = -n[has] * (pf[has] - ps[has]) / 2 * pt[has]
        grad += np.bincount(at, weights=g_tau, minlength=size)
        info[np.diag_indices(size)] += np.bincount(at, weights=w_tt, minlength=size)
        flat = slots.cols[has] * size + at[:, None]  # (row's column, its tau column), the spare column dropped
        real = slots.cols[has] < size
        cross = np.bincount(flat[real], weights=(vals[has] * w_et[:, None])[real], minlength=size * size).reshape(size, size)
        info += cross + cross.T
    return grad, info


def fit(cells: Cells, spec: Spec, start: Params | None = None, tolerance: float = TOLERANCE) -> Fit:
    """The penalised maximum-likelihood fit by Fisher scoring with step halving, from `start` (a warm start in the
    bootstrap) or from equal strengths, until no parameter moves by `tolerance`."""
    layout = Layout(spec, cells.n_judges, cells.n_systems, cells.x.shape[1])
    theta = layout.pack(start) if start is not None else layout.pack(_zero(cells))
    p = layout.unpack(theta)

    def objective(params: Params, t: np.ndarray) -> float:
        return loglik(cells, params) - RIDGE * float(t @ t)

    current = objective(p, theta)
    converged, steps = False, 0
    info = np.zeros((layout.size, layout.size))
    slots = Slots(cells, layout)
    for steps in range(1, MAX_STEPS + 1):
        grad, info = score_and_information(slots, p)
        grad = grad - 2 * RIDGE * theta
        try:
            step = np.linalg.solve(info + 2 * RIDGE * np.eye(layout.size), grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(info + 2 * RIDGE * np.eye(layout.size), grad, rcond=None)[0]
        size = 1.0
        while True:
            trial = theta + size * step
            trial_p = layout.unpack(trial)
            value = objective(trial_p, trial)
            if value >= current - 1e-10 or size < 1e-6:
                break
            size /= 2
        change = float(np.max(np.abs(size * step))) if layout.size else 0.0
        gained = value - current
        theta, p, current = trial, trial_p, value
        if change < tolerance or 0 <= gained < FLAT * (1 + abs(current)):  # a flat valley: the likelihood has settled
            converged = True
            break
    return Fit(p, loglik(cells, p), converged, steps, theta, info)


def _zero(cells: Cells) -> Params:
    j, k = cells.n_judges, cells.x.shape[1]
    return Params(np.zeros(cells.n_systems), np.zeros(j), np.zeros((j, k)), np.full(j, -1.0))


def _in_span(matrix: np.ndarray, col: int, basis: list[int]) -> bool:
    """Whether the column adds nothing to the `basis` columns: it is zero, or regressed on them its residual keeps
    less than DEPENDENT of its squared norm."""
    v = matrix[:, col]
    norm = float(v @ v)
    if norm == 0:
        return True
    if not basis:
        return False
    kept = matrix[:, basis]
    coef, *_ = np.linalg.lstsq(kept, v, rcond=None)
    resid = v - kept @ coef
    return float(resid @ resid) < DEPENDENT * norm


def dependent_columns(matrix: np.ndarray, order: list[int]) -> list[int]:
    """The columns (in `order`) that add nothing to the ones kept before them (_in_span)."""
    kept: list[int] = []
    dropped: list[int] = []
    for col in order:
        (dropped if _in_span(matrix, col, kept) else kept).append(col)
    return dropped


def outside_span(matrix: np.ndarray, kept: list[int], candidates: list[int]) -> list[int]:
    """The candidate columns that lie in the span of the kept columns and the other candidates (each regressed on
    all of them): the ones the design cannot tell apart from the rest."""
    return [col for col in candidates if _in_span(matrix, col, [*kept, *(c for c in candidates if c != col)])]


def jacobian_matrix(cells: Cells, spec: Spec, p: Params) -> tuple[np.ndarray, Layout]:
    """The dense d eta / d theta and d tau / d theta for the rank check (cells with any count only, equal weights)."""
    layout = Layout(spec, cells.n_judges, cells.n_systems, cells.x.shape[1])
    seen = cells.counts.sum(axis=1) > 0
    je = _jacobian(cells, layout, p)
    jt = np.zeros_like(je)
    at = layout.tau_at[cells.judge]
    jt[np.flatnonzero(at >= 0), at[at >= 0]] = 1.0
    return np.vstack([je[seen], jt[seen]]), layout
