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
Normalisation: quality has weighted mean 0 and variance 1 within each connected block of the design
(judges linked by answers they both rated), so the effects are in each judge's own score points. Two
blocks that share no judge have no common scale: normalised together, their relative offset and spread
would be a direction the fit can drift along without end (it never converges); normalised apart, each
block is the fit it would be alone. `scale_free=False` fixes every scale at 1: the answer-matched two-way fixed-effects
model (unweighted), kept as a sensitivity check.

Exact sufficient statistics make the bootstrap cheap. Given the judges' parameters, an answer's
quality is an affine function of its verdicts whose coefficients depend only on the answer's type
(which judges rated it, and its generator family, which fixes the indicators). So every sum an ALS
sweep needs is a function of per-(sign, type) counts, sums and cross-products of the verdicts; a
bootstrap resample reweights signs, so all B refits run on per-type arrays, whatever the number of answers.
The cross-products enter a sweep only as quadratic forms a' S a of each type's (J, J) matrix S, so they are
kept in whichever form is smaller: dense (types x J x J), or as each (sign, type) cell's factor rows (S_c =
sum of r r' over at most min(answers, J) rows, from its eigendecomposition), whose cost is the rows x J.
Many judges and few answers per cell (a 46 x 46 peer matrix) take the rows; many answers per cell and a
few judges (a million verdicts of four judges) take the dense form.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.sparse import csr_matrix
from threadpoolctl import threadpool_limits

from dualjudge.analysis.shared.bootstrap import resample_counts

TOL = 1e-7
BOOTSTRAP_TOL = 1e-5  # a refit's parameters to 1e-5 score points: far inside any interval they make
MAX_SWEEPS = 500
# A judge's residual variance is kept at or above this share of its verdicts' variance. Without a bound,
# a judge nearly uncorrelated with the others lets the fit run to a boundary (Heywood) solution: another
# judge's residual variance goes to 0, its precision takes all the weight, and "quality" becomes that
# judge's own standardised score. A judge held at the bound is reported, never estimated.
PSI_FLOOR = 0.01
MAX_CELLS = 5_000_000  # bootstrap refits run in batches of at most this many cells of their largest array


