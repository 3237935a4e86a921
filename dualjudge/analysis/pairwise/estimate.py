"""Self-preference from pairwise verdicts: per judge the literature's raw own-choice rate, its order consistency and
first-slot preference, and the own-family term of the Davidson-Bradley-Terry fit (model.py) on the logit and the
probability scale with what quality and position explain; a leaderboard of the systems' strengths; a transitivity
test against the saturated model; the whole fit redone in an item-clustered bootstrap.

A judge that picks one slot (99% of its decisive verdicts or more) is a position-only judge: it is flagged and left
out of the fit, nothing else being estimable from it. A term the design cannot identify is held at 0 and named.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from dualjudge.analysis.board.ranks import calibrated_board, competition_ranks
from dualjudge.analysis.pairwise import belief, model
from dualjudge.analysis.pairwise.belief import never
from dualjudge.analysis.pairwise.cells import Coded, Comparisons, coded, comparisons
from dualjudge.analysis.pairwise.model import FIRST_WINS, SECOND_WINS, TIE, Cells, Params, Spec
from dualjudge.analysis.pointwise.belief import NEVER_ANSWERED, judge_entry
from dualjudge.analysis.shared.bootstrap import MIN_RELIABLE_SIGNS, Interval, resample_counts, t_interval
from dualjudge.analysis.shared.choices import N_RESAMPLES
from dualjudge.analysis.shared.results import Estimate, PairwiseAnalysis, SideBySide, Summary

POSITION_ONLY = 0.99  # a judge giving this share of its decisive verdicts (or 1 minus it) to one slot
POSITION_ONLY_MIN = 20  # ... out of at least this many; with fewer (at least POSITION_ONLY_FEW), every one of them
POSITION_ONLY_FEW = 4
SEPARATED = 8.0  # a logit beyond this is a separated term (one side always wins): not settled
CHUNK = 100  # resamples whose cells are made at once
SATURATED_MAX_PAIRS = 400  # per judge; a judge comparing more pairs is not in the transitivity test
FIRST, OWN = 0, 1  # the main model's terms

DEFINITIONS = {
    "raw_own_rate": (
        "the share of a judge's comparisons of its own family's answer with another family's that it gives to its "
        "own (a tie counts one half), over both presentation orders: Panickssery et al. 2024's self-preference "
        "(their 1/2[P(own | own first) + P(own | own second)], averaged over pairs; with the judge's probabilities "
        "where the table gives prob_a, as they computed it) and the own win rate of Zheng et al. 2023"
    ),
    "order_consistency": (
        "of the pairs a judge judged in both orders, the share whose two verdicts pick the same answer (or tie twice)"
    ),
    "position": "the judge's first-slot preference: the log-odds an answer gains from being shown first, strengths held fixed",
    "decisiveness": (
        "how sharply the judge separates answers of different strength, relative to the judges' geometric mean (1): "
        "the pairwise form of scale use"
    ),
    "own_logit": "the log-odds the judge adds to its own family's answer against another's, strengths and position held fixed",
    "own_points": (
        "what the own-family term adds to the judge's own-choice rate (0-1): the fitted rate minus the fitted rate with "
        "the term at 0, over the judge's own-versus-other comparisons"
    ),
    "explained": (
        "the raw own-choice rate above 1/2 in parts: quality (the fitted rate with position and own term at 0, minus "
        "1/2), position (what the first-slot term adds), own (what the own-family term adds), unexplained (the raw "
        "rate minus the fitted one: probabilities in place of choices, a term held at 0)"
    ),
}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Design:
    """The fit's cells, which parameters are free and why the others are held."""

    coded: Coded
    spec: Spec
    held: dict[str, str]  # "position:judge" / "own:judge" / "decisiveness:judge" -> why held
    unidentified: list[str]  # one line each
    in_fit: np.ndarray  # (J,) judges whose comparisons are fitted


def _own_diff(comps: Comparisons) -> np.ndarray:
    return np.asarray(comps.own_first.astype(float) - comps.own_second.astype(float))


def _position_only(comps: Comparisons) -> dict[int, str]:
    out = {}
    for j, judge in enumerate(comps.judges):
        mine = comps.judge == j
        decisive = mine & (comps.outcome != TIE)
        n = int(decisive.sum())
        if n < POSITION_ONLY_FEW:
            continue
        first = int((decisive & (comps.outcome == FIRST_WINS)).sum())
        share = first / n
        bound = POSITION_ONLY if n >= POSITION_ONLY_MIN else 1.0
        if share >= bound or share <= 1 - bound:
            slot, k = ("first", first) if share >= 0.5 else ("second", n - first)
            out[j] = (
                f"{judge} picks the {slot}-shown answer in {k:,} of its {n:,} decisive verdicts: a position-only judge, "
                f"nothing else is estimable from its verdicts (left out of the fit; no own-family term)"
            )
    return out