@dataclass(frozen=True)
class Design:
    """A verdict table as a judge x answer grid. `present` marks the verdicts that exist; `terms[k]`
    is indicator k (own model, same family), whose coefficient is per judge; `group` is each answer's
    generator family (answers of one family and one presence pattern share a type)."""

    y: np.ndarray  # (J, A), 0 where absent
    present: np.ndarray  # (J, A) bool
    terms: np.ndarray  # (K, J, A) 0/1
    cluster: np.ndarray  # (A,) sign codes 0..G-1
    n_clusters: int
    group: np.ndarray  # (A,) generator-family codes
    unit: np.ndarray | None = None  # (A,) optional codes of what is compared (a system): answers of two units never share a type

    @property
    def n_judges(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_answers(self) -> int:
        return int(self.y.shape[1])

    @property
    def n_terms(self) -> int:
        return int(self.terms.shape[0])


@dataclass(frozen=True)
class Types:
    """Answers grouped by type, and each (sign, type) cell's verdict statistics (absent verdicts are 0). Only the
    cells that hold answers are kept (at most one per answer), so the statistics take the answers' size, not
    signs x types x judges^2."""

    present: np.ndarray  # (T, J) 0/1
    terms: np.ndarray  # (T, K, J) 0/1, and 0 where the judge did not rate the type
    group: np.ndarray  # (T,) generator-family code
    of_answer: np.ndarray  # (A,) type of each answer
    n_signs: int
    cell_sign: np.ndarray  # (C,) each cell's sign
    cell_type: np.ndarray  # (C,) each cell's type
    cell_n: np.ndarray  # (C,) answers
    cell_sy: np.ndarray  # (C, J) sums of verdicts
    cell_syy: np.ndarray  # (C, J, J) sums of verdict cross-products
    unit: np.ndarray | None = None  # (T,) each type's unit code, when the design has units
    component: np.ndarray | None = None  # (T,) each type's connected block (blocks(): judges linked by shared answers)
    row_cell: np.ndarray | None = None  # (R,) the cell of each answer's verdicts (the rows of the cells' cross-products)
    rows: np.ndarray | None = None  # (R, J) the verdicts (0 where absent): each cell's cross-products are the sum of r r'

    @classmethod
    def of(cls, d: Design) -> Types:
        k, n_j, a = d.terms.shape
        key = np.concatenate([d.group[:, None], d.present.T, d.terms.transpose(2, 0, 1).reshape(a, k * n_j)], axis=1)
        if d.unit is not None:
            key = np.concatenate([d.unit[:, None], key], axis=1)
        uniq, of_answer = unique_rows(key)
        unit = None
        if d.unit is not None:
            unit, uniq = uniq[:, 0].astype(int), uniq[:, 1:]
        n_t = len(uniq)
        cells, of_cell = np.unique(d.cluster.astype(np.int64) * n_t + of_answer, return_inverse=True)  # (sign, type) cells
        of_cell = of_cell.reshape(-1)
        y = (d.y * d.present).T  # (A, J)
        component = blocks(present := uniq[:, 1 : 1 + n_j].astype(np.float64))
        n = np.bincount(of_cell, minlength=len(cells)).astype(np.float64)
        sy = _cell_sums(of_cell, y, len(cells))
        syy = _cell_sums(of_cell, (y[:, :, None] * y[:, None, :]).reshape(a, n_j * n_j), len(cells)).reshape(-1, n_j, n_j)
        terms = uniq[:, 1 + n_j :].reshape(n_t, k, n_j).astype(np.float64) * present[:, None, :]  # where rated
        return cls(
            present,
            terms,
            uniq[:, 0].astype(int),
            of_answer,
            d.n_clusters,
            (cells // n_t).astype(int),
            (cells % n_t).astype(int),
            n,
            sy,
            syy,
            unit,
            component,
            of_cell,
            y,
        )

    @cached_property
    def content_key(self) -> str:
        """A hash of everything a fit on these types reads: two equal keys give bitwise equal fits."""
        h = hashlib.sha256(str(self.n_signs).encode())
        for a in (self.present, self.terms, self.cell_sign, self.cell_type, self.cell_n, self.cell_sy, *self.factors):
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype}{a.shape}".encode() + a.tobytes())
        h.update(b"" if self.component is None else np.ascontiguousarray(self.component).tobytes())
        return h.hexdigest()

    @property
    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's cross-products as rows r with S_c = sum r r': (R,) the cell of each row, (R, J) the rows
        (the answers' verdicts)."""
        if self.row_cell is None or self.rows is None:
            return np.zeros(0, dtype=int), np.zeros((0, self.present.shape[1]))
        return self.row_cell, self.rows

    @cached_property
    def dense(self) -> bool:
        """Whether the (T, J, J) form costs less per resample than the cells' factor rows."""
        n_t, n_j = self.present.shape
        return bool(n_t * n_j * n_j <= len(self.factors[0]) * n_j)

    @property
    def cells_per_resample(self) -> int:
        """The size of one resample's largest array in a sweep."""
        n_t, n_j = self.present.shape
        return int(max(n_t * n_j * (n_j if self.dense else 1), 0 if self.dense else len(self.factors[0]) * n_j))

    def block(self, t: np.ndarray, j: np.ndarray) -> Types:
        """The types `t` (sorted) and judges `j` of one block of the design, as a design of their own."""
        keep = np.isin(self.cell_type, t)
        return Types(
            self.present[np.ix_(t, j)],
            self.terms[t][:, :, j],
            self.group[t],
            self.of_answer,  # not used by a fit
            self.n_signs,
            self.cell_sign[keep],
            np.searchsorted(t, self.cell_type[keep]),
            self.cell_n[keep],
            self.cell_sy[keep][:, j],
            self.cell_syy[keep][:, j][:, :, j],
            None if self.unit is None else self.unit[t],
            np.zeros(len(t), dtype=int),
            *self._block_rows(keep, j),
        )

    def _block_rows(self, keep: np.ndarray, j: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The factor rows of the kept cells, on the judges j, the cells numbered as the block numbers them."""
        if self.row_cell is None or self.rows is None:
            return None, None
        mine = keep[self.row_cell]
        renumbered = np.cumsum(keep) - 1
        return renumbered[self.row_cell[mine]], self.rows[mine][:, j]

    def resampled(self, sign_counts: np.ndarray | None) -> Sums:
        """Per-type statistics of B resamples from (B, G) sign counts (default: the data once): each cell weighted
        by how often its sign was drawn, summed over its type's cells."""
        c = np.ones((1, self.n_signs)) if sign_counts is None else np.asarray(sign_counts, dtype=np.float64)
        return self.weighted(c[:, self.cell_sign])

    def weighted(self, w: np.ndarray) -> Sums:
        """Per-type statistics with each cell weighted by w (B, C)."""
        n_t, n_j, n_c = len(self.group), self.present.shape[1], len(self.cell_type)
        n = np.asarray(self.to_type @ (w * self.cell_n).T).T
        sy = self._per_type(w, self.cell_sy).reshape(len(w), n_t, n_j)
        syy = None
        if self.dense:
            syy = self._per_type(w, self.cell_syy.reshape(n_c, n_j * n_j)).reshape(len(w), n_t, n_j, n_j)
        return Sums(self, n, sy, w, syy)

    def _per_type(self, w: np.ndarray, values: np.ndarray) -> np.ndarray:
        """(B, T, V) the cells' values (C, V) weighted by w (B, C) and summed per type: one sparse product per
        resample or per value column, whichever are fewer (the same sums, element by element, either way)."""
        to_type, b, v = self.to_type, len(w), values.shape[1]
        if b <= v:
            return np.stack([np.asarray(to_type @ (wb[:, None] * values)) for wb in w])
        out = np.empty((b, len(self.group), v))
        wt = np.ascontiguousarray(w.T)
        for k in range(v):
            out[:, :, k] = np.asarray(to_type @ (wt * values[:, k : k + 1])).T
        return out

    @cached_property
    def to_type(self) -> csr_matrix:
        """(T, C) the one-hot of each cell's type."""
        n_c = len(self.cell_type)
        return csr_matrix((np.ones(n_c), (self.cell_type, np.arange(n_c))), shape=(len(self.group), n_c))

    @cached_property
    def row_type(self) -> np.ndarray:
        """(R,) the type of each factor row."""
        return np.asarray(self.cell_type[self.factors[0]])

    @cached_property
    def row_to_type(self) -> csr_matrix:
        """(T, R) the one-hot of each factor row's type."""
        cell, _ = self.factors
        return csr_matrix((np.ones(len(cell)), (self.cell_type[cell], np.arange(len(cell)))), shape=(len(self.group), len(cell)))


def blocks(present: np.ndarray) -> np.ndarray:
    """(T,) the connected block of each type of answer: judges are linked when they rated answers of one type,
    and a type belongs to the block of the judges that rated it."""
    n_t, n_j = present.shape
    if n_t == 0 or n_j == 0:
        return np.zeros(n_t, dtype=int)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rows, cols = np.nonzero(present)
    graph = coo_matrix((np.ones(len(rows)), (rows, n_t + cols)), shape=(n_t + n_j, n_t + n_j))
    _, labels = connected_components(graph, directed=False)
    _, codes = np.unique(labels[:n_t], return_inverse=True)
    return np.asarray(codes.reshape(-1), dtype=int)


def unique_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(key, axis=0, return_inverse=True)` for a matrix of small non-negative whole numbers, fast:
    each row is read as one number in mixed radix (the first column most significant, so the rows come out
    in the same lexicographic order) and those numbers are made unique. Otherwise numpy's row sort."""
    key = np.asarray(key)
    whole = key.size > 0 and key.min() >= 0 and (key.dtype.kind in "iub" or bool(np.all(key == np.floor(key))))
    if whole:
        radix = key.max(axis=0).astype(np.int64) + 1
        if float(np.prod(radix.astype(np.float64))) < 2.0**62:
            weights = np.r_[np.cumprod(radix[::-1])[::-1][1:], 1].astype(np.int64)  # weights[i] = prod(radix[i+1:])
            codes = key.astype(np.int64) @ weights
            _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
            return key[first], inverse.reshape(-1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


def _cell_sums(cell: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
    """(n_cells, V) the sum of `values`' rows in each cell: a sparse one-hot product, so its cost is the
    values' size once (no sort of a large matrix)."""
    onehot = csr_matrix((np.ones(len(cell)), (cell, np.arange(len(cell)))), shape=(n_cells, len(cell)))
    return np.asarray(onehot @ values, dtype=np.float64)


class Sums:
    """B resamples' per-type statistics and the per-judge sums that do not involve quality. The verdicts'
    cross-products are held as `syy` (B, T, J, J) when the types' dense form is the smaller (Types.dense), else
    read through the cells' factor rows and the resample's cell weights `w` (B, C)."""

    def __init__(self, types: Types, n: np.ndarray, sy: np.ndarray, w: np.ndarray, syy: np.ndarray | None = None) -> None:
        self.types, self.n, self.sy, self.w, self.syy = types, n, sy, w, syy  # (B, T), (B, T, J), (B, C)
        p, x = types.present, types.terms
        self.n_terms = x.shape[1]
        self.verdicts = n @ p  # (B, J)
        self.wy = np.einsum("btj,tj->bj", sy, p)
        diagonal = np.einsum("cjj->cj", types.cell_syy) * p[types.cell_type]  # (C, J) where the judge is of the type
        self.wyy = w @ diagonal
        self.wx = np.einsum("bt,tkj->bjk", n, x)
        self.wxy = np.einsum("btj,tkj->bjk", sy, x)
        self.wxx = np.einsum("bt,tkj,tlj->bjkl", n, x, x)
        self.answers = n @ p.sum(axis=1)  # (B,) verdict-weighted answer count, for the normalisation
        self.active = self.wx > 0  # (judge, term) pairs with verdicts, per resample

    def applied(self, a: np.ndarray) -> np.ndarray:
        """The cross-products applied to a (B, T, J), in the form they are held: S_t a_t (B, T, J) when dense, else
        each factor row's r . a_t (B, R). times() and quadratic() read it; a multiple c_t a_t of the same a is this
        scaled (scaled()), so a sweep applies the cross-products once."""
        if self.syy is not None:
            return np.asarray(np.einsum("btij,btj->bti", self.syy, a))
        return np.asarray(np.einsum("rj,brj->br", self.types.factors[1], a[:, self.types.row_type]))

    def scaled(self, applied: np.ndarray, by: np.ndarray) -> np.ndarray:
        """applied() of a_t / by_t (by: (B, T)), from applied() of a_t."""
        return np.asarray(applied / (by[:, :, None] if self.syy is not None else by[:, self.types.row_type]))

    def times(self, a: np.ndarray, applied: np.ndarray | None = None) -> np.ndarray:
        """(B, T, J) each type's cross-products times a (B, T, J): S_t a_t (`applied`: applied(a), when known)."""
        applied = self.applied(a) if applied is None else applied
        if self.syy is not None:
            return applied
        cell, rows = self.types.factors
        weighted = self.w_rows * applied  # (B, R)
        b, n_t, n_j = a.shape
        spread = (weighted.T[:, :, None] * rows[:, None, :]).reshape(len(cell), b * n_j)  # (R, B J)
        return np.asarray(self.types.row_to_type @ spread).reshape(n_t, b, n_j).transpose(1, 0, 2)

    def quadratic(self, a: np.ndarray, applied: np.ndarray | None = None) -> np.ndarray:
        """(B, T) each type's a_t' S_t a_t (`applied`: applied(a), when known)."""
        applied = self.applied(a) if applied is None else applied
        if self.syy is not None:  # two contractions of two operands each: a three-operand einsum runs unblocked, 4x slower
            return np.asarray(np.einsum("bti,bti->bt", a, applied))
        return np.asarray(self.types.row_to_type @ (self.w_rows * applied * applied).T).T

    @cached_property
    def w_rows(self) -> np.ndarray:
        """(B, R) each factor row's resample weight (its cell's): taken once, read every sweep."""
        return np.asarray(self.w[:, self.types.factors[0]])

    def resamples(self, which: np.ndarray) -> Sums:
        """The statistics of some of the resamples (each resample's are its own: taken, not recomputed)."""
        return Sums(self.types, self.n[which], self.sy[which], self.w[which], None if self.syy is None else self.syy[which])

    def block(self, t: np.ndarray, j: np.ndarray) -> Sums:
        """The statistics of the types `t` (sorted) and judges `j` of one block of the design."""
        return self.types.block(t, j).weighted(self.w[:, np.isin(self.types.cell_type, t)])


@dataclass
class Fit:
    """Parameters of B fits (leading axis B). An answer of type t has quality a[t] . y + b[t]."""

    leniency: np.ndarray  # (B, J)
    scale: np.ndarray  # (B, J)
    effects: np.ndarray  # (B, J, K); NaN where a judge has no verdict with that indicator
    precision: np.ndarray  # (B, J), mean 1
    a: np.ndarray  # (B, T, J)
    b: np.ndarray  # (B, T)
    sweeps: int
    converged: bool
    psi: np.ndarray  # (B, J) residual variance in the judge's own score units (NaN where it has too few verdicts)
    at_bound: np.ndarray  # (B, J) bool: the residual variance is held at its lower bound (PSI_FLOOR)

    def judges(self, j: np.ndarray) -> Fit:
        """The parameters of some judges (a block's, or those another design keeps): a warm start. A fit reads no
        quality from its start, and precision only relative to the other judges of an answer, so nothing is
        renormalised: a block's start is the same, bitwise, whichever judges another block lost."""
        b = len(self.leniency)
        return Fit(
            self.leniency[:, j],
            self.scale[:, j],
            self.effects[:, j],
            self.precision[:, j],
            np.zeros((b, 0, len(j))),
            np.zeros((b, 0)),
            self.sweeps,
            self.converged,
            self.psi[:, j],
            self.at_bound[:, j],
        )

    def quality(self, d: Design, types: Types, i: int = 0) -> np.ndarray:
        """(A,) each answer's latent quality in fit i."""
        t = types.of_answer
        return np.asarray(np.einsum("aj,aj->a", self.a[i][t], (d.y * d.present).T) + self.b[i][t])


def fit(
    sums: Sums,
    scale_free: bool = True,
    start: Fit | None = None,
    tol: float = TOL,
    max_sweeps: int = MAX_SWEEPS,
    fixed: np.ndarray | None = None,
) -> Fit:
    """Fit the calibration model once per resample in `sums` (Types.resampled). `fixed` (J, K): effects held
    at a given value instead of estimated (NaN: estimated), for the bounds over effects the data cannot
    identify (a judge's own-family effect at 0, and at its naive value). A design of several blocks is fitted
    block by block (they share no parameter), each to its own convergence, and put back together."""
    component = sums.types.component
    with threadpool_limits(1, user_api="blas"):  # small solves: a second BLAS thread only spins (Multivac: 38 s CPU, not 26)
        if component is None or component.max(initial=0) == 0:
            return _fit(sums, scale_free, start, tol, max_sweeps, fixed)
        return _fit_blocks(sums, component, scale_free, start, tol, max_sweeps, fixed)


def _fit_blocks(
    sums: Sums,
    component: np.ndarray,
    scale_free: bool,
    start: Fit | None,
    tol: float,
    max_sweeps: int,
    fixed: np.ndarray | None,
) -> Fit:
    b, n_j, k = sums.wx.shape
    n_t = len(component)
    out = Fit(
        np.zeros((b, n_j)),
        np.ones((b, n_j)),
        np.full((b, n_j, k), np.nan),
        np.ones((b, n_j)),
        np.zeros((b, n_t, n_j)),
        np.zeros((b, n_t)),
        0,
        True,
        np.full((b, n_j), np.nan),
        np.zeros((b, n_j), dtype=bool),
    )
    types = sums.types
    for c in range(int(component.max()) + 1):
        t = np.flatnonzero(component == c)
        j = np.flatnonzero(types.present[t].any(axis=0))
        sub = sums.block(t, j)
        begun = None if start is None else start.judges(j)
        held = None if fixed is None else fixed[j]
        key = _block_key(sub, scale_free, begun, tol, max_sweeps, held)
        f = _BLOCK_FITS.get(key) or _fit(sub, scale_free, begun, tol, max_sweeps, held)
        _BLOCK_FITS[key] = f
        while len(_BLOCK_FITS) > 16:
            _BLOCK_FITS.pop(next(iter(_BLOCK_FITS)))
        out.leniency[:, j], out.scale[:, j], out.effects[:, j], out.precision[:, j] = f.leniency, f.scale, f.effects, f.precision
        out.psi[:, j], out.at_bound[:, j] = f.psi, f.at_bound
        out.a[np.ix_(np.arange(b), t, j)] = f.a
        out.b[:, t] = f.b
        out.sweeps, out.converged = max(out.sweeps, f.sweeps), out.converged and f.converged
    return out


_BLOCK_FITS: dict[str, Fit] = {}  # the last blocks fitted: a design with one judge left out refits only its block


def _block_key(sums: Sums, scale_free: bool, start: Fit | None, tol: float, max_sweeps: int, fixed: np.ndarray | None) -> str:
    """Everything a block's fit is computed from, hashed: equal keys give bitwise the same fit."""
    h = hashlib.sha256(f"{scale_free}|{tol}|{max_sweeps}|{start is None}|{fixed is None}".encode())
    t = sums.types
    arrays = [t.present, t.terms, t.cell_sign, t.cell_type, t.cell_n, t.cell_sy, sums.w, *t.factors]
    if start is not None:
        arrays += [start.leniency, start.scale, start.effects, start.precision]
    if fixed is not None:
        arrays.append(fixed)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode() + a.tobytes())
    return h.hexdigest()


def _fit(
    sums: Sums,
    scale_free: bool,
    start: Fit | None,
    tol: float,
    max_sweeps: int,
    fixed: np.ndarray | None,
) -> Fit:
    """Alternating least squares, accelerated (SQUAREM: Varadhan and Roland 2008). One ALS sweep is a map G of
    the judges' parameters (leniency, scale, effects, log precision); its fixed point is the fit. Plain sweeps
    converge linearly, and slowly where the data barely separate a judge's scale from quality (a bootstrap
    resample of a real table took thousands of sweeps, and 500 left scales off by whole points); each
    SQUAREM step takes two sweeps, extrapolates along them (a step length per resample) and settles with a
    third, reaching the same fixed point in a fraction of the sweeps. `max_sweeps` bounds the sweeps (G)."""
    b, n_j, k = sums.wx.shape
    if start is not None and scale_free:
        lam = np.broadcast_to(start.leniency, (b, n_j)).copy()
        scale = np.broadcast_to(start.scale, (b, n_j)).copy()
        eff = np.nan_to_num(np.broadcast_to(start.effects, (b, n_j, k))).copy()
        prec = np.broadcast_to(start.precision, (b, n_j)).copy()
    else:
        lam = sums.wy / np.maximum(sums.verdicts, 1e-300)
        scale, eff, prec = np.ones((b, n_j)), np.zeros((b, n_j, k)), np.ones((b, n_j))
    whole = _Sweep(sums, scale_free, fixed)
    x = whole.pack(lam, scale, eff, prec)
    left = np.arange(b)  # the resamples still moving: a converged one is set aside, so a batch costs what its
    sweep, count = whole, 0  # resamples need, not B times its slowest
    while len(left) and count + 3 <= max_sweeps:
        here = x[left]
        x1 = sweep(here)
        r = x1 - here
        settled = np.abs(r).max(axis=1) < tol
        x2 = sweep(x1)
        v = x2 - 2 * x1 + here
        nr, nv = np.linalg.norm(r, axis=1), np.linalg.norm(v, axis=1)
        alpha = np.minimum(np.where(nv > 0, -nr / np.maximum(nv, 1e-300), -1.0), -1.0)[:, None]  # -1: the plain x2
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a jump too far is caught below
            jumped = sweep(here - 2 * alpha * r + alpha**2 * v)
        bad = ~np.isfinite(jumped).all(axis=1)  # a jump too far for some resample: its plain sweeps instead
        new = np.where(bad[:, None], x2, jumped)
        new = np.where(settled[:, None], x1, new)
        settled |= np.abs(new - here).max(axis=1) < tol
        x[left] = new
        count += 3
        if settled.any():
            left = left[~settled]
            if not len(left):
                break
            sweep = _Sweep(sums.resamples(left), scale_free, fixed)
    x = whole(x)  # the returned fit is one sweep's image: quality, residual variances and bounds are its own
    lam, scale, eff, prec = whole.unpack(x)
    qa, qb, psi, at_bound = whole.last
    return Fit(lam, scale, np.where(sums.active, eff, np.nan), prec, qa, qb, count + 1, len(left) == 0, psi, at_bound)


class _Sweep:
    """One ALS sweep of the judges' parameters packed per resample as [leniency, scale, effects, log precision]."""

    def __init__(self, sums: Sums, scale_free: bool, fixed: np.ndarray | None) -> None:
        self.sums, self.scale_free, self.fixed = sums, scale_free, fixed
        self.b, self.n_j, self.k = sums.wx.shape
        self.last: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (
            np.zeros((self.b, 0)),
            np.zeros((self.b, 0)),
            np.full((self.b, self.n_j), np.nan),
            np.zeros((self.b, self.n_j), dtype=bool),
        )

    def pack(self, lam: np.ndarray, scale: np.ndarray, eff: np.ndarray, prec: np.ndarray) -> np.ndarray:
        return np.concatenate([lam, scale, eff.reshape(self.b, -1), np.log(prec)], axis=1)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n, k = self.n_j, self.k
        return x[:, :n], x[:, n : 2 * n], x[:, 2 * n : 2 * n + n * k].reshape(self.b, n, k), np.exp(x[:, 2 * n + n * k :])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        lam, scale, eff, prec = self.unpack(x)
        qa, qb, known = _quality(self.sums, lam, scale, eff, prec, self.scale_free)
        lam, scale, eff, rss = _judge_step(self.sums, qa, qb, self.scale_free, self.fixed, known)
        psi, at_bound = self.last[2], self.last[3]
        if self.scale_free:
            prec, psi, at_bound = _precision(self.sums, rss, scale, prec)
        self.last = (qa, qb, psi, at_bound)
        return self.pack(lam, scale, eff, prec)


def refits(
    types: Types,
    scale_free: bool,
    n_resamples: int,
    seed: int,
    fixed: np.ndarray | None = None,
    read_on: Types | None = None,
) -> Iterator[tuple[Sums, Fit]]:
    """The full fit, then `n_resamples` sign-cluster bootstrap refits warm-started from it, in batches
    (a batch's arrays stay under MAX_CELLS cells): (sums, fit) pairs, the full data's first. Every
    statistic drawn from one seed's refits comes from the same resamples of signs. Each fit is returned as one
    sweep from its converged parameters, so that a fit taken from memory below is the same, bitwise.

    `read_on`: the same answers grouped more finely (the leaderboard's types, split by system). The judges'
    parameters do not depend on the grouping, so they are fitted on `types` and each fit is read on `read_on`
    (its sums, and one sweep for its types' quality). A bootstrap of the same types made earlier in the process
    (self-preference's, before the leaderboard's) is taken as it was: the same parameters, bitwise."""
    key = _fits_key(types, scale_free, n_resamples, seed, fixed)
    known = _FITTED.get(key)
    full_sums = types.resampled(None)
    full: Fit | None = None
    if known:
        full_parameters = known[0]
    else:
        full = fit(full_sums, scale_free=scale_free, max_sweeps=4 * MAX_SWEEPS, fixed=fixed)
        full_parameters = _Parameters.of(full)
    yield _read(full_sums if read_on is None else read_on.resampled(None), full_parameters, scale_free, fixed)
    sign_counts = resample_counts(types.n_signs, n_resamples, seed)
    batch = max(1, MAX_CELLS // max(1, types.cells_per_resample))
    step = batch if read_on is None else max(1, MAX_CELLS // max(1, read_on.cells_per_resample))
    made = []
    for start in range(0, n_resamples, batch):
        counts = sign_counts[start : start + batch]
        sums = types.resampled(counts) if full is not None or read_on is None else None
        if known:
            parameters = known[1].rows(start, start + batch)
        else:
            assert sums is not None and full is not None
            parameters = _Parameters.of(fit(sums, scale_free=scale_free, start=full, tol=BOOTSTRAP_TOL, fixed=fixed))
            made.append(parameters)
        for at in range(0, len(counts), step):
            part = sums if read_on is None and sums is not None else (read_on or types).resampled(counts[at : at + step])
            yield _read(part, parameters.rows(at, at + step), scale_free, fixed)
    if full is not None and n_resamples:  # a bootstrap's worth keeping; a single fit costs less than the memory
        _remember(key, full_parameters, _Parameters.joined(made))


def _read(sums: Sums, parameters: _Parameters, scale_free: bool, fixed: np.ndarray | None) -> tuple[Sums, Fit]:
    """A fit as the bootstrap gives it: one sweep from the judges' parameters on these sums, whether the
    parameters were fitted now or earlier, on these types or on a coarser grouping of the same answers."""
    return sums, _from_parameters(sums, parameters, scale_free, fixed)


def _remember(key: str, full: _Parameters, resamples: _Parameters) -> None:
    _FITTED[key] = (full, resamples)
    while len(_FITTED) > 8:
        _FITTED.pop(next(iter(_FITTED)))


@dataclass(frozen=True)
class _Parameters:
    """The judges' parameters of B fits, as a sweep takes them in (what a fit's quality was computed from)."""

    leniency: np.ndarray
    scale: np.ndarray
    effects: np.ndarray
    precision: np.ndarray
    sweeps: int
    converged: bool

    @classmethod
    def of(cls, f: Fit) -> _Parameters:
        return cls(f.leniency, f.scale, np.nan_to_num(f.effects), f.precision, f.sweeps, f.converged)

    @classmethod
    def joined(cls, parts: list[_Parameters]) -> _Parameters:
        if not parts:
            empty = np.zeros((0, 0))
            return cls(empty, empty, empty, empty, 0, True)
        arrays = [np.concatenate([getattr(p, k) for p in parts]) for k in ("leniency", "scale", "effects", "precision")]
        lam, scale, eff, prec = arrays
        return cls(lam, scale, eff, prec, max(p.sweeps for p in parts), all(p.converged for p in parts))

    def rows(self, start: int, stop: int) -> _Parameters:
        return _Parameters(
            self.leniency[start:stop],
            self.scale[start:stop],
            self.effects[start:stop],
            self.precision[start:stop],
            self.sweeps,
            self.converged,
        )


_FITTED: dict[str, tuple[_Parameters, _Parameters]] = {}  # the last few refits' parameters, by _fits_key


def _fits_key(types: Types, scale_free: bool, n_resamples: int, seed: int, fixed: np.ndarray | None) -> str:
    held = b"" if fixed is None else np.ascontiguousarray(fixed, dtype=np.float64).tobytes()
    return hashlib.sha256(f"{types.content_key}|{scale_free}|{n_resamples}|{seed}|".encode() + held).hexdigest()


def _from_parameters(sums: Sums, known: _Parameters, scale_free: bool, fixed: np.ndarray | None) -> Fit:
    """The fit these sums would give, from the judges' parameters another grouping of the same answers reached:
    one sweep from them (a fit's quality and residual variances are one sweep's)."""
    sweep = _Sweep(sums, scale_free, fixed)
    x = sweep(sweep.pack(known.leniency, known.scale, known.effects, known.precision))
    lam, scale, eff, prec = sweep.unpack(x)
    qa, qb, psi, at_bound = sweep.last
    return Fit(lam, scale, np.where(sums.active, eff, np.nan), prec, qa, qb, known.sweeps, known.converged, psi, at_bound)


def verdict_variance(sums: Sums) -> np.ndarray:
    """(B, J) each judge's variance of its verdicts (0 for a judge that always gives the same score)."""
    n = np.maximum(sums.verdicts, 1e-300)
    return np.asarray(np.maximum(sums.wyy / n - (sums.wy / n) ** 2, 0.0))


@dataclass(frozen=True)
class _Known:
    """What _quality computed that the judge step needs again, for the returned quality qa: qa . sy per type, and
    the cross-products applied to qa (Sums.applied)."""

    ay: np.ndarray
    applied: np.ndarray


def _quality(
    sums: Sums, lam: np.ndarray, scale: np.ndarray, eff: np.ndarray, prec: np.ndarray, scale_free: bool
) -> tuple[np.ndarray, np.ndarray, _Known]:
    """Quality given the judges, as per-type affine coefficients: each answer's precision-weighted
    regression of its verdicts on the scales, q = sum_j p c (y - lam - eff.x) / sum_j p c scale with
    c = prec * scale, then normalised to weighted mean 0 (and variance 1 with free scales)."""
    p, x = sums.types.present, sums.types.terms
    c = prec * scale  # (B, J)
    den = (c * scale) @ p.T  # (B, T)
    safe = np.where(den > 0, den, 1.0)
    alpha = p[None] * c[:, None, :] / safe[:, :, None]  # (B, T, J)
    offset = lam[:, None, :] + np.einsum("bjk,tkj->btj", eff, x)  # (B, T, J)
    beta = (alpha * offset).sum(axis=2)  # (B, T)
    ay = np.einsum("btj,btj->bt", alpha, sums.sy)
    s1 = ay - beta * sums.n  # sum of q over a type's answers
    applied = sums.applied(alpha)
    s2 = sums.quadratic(alpha, applied) - 2 * beta * ay + beta**2 * sums.n
    # weighted by verdicts per answer, within each connected block of the design
    types = sums.types
    component = types.component if types.component is not None else np.zeros(len(types.group), dtype=int)
    weight = _onehot_weights(p.sum(axis=1), component)  # (T, C)
    total = np.maximum(sums.n @ weight, 1e-300)  # (B, C): a resample may leave a block without answers
    mean = (s1 @ weight) / total
    sd = np.sqrt(np.maximum((s2 @ weight) / total - mean**2, 1e-300)) if scale_free else np.ones_like(mean)
    mean_t, sd_t = mean[:, component], sd[:, component]  # (B, T)
    return alpha / sd_t[:, :, None], (-beta - mean_t) / sd_t, _Known(ay / sd_t, sums.scaled(applied, sd_t))


def _onehot_weights(weight: np.ndarray, component: np.ndarray) -> np.ndarray:
    """(T, C) each type's weight in the column of its block."""
    out = np.zeros((len(weight), int(component.max()) + 1 if len(component) else 1))
    out[np.arange(len(weight)), component] = weight
    return out


def type_sums_of_quality(sums: Sums, qa: np.ndarray, qb: np.ndarray, known: _Known | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per type: the sum of its answers' quality, and of (their verdicts' product with it), (B, T), (B, T, J)."""
    ay = np.einsum("btj,btj->bt", qa, sums.sy) if known is None else known.ay
    return ay + qb * sums.n, sums.times(qa, None if known is None else known.applied) + qb[:, :, None] * sums.sy


def quality_sums(sums: Sums, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """(B, T) the sum of each type's answers' quality (type_sums_of_quality's first part, alone)."""
    return np.asarray(np.einsum("btj,btj->bt", qa, sums.sy) + qb * sums.n)


def _judge_step(
    sums: Sums,
    qa: np.ndarray,
    qb: np.ndarray,
    scale_free: bool,
    fixed: np.ndarray | None = None,
    known: _Known | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per judge, the normal equations of [1, quality, indicators] (or, with the slope fixed at 1, of
    [1, indicators] on what quality leaves), solved for every resample at once. Also returns each
    judge's residual sum of squares (y'Wy - coef'X'Wy at the solution). A `fixed` effect moves to the
    left-hand side (y - v x) and its coefficient is pinned at v."""
    p, x = sums.types.present, sums.types.terms
    q1, vy = type_sums_of_quality(sums, qa, qb, known)  # sum of q, and of y_j q, over each type's answers
    q2 = np.einsum("btj,btj->bt", qa, vy) + qb * q1  # sum of q^2
    sq, sqq = q1 @ p, q2 @ p
    sqy = np.einsum("btj,tj->bj", vy, p)
    sxq = np.einsum("bt,tkj->bjk", q1, x)
    b, n_j, k = sums.wx.shape
    n_p = k + (2 if scale_free else 1)
    first = n_p - k
    xtx = np.zeros((b, n_j, n_p, n_p))
    xty = np.zeros((b, n_j, n_p))
    xtx[:, :, 0, 0] = sums.verdicts
    xtx[:, :, 0, first:] = xtx[:, :, first:, 0] = sums.wx
    xtx[:, :, first:, first:] = sums.wxx
    if scale_free:
        xtx[:, :, 0, 1] = xtx[:, :, 1, 0] = sq
        xtx[:, :, 1, 1] = sqq
        xtx[:, :, 1, first:] = xtx[:, :, first:, 1] = sxq
        xty[:, :, 0], xty[:, :, 1], xty[:, :, first:] = sums.wy, sqy, sums.wxy
    else:
        xty[:, :, 0], xty[:, :, first:] = sums.wy - sq, sums.wxy - sxq
    held = np.zeros((n_j, k), dtype=bool) if fixed is None else np.isfinite(fixed)
    value = np.zeros((n_j, k)) if fixed is None else np.nan_to_num(fixed)
    yy = np.array(sums.wyy, dtype=float)
    for j, t in zip(*np.nonzero(held)):  # y - v x: the known term leaves the right-hand side
        v, col = value[j, t], first + t
        yy[:, j] += -2 * v * sums.wxy[:, j, t] + v * v * sums.wxx[:, j, t, t]
        xty[:, j, :] -= v * xtx[:, j, :, col]
    pinned = ~sums.active | held[None]  # (B, J, K): no verdicts with the indicator, or held
    for t in range(k):  # a pinned coefficient: its row and column are the identity, its value the target
        off = pinned[:, :, t]
        xtx[:, :, first + t, :][off] = 0.0
        xtx[:, :, :, first + t][off] = 0.0
        xtx[:, :, first + t, first + t][off] = 1.0
        xty[:, :, first + t][off] = 0.0
    coef = np.linalg.solve(xtx + 1e-12 * np.eye(n_p), xty[..., None])[..., 0]
    lam = coef[:, :, 0]
    scale = coef[:, :, 1] if scale_free else np.ones_like(lam)
    rss = yy - (coef * xty).sum(axis=2) if scale_free else np.zeros_like(lam)
    effects = coef[:, :, first:]
    if fixed is not None:
        effects = np.where(held[None] & sums.active, value[None], effects)
    return lam, scale, effects, rss


def _precision(sums: Sums, rss: np.ndarray, scale: np.ndarray, prec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1 / residual variance per judge, mean 1; and the residual variance itself, and where it sits at
    its lower bound (PSI_FLOOR x the judge's verdict variance). Each verdict's share of its answer's
    quality (its leverage h = prec*scale^2 over the answer's sum of those) is taken off the degrees of
    freedom: a judge that dominates the answers' quality would otherwise look noiseless."""
    p = sums.types.present
    info = prec * scale**2  # (B, J)
    den = info @ p.T  # (B, T)
    inv = np.divide(sums.n, den, out=np.zeros_like(den), where=den > 0)
    dof = sums.verdicts - info * (inv @ p)
    psi = np.divide(rss, dof, out=np.full_like(dof, np.nan), where=dof > 1e-9)
    floor = PSI_FLOOR * verdict_variance(sums)
    at_bound = np.isfinite(psi) & (psi < floor)
    psi = np.where(at_bound, floor, psi)
    psi = np.where(np.isfinite(psi) & (psi > 1e-12), psi, np.nan)
    fallback = np.nanmean(np.where(np.isnan(psi).all(axis=1, keepdims=True), 1.0, psi), axis=1, keepdims=True)
    out = 1.0 / np.where(np.isnan(psi), fallback, psi)
    return out / out.mean(axis=1, keepdims=True), psi, at_bound


def residuals(fit: Fit, d: Design, types: Types) -> np.ndarray:
    """(J, A) each verdict minus what the full fit predicts (leniency + scale x quality + effects); NaN where absent."""
    quality = fit.quality(d, types)
    effects = np.nan_to_num(fit.effects[0])  # (J, K)
    predicted = fit.leniency[0][:, None] + fit.scale[0][:, None] * quality[None, :] + np.einsum("jk,kja->ja", effects, d.terms)
    return np.where(d.present, d.y - predicted, np.nan)


def residual_correlations(fit: Fit, d: Design, types: Types, min_shared: int = 30) -> np.ndarray:
    """(J, J) correlation of two judges' residuals over the answers both rated (NaN with fewer than
    `min_shared`). The model says the judges' errors are independent given quality; a pair whose
    residuals move together (the same backbone, or one model entered twice) breaks it."""
    return pairwise_correlations(residuals(fit, d, types), d.present, min_shared)


def pairwise_correlations(values: np.ndarray, present: np.ndarray, min_shared: int = 1) -> np.ndarray:
    """(J, J) Pearson correlation of two rows of `values` (J, A) over the columns both have (`present`), all
    pairs at once from shared-column sums; NaN on the diagonal, with fewer than `min_shared` shared columns,
    or where a row is constant over them."""
    p = np.asarray(present, dtype=np.float64)
    x = np.where(present, np.nan_to_num(values), 0.0)
    n = p @ p.T
    sx = x @ p.T  # [j, k]: sum of row j over the columns j and k share
    sxx = (x * x) @ p.T
    sxy = x @ x.T
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = n * sxy - sx * sx.T
        var = (n * sxx - sx**2) * (n * sxx - sx**2).T
        out = cov / np.sqrt(var)
    var_ok = ((n * sxx - sx**2) > 1e-9 * np.maximum(n * sxx, 1e-300)) & ((n * sxx - sx**2).T > 1e-9 * np.maximum(n * sxx, 1e-300).T)
    out = np.where((n >= min_shared) & var_ok, np.clip(out, -1.0, 1.0), np.nan)
    np.fill_diagonal(out, np.nan)
    return out


def expected_residual_correlations(fit: Fit) -> np.ndarray:
    """(J, J) the correlations residual_correlations should show if the model holds, on answers every
    judge rated: each residual is e_j = eps_j - scale_j (q_hat - q), and q_hat mixes every judge's noise
    with weights w_k = precision_k scale_k / sum(precision scale^2), so residuals of independent judges
    still correlate (negatively) through q_hat. cov(e) = (I - s w') Psi (I - w s')."""
    s, psi, prec = fit.scale[0], fit.psi[0], fit.precision[0]
    psi = np.where(np.isfinite(psi), psi, np.nanmean(psi) if np.isfinite(psi).any() else 1.0)
    w = prec * s / max(float((prec * s * s).sum()), 1e-300)
    m = np.eye(len(s)) - np.outer(s, w)
    cov = m @ np.diag(psi) @ m.T
    sd = np.sqrt(np.maximum(np.diag(cov), 1e-300))
    return np.asarray(cov / np.outer(sd, sd))


def neutral_reliability(fit: Fit, d: Design, judge_family: np.ndarray) -> np.ndarray:
    """(J,) for each judge, how well the judges of other families pin the quality of its own family's
    answers: the share of quality variance their verdicts explain, I / (1 + I) with I the mean over
    those answers of sum_k scale_k^2 / psi_k (quality has variance 1). NaN for a judge without
    own-family answers. Near 0: the neutral judges hardly track quality, so nothing separates the
    judge's own-family effect from the quality of its family's answers."""
    s, psi = fit.scale[0], fit.psi[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        info = np.where(np.isfinite(psi) & (psi > 0), np.maximum(s, 0.0) ** 2 / psi, 0.0)  # (J,)
    out = np.full(d.n_judges, np.nan)
    for j in range(d.n_judges):
        own = d.present[j] & (d.terms[:, j].sum(axis=0) > 0)
        if not own.any():
            continue
        neutral = judge_family != judge_family[j]  # (J,)
        per_answer = (d.present[:, own] * neutral[:, None] * info[:, None]).sum(axis=0)
        i = float(per_answer.mean())
        out[j] = i / (1.0 + i)
    return out


# -- identification ------------------------------------------------------------------------------------
def unidentified(
    judges: list[str], judge_family: dict[str, str], cells: set[tuple[str, str]], own_rows: dict[str, int]
) -> dict[str, str]:
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
            reasons[j] = (
                f"no chain of neutral judgements links this judge's use of the scale to the {fam} answers' "
                f"quality, so its leniency cannot be told apart from self-preference; add a judge or a "
                f"generator of a third family"
            )
    return reasons