def _both_orders(comps: Comparisons, rows: np.ndarray) -> np.ndarray:
    """(J,) whether the judge saw some pair in both orders (among `rows`)."""
    frame = pd.DataFrame({"pair": comps.pair[rows], "first": comps.first[rows], "judge": comps.judge[rows]})
    orders = frame.groupby("pair")["first"].nunique()
    both = set(orders.index[orders > 1])
    seen = frame[frame["pair"].isin(both)]["judge"].unique()
    out = np.zeros(len(comps.judges), dtype=bool)
    out[seen] = True
    return out


def design(
    comps: Comparisons, x: np.ndarray, terms: tuple[str, ...], exclude: dict[int, str], rows: np.ndarray | None = None
) -> Design:
    """The cells of the fitted judges' comparisons and the free parameters: the design's rank checked, the order's
    variation required for a position term (and then for the terms beside it)."""
    n_j = len(comps.judges)
    in_fit = np.array([j not in exclude for j in range(n_j)])
    keep = in_fit[comps.judge] if rows is None else (in_fit[comps.judge] & rows)
    c = coded(comps, x, keep)
    counts = np.zeros((n_j, 3))
    np.add.at(counts, c.cells.judge, c.cells.counts)
    answered = counts.sum(axis=1) > 0
    ties = answered & (counts[:, TIE] > 0) & (counts[:, TIE] < counts.sum(axis=1))
    held: dict[str, str] = {}
    unidentified: list[str] = []
    beta = np.zeros((n_j, len(terms)), dtype=bool)
    beta[answered] = True
    varies = _both_orders(comps, keep)
    for j in np.flatnonzero(answered):
        judge = comps.judges[j]
        if not varies[j]:
            beta[j, :] = False
            held[f"position:{judge}"] = held[f"own:{judge}"] = (
                f"{judge} saw every pair in one order only: a first-slot preference cannot be told from the strengths "
                f"or from self-preference"
            )
            unidentified.append(held[f"own:{judge}"])
    for j in np.flatnonzero(answered):
        judge = comps.judges[j]
        for k, name in enumerate(terms):
            if k == FIRST or not beta[j, k]:
                continue
            if not np.any(c.cells.x[c.cells.judge == j, k] != 0):
                beta[j, k] = False
                held[f"{name}:{judge}"] = never(name, judge)
    spec = Spec(True, np.zeros(n_j, dtype=bool), beta, ties)
    spec, more = _ranked(c.cells, spec, comps, terms)
    held.update(more)
    unidentified += [why for key, why in more.items()]
    return Design(c, spec, held, unidentified, in_fit & answered)


def _ranked(cells: Cells, spec: Spec, comps: Comparisons, terms: tuple[str, ...]) -> tuple[Spec, dict[str, str]]:
    """The spec with every parameter that the design cannot identify held, and why. The base (strengths, ties,
    first-slot terms) is kept column by column in that order; a judge's other term is identified only if its column
    is outside the span of the base and every other term: where two terms move together (with two families, each
    judge's favour and the strength gap between them), all of them are held, never one pinned by the other."""
    start = model._zero(cells)
    matrix, layout = model.jacobian_matrix(cells, spec, start)
    base = list(range(layout.n_s))
    base += [int(layout.tau_at[j]) for j in range(cells.n_judges) if layout.tau_at[j] >= 0]
    base += [int(layout.beta_at[j, FIRST]) for j in range(cells.n_judges) if layout.beta_at[j, FIRST] >= 0]
    dropped = set(model.dependent_columns(matrix, base))
    kept = [c for c in base if c not in dropped]
    others = [int(layout.beta_at[j, k]) for k in range(1, len(terms)) for j in range(cells.n_judges) if layout.beta_at[j, k] >= 0]
    dropped |= set(model.outside_span(matrix, kept, others))
    beta, ties = spec.beta.copy(), spec.ties.copy()
    held: dict[str, str] = {}
    for j in range(cells.n_judges):
        judge = comps.judges[j]
        for k, name in enumerate(terms):
            if layout.beta_at[j, k] in dropped:
                beta[j, k] = False
                held[f"{name}:{judge}"] = _unidentified(name, judge, comps, cells, j)
        if layout.tau_at[j] in dropped:
            ties[j] = False
    systems = [comps.systems[m + 1] for m in range(layout.n_s) if m in dropped]
    if systems:
        held["strengths"] = (
            f"the strengths of {', '.join(systems)} are not tied to the others' by any comparison (a disconnected design)"
        )
    return replace(spec, beta=beta, ties=ties), held


def _unidentified(term: str, judge: str, comps: Comparisons, cells: Cells, j: int) -> str:
    family = comps.judge_family[judge]
    if term == "own":
        theirs = np.array([comps.system_family[s] == family for s in comps.systems])
        checked = (cells.judge != j) & (theirs[cells.first] != theirs[cells.second]) & (cells.counts.sum(axis=1) > 0)
        if not checked.any():
            return (
                f"{judge}'s own-family term is not identifiable: no judge of another family compared {family}'s answers "
                f"with others, so its family's strength and its own favour are one number (the design's rank is short)"
            )
        return (
            f"{judge}'s own-family term is not identifiable: the judges that pin {family}'s strength have own-family "
            f"terms of their own that move with it (with two families, each judge's favour and the strength gap are "
            f"one equation short: a third family's judge, or pairs of two other families' answers, would separate them)"
        )
    if term == "first":
        return f"{judge}'s first-slot preference is not identifiable from its comparisons"
    return f"{judge}'s term {term} is not identifiable: it moves with the others in every comparison"


def with_decisiveness(d: Design, comps: Comparisons, at: Params) -> tuple[Design, int | None]:
    """The design with a decisiveness per fitted judge that the design can tell from the strengths (one judge, the
    one with the most comparisons, is the reference while fitting)."""
    cells = d.coded.cells
    per_judge = np.bincount(cells.judge, weights=cells.counts.sum(axis=1), minlength=cells.n_judges)
    candidates = np.flatnonzero(d.in_fit)
    if len(candidates) < 2:
        return d, (int(candidates[0]) if len(candidates) else None)
    ref = int(candidates[np.argmax(per_judge[candidates])])
    alike = _strengths_alike(d, at)
    if alike is not None:  # no strength gap to be more or less sharp about: one decisiveness for all
        held = dict(d.held)
        for j in candidates:
            held[f"decisiveness:{comps.judges[j]}"] = alike
        return replace(d, held=held), ref
    decisive = d.in_fit.copy()
    decisive[ref] = False
    trial = replace(d.spec, decisive=decisive)
    matrix, layout = model.jacobian_matrix(cells, trial, at)
    others = [i for i in range(layout.size) if i not in set(layout.d_at[layout.d_at >= 0])]
    dropped = set(model.outside_span(matrix, others, [int(layout.d_at[j]) for j in np.flatnonzero(decisive)]))
    held = dict(d.held)
    for j in np.flatnonzero(decisive):
        if layout.d_at[j] in dropped:
            decisive[j] = False
            held[f"decisiveness:{comps.judges[j]}"] = (
                f"{comps.judges[j]} compares too few pairs of different strength for its decisiveness to be told from "
                f"the strengths (held at the reference judge's)"
            )
    return replace(d, spec=replace(d.spec, decisive=decisive), held=held), ref


STRENGTHS_ALIKE = 0.05  # the likelihood-ratio test of equal strengths: at or above this p, decisiveness is not fitted


def _strengths_alike(d: Design, at: Params) -> str | None:
    """Why no judge's decisiveness is fitted where the systems' strengths cannot be told apart (a decisiveness is a
    slope on the strength differences: with none it is any number), else None."""
    cells = d.coded.cells
    equal = model.fit(cells, replace(d.spec, strengths=False))
    plain = model.loglik(cells, at)
    test = _lr(plain, equal.loglik, cells.n_systems - 1)
    if test["p"] < STRENGTHS_ALIKE:
        return None
    return (
        f"the systems' strengths are not told apart (likelihood ratio {test['lr']:.1f} on {test['df']} df, p = "
        f"{test['p']:.2g}), so no judge's decisiveness, a slope on their differences, is fitted: one for all"
    )


def _scaled(d: Design, ref: int | None) -> np.ndarray:
    out = d.spec.decisive.copy()
    if ref is not None:
        out[ref] = True
    return out


# -- per-resample quantities ------------------------------------------------------------------------------------
def own_rates(cells: Cells, p: Params, counts: np.ndarray, terms_off: tuple[int, ...]) -> np.ndarray:
    """(J,) the fitted own-choice rate over each judge's own-versus-other cells, with the terms in `terms_off`
    at 0 (ties half); NaN for a judge without such cells."""
    beta = p.beta.copy()
    for k in terms_off:
        beta[:, k] = 0.0
    probs = model.probabilities(replace(p, beta=beta).eta(cells), p.tau[cells.judge])
    own_first = cells.x[:, OWN] > 0
    own = np.where(own_first, probs[:, FIRST_WINS], probs[:, SECOND_WINS]) + probs[:, TIE] / 2
    n = counts.sum(axis=1) * (cells.x[:, OWN] != 0)
    num = np.bincount(cells.judge, weights=n * own, minlength=cells.n_judges)
    den = np.bincount(cells.judge, weights=n, minlength=cells.n_judges)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


@dataclass
class Draws:
    """Per fit (row 0 the point estimate, then the resamples): what the report gives an interval for."""

    strengths: np.ndarray  # (1+R, S), centred
    d: np.ndarray  # (1+R, J)
    beta: np.ndarray  # (1+R, J, K)
    rates: np.ndarray  # (1+R, J, 3): fitted own-choice rate; with own term at 0; with own and position at 0
    plain_own: np.ndarray  # (1+R, J)


def _derived(cells: Cells, p: Params, counts: np.ndarray) -> np.ndarray:
    return np.stack(
        [own_rates(cells, p, counts, ()), own_rates(cells, p, counts, (OWN,)), own_rates(cells, p, counts, (OWN, FIRST))], axis=1
    )


def bootstrap(
    d: Design,
    plain_spec: Spec,
    scaled: np.ndarray,
    point: model.Fit,
    plain: model.Fit,
    weights: np.ndarray,
    tell: Progress,
    with_plain: bool = True,
) -> Draws:
    """The full fit (and, `with_plain`, the plain one) redone on each resample's cells, warm-started at the point
    estimate; a refit that does not converge counts as missing."""
    cells = d.coded.cells
    r = len(weights)
    n_s, n_j, n_k = cells.n_systems, cells.n_judges, cells.x.shape[1]
    out = Draws(
        np.full((1 + r, n_s), np.nan),
        np.full((1 + r, n_j), np.nan),
        np.full((1 + r, n_j, n_k), np.nan),
        np.full((1 + r, n_j, 3), np.nan),
        np.full((1 + r, n_j), np.nan),
    )

    def record(i: int, f: model.Fit, pf: model.Fit, counts: np.ndarray) -> None:
        c = f.params.centred(scaled)
        out.strengths[i], out.d[i], out.beta[i] = c.s, c.d, c.beta
        out.rates[i] = _derived(cells, f.params, counts)
        out.plain_own[i] = pf.params.beta[:, OWN] if n_k > OWN else np.nan

    record(0, point, plain, cells.counts)
    done = 0
    for start in range(0, r, CHUNK):
        block = d.coded.resampled(weights[start : start + CHUNK])
        for b, counts in enumerate(block):
            resample = cells.with_counts(counts)
            f = model.fit(resample, d.spec, point.params, model.RESAMPLE_TOLERANCE)
            pf = model.fit(resample, plain_spec, plain.params, model.RESAMPLE_TOLERANCE) if with_plain else plain
            record(1 + start + b, f if f.converged else _failed(f), pf if pf.converged else _failed(pf), counts)
        done += len(block)
        tell(f"bootstrap {done}/{r}")
    return out


def _failed(f: model.Fit) -> model.Fit:
    nan = f.params
    return replace(
        f, params=Params(np.full_like(nan.s, np.nan), np.full_like(nan.d, np.nan), np.full_like(nan.beta, np.nan), nan.tau)
    )


# -- per judge --------------------------------------------------------------------------------------------------
def _estimate(point: float, draws: np.ndarray, g: int, within: tuple[float, float] = (-np.inf, np.inf)) -> dict[str, float] | None:
    """The t interval of a statistic over the resamples, its bounds kept `within` the statistic's range (a rate's
    interval never leaves 0-1, however few the clusters)."""
    if not np.isfinite(point):
        return None
    iv: Interval | None = t_interval(point, draws, g)
    if iv is None:
        return None
    out = iv.as_dict()
    out["ci_low"], out["ci_high"] = max(out["ci_low"], within[0]), min(out["ci_high"], within[1])
    return out


def raw_rates(comps: Comparisons, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per judge the raw own-choice rate, its resampled values (R, J) and its comparisons (the literature's)."""
    mine = comps.own_vs_other()
    won = comps.own_won()
    n_j, n_g = len(comps.judges), len(comps.groups)
    flat = comps.group[mine] * n_j + comps.judge[mine]
    num = np.bincount(flat, weights=won[mine], minlength=n_g * n_j).reshape(n_g, n_j)
    den = np.bincount(flat, minlength=n_g * n_j).reshape(n_g, n_j).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num.sum(0) / den.sum(0), (weights @ num) / (weights @ den), den.sum(0)


def order_consistency(comps: Comparisons) -> tuple[np.ndarray, np.ndarray]:
    """Per judge the share of pairs judged in both orders whose two verdicts agree, and how many such pairs."""
    won = np.where(comps.outcome == FIRST_WINS, comps.first, np.where(comps.outcome == SECOND_WINS, comps.second, -1))
    frame = pd.DataFrame({"pair": comps.pair, "first": comps.first, "won": won, "judge": comps.judge})
    once = frame.drop_duplicates(["pair", "first"])
    both = once[once.groupby("pair")["first"].transform("nunique") == 2]
    agree = both.groupby("pair").agg(judge=("judge", "first"), same=("won", "nunique"))
    agree["same"] = agree["same"] == 1
    n_j = len(comps.judges)
    pairs = np.bincount(agree["judge"].to_numpy(dtype=np.int64), minlength=n_j).astype(float)
    same = np.bincount(agree["judge"].to_numpy(dtype=np.int64), weights=agree["same"].to_numpy(dtype=float), minlength=n_j)
    with np.errstate(invalid="ignore", divide="ignore"):
        return same / pairs, pairs


def _share(mask: np.ndarray, of: np.ndarray, judge: np.ndarray, n_j: int) -> np.ndarray:
    num = np.bincount(judge, weights=(mask & of).astype(float), minlength=n_j)
    den = np.bincount(judge, weights=of.astype(float), minlength=n_j)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _num(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def pairwise(
    frame: pd.DataFrame,
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    progress: Progress | None = None,
    table: str | None = None,
) -> PairwiseAnalysis:
    """The pairwise analysis of a validated pairwise table (table.validate_pairwise)."""
    t0 = time.perf_counter()
    tell = progress or (lambda _: None)
    comps = comparisons(frame)
    n_j, g = len(comps.judges), len(comps.groups)
    weights = resample_counts(g, n_resamples, seed)
    warnings: list[str] = []
    if g < MIN_RELIABLE_SIGNS:
        warnings.append(f"only {g} clusters: the intervals are unreliable (fewer than {MIN_RELIABLE_SIGNS})")
    position_only = _position_only(comps)
    terms = ("first", "own")
    x = np.column_stack([np.ones(len(comps.judge)), _own_diff(comps)])
    tell("pairwise: design")
    d = design(comps, x, terms, position_only)
    fitted = _fitted(comps, d, weights, tell) if d.in_fit.any() else None
    if fitted is None:
        warnings.append("no judge's verdicts can be fitted (each is a position-only judge or gave no verdict)")
    raw, raw_draws, _ = raw_rates(comps, weights)
    consistency, both = order_consistency(comps)
    decisive_verdicts = comps.outcome != TIE
    first_share = _share(comps.outcome == FIRST_WINS, decisive_verdicts, comps.judge, n_j)
    tie_share = _share(comps.outcome == TIE, np.ones(len(comps.judge), bool), comps.judge, n_j)
    n_comp = np.bincount(comps.judge, minlength=n_j)
    n_own = np.bincount(comps.judge[comps.own_vs_other()], minlength=n_j)
    by_prob = np.isfinite(comps.prob_first).any()
    judges = []
    for j, judge in enumerate(comps.judges):
        judges.append(
            _judge(j, judge, comps, fitted, g, raw[j], raw_draws[:, j], position_only.get(j))
            | {
                "comparisons": int(n_comp[j]),
                "missing": comps.missing.get(judge, 0),
                "tie_share": _num(tie_share[j]),
                "first_share": _num(first_share[j]),
                "order_consistency": _num(consistency[j]),
                "pairs_both_orders": int(both[j]),
                "own_comparisons": int(n_own[j]),
                "raw_from": "probabilities" if by_prob else "verdicts",
            }
        )
    decomposed = decomposition(frame, comps, position_only, weights, fitted, tell)
    for entry in judges:
        entry["belief"] = decomposed["judges"].get(entry["judge"])
    _adjust(judges)
    no_fit: dict[str, Any] = {"test": None, "reason": "no judge's verdicts can be fitted", "fits": None}
    transitivity = fitted.transitivity if fitted else no_fit
    if fitted is not None and not fitted.full.converged:
        warnings.append(f"the fit did not converge in {fitted.full.steps} steps: read its terms with care")
    if transitivity.get("fits") is False:
        t = transitivity["test"]
        warnings.append(
            f"no Bradley-Terry model fits these verdicts: the saturated model (a preference per judge and pair) fits "
            f"better (LR {t['lr']:.1f} on {t['df']} df, p = {t['p']:.2g}); the strengths and terms are averages over "
            f"preferences that are not transitive"
        )
    return PairwiseAnalysis.model_validate(
        {
            "table": table,
            "n_rows": int(len(frame)),
            "n_answered": int(len(comps.judge)),
            "systems": comps.systems,
            "families": comps.system_family,
            "judges": judges,
            "clusters": g,
            "resamples": n_resamples,
            "seed": seed,
            "interval": (
                "item-cluster bootstrap, the whole fit redone per resample (warm-started): standard error scaled by "
                "G/(G-1), 95% t interval on G-1 degrees of freedom (G = clusters)"
            ),
            "definitions": DEFINITIONS,
            "decisiveness_test": fitted.decisiveness_test if fitted else None,
            "transitivity": transitivity,
            "board": leaderboard(comps, fitted, g) if fitted else None,
            "unidentified": sorted(set(fitted.design.unidentified)) if fitted else [],
            "warnings": [*position_only.values(), *warnings],
            "belief_reason": decomposed["reason"],
            "belief_gold": decomposed["gold"],
            "analysis_seconds": round(time.perf_counter() - t0, 2),
        }
    )


@dataclass(frozen=True)
class Fitted:
    """The fits of a pairwise table: the design (decisiveness added), the plain and the full fit, the bootstrap's
    draws, the decisiveness test and the transitivity test."""

    design: Design
    full: model.Fit
    draws: Draws
    scaled: np.ndarray
    decisiveness_test: dict[str, Any] | None
    transitivity: dict[str, Any]


def _fitted(comps: Comparisons, d: Design, weights: np.ndarray, tell: Progress, with_plain: bool = True) -> Fitted:
    plain_spec = d.spec
    tell("pairwise: plain fit")
    plain = model.fit(d.coded.cells, plain_spec)
    d, ref = with_decisiveness(d, comps, plain.params)
    scaled = _scaled(d, ref)
    tell("pairwise: fit")
    full = model.fit(d.coded.cells, d.spec, plain.params)
    decisive_df = int(d.spec.decisive.sum())
    test = _lr(full.loglik, plain.loglik, decisive_df) if decisive_df else None
    draws = bootstrap(d, plain_spec, scaled, full, plain, weights, lambda m: tell(f"pairwise: {m}"), with_plain)
    tell("pairwise: transitivity")
    return Fitted(d, full, draws, scaled, test, saturated_test(comps, d, full))


def _lr(big: float, small: float, df: int) -> dict[str, Any]:
    lr = max(0.0, 2 * (big - small))
    return {"lr": lr, "df": df, "p": float(stats.chi2.sf(lr, df))}


def _judge(
    j: int,
    judge: str,
    comps: Comparisons,
    fitted: Fitted | None,
    g: int,
    raw: float,
    raw_draws: np.ndarray,
    position_only: str | None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "judge": judge,
        "family": comps.judge_family[judge],
        "raw_own_rate": _estimate(raw, raw_draws, g, (0.0, 1.0)) if np.isfinite(raw) else None,
        "position": None,
        "decisiveness": None,
        "tie": None,
        "own_logit": None,
        "own_points": None,
        "explained": None,
        "plain_own_logit": None,
        "position_only": position_only is not None,
        "warnings": [],
    }
    if position_only is not None:
        entry["reason"] = position_only
        return entry
    if fitted is None or not fitted.design.in_fit[j]:
        entry["reason"] = f"{judge} gave no verdict the model can use"
        return entry
    d, draws, full, scaled = fitted.design, fitted.draws, fitted.full, fitted.scaled
    spec = d.spec
    if spec.beta[j, FIRST]:
        entry["position"] = _estimate(draws.beta[0, j, FIRST], draws.beta[1:, j, FIRST], g)
    else:
        entry["position_reason"] = d.held.get(f"position:{judge}")
    if scaled[j]:
        entry["decisiveness"] = _estimate(float(np.exp(draws.d[0, j])), np.exp(draws.d[1:, j]), g, (0.0, np.inf))
    if f"decisiveness:{judge}" in d.held:
        entry["decisiveness_reason"] = d.held[f"decisiveness:{judge}"]
    tau = full.params.tau[j]
    entry["tie"] = float(np.exp(tau)) if np.isfinite(tau) else 0.0
    if not spec.beta[j, OWN]:
        entry["reason"] = d.held.get(f"own:{judge}") or f"{judge} never compared its own family's answer with another family's"
        return entry
    own = draws.beta[0, j, OWN]
    if abs(own) > SEPARATED or abs(draws.beta[0, j, FIRST]) > SEPARATED:
        entry["reason"] = (
            f"{judge}'s verdicts separate completely (one side wins every comparison the term carries): its own-family "
            f"term has no settled estimate"
        )
        return entry
    entry["own_logit"] = _estimate(own, draws.beta[1:, j, OWN], g)
    rates = draws.rates[:, j, :]
    entry["own_points"] = _estimate(rates[0, 0] - rates[0, 1], rates[1:, 0] - rates[1:, 1], g, (-1.0, 1.0))
    if np.isfinite(rates[0]).all():
        entry["explained"] = {
            "quality": float(rates[0, 2] - 0.5),
            "position": float(rates[0, 1] - rates[0, 2]),
            "own": float(rates[0, 0] - rates[0, 1]),
            "unexplained": float(raw - rates[0, 0]) if np.isfinite(raw) else 0.0,
        }
    entry["plain_own_logit"] = _estimate(draws.plain_own[0, j], draws.plain_own[1:, j], g)
    if entry["own_logit"] is None:
        entry["reason"] = "its own-family term does not settle across resamples (too few clusters or a separated resample)"
    return entry


def _adjust(judges: list[dict[str, Any]]) -> None:
    """Benjamini-Yekutieli adjusted p-values across judges: of the own-family terms, and apart from them of each
    part of the decomposition."""
    groups = [[e["own_logit"] for e in judges if e.get("own_logit")]]
    for part in ("controlled", "harmful", "legitimate"):
        groups.append([b[part] for e in judges if (b := e.get("belief")) and b.get(part)])
    for tested in groups:
        if tested:
            for e, p in zip(tested, multipletests([e["p"] for e in tested], method="fdr_by")[1]):
                e["p_adjusted"] = float(p)


# -- the decomposition ------------------------------------------------------------------------------------------
def decomposition(
    frame: pd.DataFrame,
    comps: Comparisons,
    position_only: dict[int, str],
    weights: np.ndarray,
    main: Fitted | None,
    tell: Progress,
) -> dict[str, Any]:
    """Per judge the own-family term with agreement with its own answer held fixed (`controlled`), what agreement
    explains (the main term minus it, on the same resamples), the agreement term, and the harmful and legitimate
    parts (analysis/pointwise/belief.py's JudgeBelief); with the reason where a part is not given."""
    out: dict[str, Any] = {"reason": belief.no_labels(frame), "gold": False, "judges": {}}
    if out["reason"] is not None or main is None:
        return out
    x, names, known, info = belief.terms(frame, comps)
    out["gold"] = info["gold"]
    tell("pairwise: decomposition")
    d = design(comps, x, names, position_only, rows=known)
    if not d.in_fit.any():
        out["reason"] = "no judge compared answers on an item where its own label is known"
        return out
    fitted = _fitted(comps, d, weights, lambda m: tell(f"pairwise decomposition: {m}"), with_plain=False)
    cells, draws, g = d.coded.cells, fitted.draws, len(comps.groups)
    carried = np.zeros((cells.n_judges, len(names)))
    for k in range(len(names)):
        carried[:, k] = np.bincount(cells.judge, weights=cells.counts.sum(axis=1) * (cells.x[:, k] != 0), minlength=cells.n_judges)
    own_terms = [k for k, n in enumerate(names) if n.startswith("own")]
    agree_terms = [k for k, n in enumerate(names) if n.startswith("agree")]
    for j, judge in enumerate(comps.judges):
        entry = judge_entry(
            info["source"].get(judge),
            info["items"].get(judge, 0),
            info["items_wrong"].get(judge) if info["gold"] else None,
            info["split"].get(judge, 0),
            {names[k]: int(carried[j, k]) for k in range(1, len(names))},
        )
        out["judges"][judge] = entry
        if judge in info["never"]:
            entry["reason"] = NEVER_ANSWERED
            continue
        if j in position_only or not fitted.design.in_fit[j]:
            entry["reason"] = "the main fit does not estimate this judge (see its reason)"
            continue
        free = fitted.design.spec.beta[j]
        mine = [k for k in own_terms if carried[j, k] > 0]
        held = [k for k in mine if not free[k]]
        if not mine:
            entry["reason"] = never(names[own_terms[0]], judge) if len(own_terms) == 1 else never("own", judge)
            continue
        agree = [k for k in agree_terms if free[k] and carried[j, k] > 0]
        if agree:
            entry["agreement"] = _estimate(*_split(_weighted(draws.beta[:, j, :], carried[j], agree)), g)
        if held:
            entry["reason"] = fitted.design.held.get(f"{names[held[0]]}:{judge}", f"its term {names[held[0]]} is held")
        else:
            controlled = _weighted(draws.beta[:, j, :], carried[j], mine)
            entry["controlled"] = _estimate(*_split(controlled), g)
            if main.design.spec.beta[j, OWN]:
                entry["explained"] = _estimate(*_split(main.draws.beta[:, j, OWN] - controlled), g)
        if info["gold"]:
            for part, name, when in (("harmful", "own_wrong", "wrong"), ("legitimate", "own_right", "right")):
                k = names.index(name)
                if carried[j, k] == 0:
                    entry[f"{part}_reason"] = never(name, judge)
                elif not free[k]:
                    entry[f"{part}_reason"] = fitted.design.held.get(f"{name}:{judge}", f"its term {name} is held")
                else:
                    entry[part] = _estimate(draws.beta[0, j, k], draws.beta[1:, j, k], g)
        else:
            entry["harmful_reason"] = entry["legitimate_reason"] = "the table has no gold label, so right and wrong are unknown"
    return out


def _weighted(beta: np.ndarray, counts: np.ndarray, terms: list[int]) -> np.ndarray:
    """(1+R,) the terms' effects averaged over the comparisons that carry them."""
    w = counts[terms]
    return np.asarray(beta[:, terms] @ w / w.sum())


def _split(values: np.ndarray) -> tuple[float, np.ndarray]:
    return float(values[0]), values[1:]


# -- the board and the transitivity test ----------------------------------------------------------------------------
def leaderboard(comps: Comparisons, fitted: Fitted, g: int) -> dict[str, Any] | None:
    """The systems' strengths (logits of the judges' geometric-mean decisiveness, own-family and position terms
    taken out) with rank intervals, read as the pointwise board is (ranks.calibrated_board)."""
    if "strengths" in fitted.design.held or g < 2:
        return None
    scores = fitted.draws.strengths
    ok = np.isfinite(scores).all(axis=1)
    board = calibrated_board(scores[ok], comps.systems, g)
    won = np.where(comps.outcome == FIRST_WINS, 1.0, np.where(comps.outcome == TIE, 0.5, 0.0))
    wins = np.bincount(comps.first, weights=won, minlength=len(comps.systems)) + np.bincount(
        comps.second, weights=1.0 - won, minlength=len(comps.systems)
    )
    seen = np.bincount(comps.first, minlength=len(comps.systems)) + np.bincount(comps.second, minlength=len(comps.systems))
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = dict(zip(comps.systems, (wins / seen).tolist()))
    ranks = competition_ranks({k: v if np.isfinite(v) else None for k, v in rate.items()})
    naive = sorted(
        ({"group": s, "estimate": _num(v), "rank": ranks[s]} for s, v in rate.items()),
        key=lambda r: (r["rank"] is None, r["rank"] or 0, r["group"]),
    )
    warnings = []
    if int((~ok).sum()):
        warnings.append(f"{int((~ok).sum())} resamples did not converge and are left out of the intervals")
    return {
        "unit_words": (
            "logits of the judges' geometric-mean decisiveness (a difference of 1 means 73% against 27% in a "
            "comparison with no position or own-family term), centred on the systems' mean"
        ),
        "n_clusters": g,
        "rows": board.rows,
        "differences": board.differences,
        "naive": naive,
        "warnings": warnings,
    }


def saturated_test(comps: Comparisons, d: Design, full: model.Fit) -> dict[str, Any]:
    """Bradley-Terry (the fit) against the saturated model: per judge a preference for each pair it compared, its
    first-slot term and its tie propensity, fitted judge by judge."""
    cells = d.coded.cells
    total, n_params = 0.0, 0
    for j in np.flatnonzero(d.in_fit):
        mine = cells.judge == j
        sub = Cells(
            judge=np.zeros(int(mine.sum()), dtype=np.int64),
            first=cells.first[mine],
            second=cells.second[mine],
            x=cells.x[mine, :1],
            counts=cells.counts[mine],
            n_judges=1,
            n_systems=cells.n_systems,
        )
        low, high = np.minimum(sub.first, sub.second), np.maximum(sub.first, sub.second)
        pair_code, pair = np.unique(low * cells.n_systems + high, return_inverse=True)
        if len(pair_code) > SATURATED_MAX_PAIRS:
            return {"test": None, "reason": f"a judge compared more than {SATURATED_MAX_PAIRS} pairs", "fits": None}
        indicator = np.zeros((len(sub.first), len(pair_code)))
        indicator[np.arange(len(sub.first)), pair.ravel()] = np.where(sub.first == low, 1.0, -1.0)
        sub = replace(sub, x=np.column_stack([sub.x, indicator]))
        beta = np.ones((1, sub.x.shape[1]), dtype=bool)
        beta[0, 0] = bool(d.spec.beta[j, FIRST])
        spec = Spec(False, np.zeros(1, bool), beta, d.spec.ties[j : j + 1].copy())
        matrix, layout = model.jacobian_matrix(sub, spec, model._zero(sub))
        dropped = set(model.dependent_columns(matrix, list(range(layout.size))))
        beta[0, [k for k in range(sub.x.shape[1]) if layout.beta_at[0, k] in dropped]] = False
        spec = replace(spec, beta=beta)
        f = model.fit(sub, spec)
        total += f.loglik
        n_params += int(beta.sum() + spec.ties.sum())
    full_params = len(full.theta)
    df = n_params - full_params
    if df <= 0:
        return {"test": None, "reason": "the design leaves the saturated model no more parameters than the fit", "fits": None}
    test = _lr(total, full.loglik, df)
    return {"test": test, "reason": None, "fits": bool(test["p"] >= 0.05)}


def side_by_side(summary: Summary, result: PairwiseAnalysis) -> list[SideBySide]:
    """Each judge that judged both ways: its pointwise index (overall, else equivalent; none where the index is not
    estimable) beside its pairwise own term."""
    outcomes = summary.self_preference.outcomes()
    outcome = next((o for o in ("overall", "equivalent") if o in outcomes), "overall")
    index = {e.judge: e for e in outcomes[outcome].judges} if outcome in outcomes else {}
    rows = []
    for j in result.judges:
        if j.judge not in summary.judges:
            continue
        e = index.get(j.judge)
        pointwise = None
        if e is not None and None not in (e.estimate, e.se, e.ci_low, e.ci_high):
            pointwise = Estimate(
                estimate=e.estimate, se=e.se, ci_low=e.ci_low, ci_high=e.ci_high, p=e.p if e.p is not None else float("nan")
            )
        rows.append(
            SideBySide(
                judge=j.judge,
                pointwise_outcome=outcome,
                pointwise=pointwise,
                pairwise_logit=j.own_logit,
                pairwise_points=j.own_points,
            )
        )
    return rows
