"""Cross-family self-preference: does a judge score its own family's answers higher than their quality
warrants?

The headline is the calibrated index (calibration.py): per judge, the own-family effect in a model
with judge leniency, judge scale and one latent quality per answer, so scale use and verdicts missing
on weak answers do not masquerade as self-preference. Where a judge's family has several generator
models, the own-model (`self`) and same-family-other-model (`family_other`) effects are separated and
`estimate` is their average over the judge's own-family answers. Outcomes: `overall` (0-10) and
`equivalent` (0/1, as a linear probability model: effects are in probability points).

Intervals: sign-cluster bootstrap refitting the whole model per resample, t on G-1 df (bootstrap.py).
p-values are adjusted across judges and outcomes by Benjamini-Yekutieli (the judges' estimates share
answers, so they are dependent). Beside it, a sensitivity panel per judge: the answer-matched
fixed-effects model with every scale fixed at 1, the pair-matched difference-in-differences (did.py)
and the pooled OLS (pooled.py). Also: the judge x generator-family matrix of calibrated residuals
(double-centred), which shows favouritism toward another family that no per-judge baseline can
remove; and missing verdicts by judge x generator family, where missingness bias comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from dualjudge.analysis.pointwise.belief import decompose
from dualjudge.analysis.pointwise.diagnostics import (
    SHIFTS,
    Pair,
    copies,
    correlated_pairs,
    fit_problems,
    flagged,
    imputed_estimates,
    merge_copies,
    missing_gaps,
    missing_warning,
    pair_warning,
    score_spread,
)
from dualjudge.analysis.pointwise.did import per_judge_did
from dualjudge.analysis.pointwise.grid import OUTCOMES, Grid, build_grid, identification, lineage_columns
from dualjudge.analysis.pointwise.pooled import pooled_model
from dualjudge.analysis.shared import calibration
from dualjudge.analysis.shared.bootstrap import MIN_RELIABLE_SIGNS, Interval, t_interval, t_interval_words
from dualjudge.analysis.shared.choices import N_RESAMPLES, Lineage, Outcome
from dualjudge.analysis.shared.results import OutcomeSelfPreference, SelfPreference
from dualjudge.analysis.shared.table import ANSWER_KEY, last_of
from dualjudge.analysis.shared.words import words
from dualjudge.errors import DualjudgeError

ANSWER = ANSWER_KEY
METHOD = (
    "judge calibration with answer fixed effects: score = leniency[judge] + scale[judge] x quality[answer] "
    "+ self[judge] x own_model + family_other[judge] x same_family_other_model, fitted by precision-weighted "
    "alternating least squares; the equivalent outcome as a linear probability model"
)
ADJUSTMENT = (
    "Benjamini-Yekutieli across judges and outcomes; a judge with a warning gets none, and its interval is "
    "widened to the estimates its warnings show"
)
MISSING_GAP = 0.05  # a judge whose missing-verdict rates differ by more than this across families is flagged
TERMS = ("self", "family_other")
TWO_JUDGES = (
    "two judges cannot pin each other's use of the scale (a latent quality needs three judges' views), "
    "so the scales are fixed at 1 here: the answer-matched model; a judge that compresses or stretches "
    "the scale biases its estimate"
)
DEGENERATE_SE = 1e-6  # a standard error below this share of the judge's score spread is a degenerate fit


def calibrated_residuals(frame: pd.DataFrame, lineage: Lineage = "family") -> pd.DataFrame:
    """Per overall verdict of an answer two judges or more rated: the verdict minus the judge's leniency
    and scale times the answer's latent quality, from the full calibrated fit (own-family effects left
    in: this is where favouritism shows). Columns: ANSWER, judge_model, residual."""
    grid = build_grid(frame, "overall", lineage)
    d = grid.design
    if d.n_answers == 0:
        return pd.DataFrame(columns=[*ANSWER, "judge_model", "residual"])
    types = calibration.Types.of(d)
    f = calibration.fit(types.resampled(None))
    quality = f.quality(d, types)
    residual = d.y - f.leniency[0][:, None] - f.scale[0][:, None] * quality[None, :]
    j, a = np.nonzero(d.present)
    keys = pd.DataFrame([grid.answers[i].split("\x1f") for i in a], columns=ANSWER)
    keys["repeat"] = keys["repeat"].astype(frame["repeat"].dtype)
    return keys.assign(judge_model=np.array(grid.judges)[j], residual=residual[j, a])


# -- the calibrated index and its bootstrap ------------------------------------------------------------
@dataclass
class Draws:
    """Per-judge statistics of the full fit (index 0) and of every bootstrap refit (1..B)."""

    estimate: np.ndarray  # (1+B, J): own-family effect, averaged over the judge's own-family answers
    terms: np.ndarray  # (1+B, J, K): self, family_other
    counts: np.ndarray  # (1+B, J, K): own-family verdicts per term
    matrix: np.ndarray  # (1+B, J, F): mean calibrated residual by generator family (effects included)


def _statistics(sums: calibration.Sums, f: calibration.Fit, n_families: int) -> Draws:
    types = sums.types
    per_term = sums.wx  # (B, J, K) own-family verdicts per term
    q1 = calibration.quality_sums(sums, f.a, f.b)
    fam = np.eye(n_families)[types.group]  # (T, F)
    p = types.present
    # per judge and generator family: sum of (y - leniency - scale x quality) over the family's answers
    y_sum = np.einsum("btj,tj,tf->bjf", sums.sy, p, fam)
    weight = np.einsum("bt,tj,tf->bjf", sums.n, p, fam)
    q_sum = np.einsum("bt,tj,tf->bjf", q1, p, fam)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.nansum(f.effects * per_term, axis=2) / per_term.sum(axis=2)
        matrix = (y_sum - f.leniency[:, :, None] * weight - f.scale[:, :, None] * q_sum) / weight
    return Draws(estimate, f.effects, per_term, matrix)


def bootstrap_fits(grid: Grid, scale_free: bool, n_resamples: int, seed: int) -> tuple[Draws, calibration.Fit]:
    """The full fit's statistics and those of `n_resamples` sign-cluster bootstrap refits; and the full fit."""
    n_f = len(grid.families)
    fits = calibration.refits(calibration.Types.of(grid.design), scale_free, n_resamples, seed)
    full_sums, full = next(fits)
    parts = [_statistics(full_sums, full, n_f)] + [_statistics(sums, refit, n_f) for sums, refit in fits]
    draws = Draws(*(np.concatenate([getattr(p, name) for p in parts]) for name in ("estimate", "terms", "counts", "matrix")))
    return draws, full


def _interval(values: np.ndarray, n_signs: int) -> Interval | None:
    return t_interval(values[0], values[1:], n_signs) if np.isfinite(values[0]) else None


def _as_dict(iv: Interval | None) -> dict[str, float] | None:
    return iv.as_dict() if iv else None


def calibrated_index(
    grid: Grid, reasons: dict[str, str], n_resamples: int, seed: int, scale_free: bool = True
) -> tuple[dict[str, dict[str, Any]], Draws, calibration.Fit]:
    """Per judge: the own-family effect with its interval (`interval`), or why it is not identified: the
    design (`reasons`), or, with free scales, what the full fit cannot support (fit_problems)."""
    draws, full = bootstrap_fits(grid, scale_free, n_resamples, seed)
    warnings: dict[str, list[str]] = {}
    if scale_free:
        problems, warnings = fit_problems(grid, full)
        reasons = {**problems, **reasons}
    g = grid.design.n_clusters
    spread = score_spread(grid.design)
    out: dict[str, dict[str, Any]] = {}
    for j, judge in enumerate(grid.judges):
        entry: dict[str, Any] = {
            "judge": judge,
            "family": grid.judge_family[judge],
            "identified": judge not in reasons,
            "reason": reasons.get(judge),
            "warnings": list(warnings.get(judge, [])),
        }
        if judge not in reasons:
            iv = _floor_p(_interval(draws.estimate[:, j], g), n_resamples)
            n = draws.counts[0, j]
            entry.update(interval=iv, n_own={t: int(n[k]) for k, t in enumerate(TERMS)})
            separated = bool((n > 0).all())
            for k, t in enumerate(TERMS):
                entry[t] = _as_dict(_floor_p(_interval(draws.terms[:, j, k], g), n_resamples)) if separated else None
            if iv is None:
                entry.update(
                    identified=False,
                    interval=None,
                    reason=f"the bootstrap could not form an interval (too few {words().units} or own-family answers)",
                )
            elif iv.se <= DEGENERATE_SE * max(spread[j], 1e-12):
                entry.update(
                    identified=False,
                    interval=None,
                    reason=f"the estimate does not move across resamples (standard error {iv.se:.1e}): a "
                    f"degenerate fit, not a precise one",
                )
        out[judge] = entry
    return out, draws, full


def _floor_p(iv: Interval | None, n_resamples: int) -> Interval | None:
    """A bootstrap of B resamples cannot resolve p below 1 / (B + 1): never report less."""
    if iv is None:
        return None
    return Interval(iv.estimate, iv.se, iv.low, iv.high, max(iv.p, 1.0 / (n_resamples + 1)))


def interaction_matrix(grid: Grid, draws: Draws) -> dict[str, Any]:
    """Mean calibrated residual (verdict minus leniency + scale x quality; own-family effects left in)
    per judge x generator family, and its double-centred form (row and column means removed), each
    cell with a bootstrap t interval."""
    m = draws.matrix
    centred = (
        m - np.nanmean(m, axis=2, keepdims=True) - np.nanmean(m, axis=1, keepdims=True) + np.nanmean(m, axis=(1, 2), keepdims=True)
    )
    g = grid.design.n_clusters

    def cells(values: np.ndarray) -> list[list[dict[str, float] | None]]:
        return [[_as_dict(_interval(values[:, j, f], g)) for f in range(values.shape[2])] for j in range(values.shape[1])]

    return {"judges": grid.judges, "families": grid.families, "residual": cells(m), "double_centred": cells(centred)}


# -- missing verdicts ------------------------------------------------------------------------------------
def missing_by_family(frame: pd.DataFrame, outcome: Outcome, lineage: Lineage) -> dict[str, Any]:
    _, status = OUTCOMES[outcome]
    _, gf = lineage_columns(frame, lineage)
    asked = pd.DataFrame({"judge_model": frame["judge_model"], "_gf": gf, status: frame[status]})[frame[status] != "skipped"]
    table: dict[str, dict[str, dict[str, float | int]]] = {}
    warnings = []
    for judge, g in asked.groupby("judge_model", sort=True):
        cells = {}
        for fam, h in g.groupby("_gf", sort=True):
            missing = int((h[status] != "ok").sum())
            cells[str(fam)] = {"missing": missing, "total": int(len(h)), "rate": missing / len(h)}
        table[str(judge)] = cells
        rates = [c["rate"] for c in cells.values()]
        if len(rates) >= 2 and max(rates) - min(rates) > MISSING_GAP:
            worst = max(cells, key=lambda f: cells[f]["rate"])
            warnings.append(
                f"{judge}: missing {outcome} verdicts range from {min(rates):.0%} to {max(rates):.0%} "
                f"across generator families (highest for {worst}); a gap like this is where "
                f"missingness bias comes from"
            )
    return {"by_judge_family": table, "warnings": warnings}


# -- the whole analysis ----------------------------------------------------------------------------------
def _disagreement(a: dict[str, float] | None, b: dict[str, float] | None) -> bool | None:
    if not a or not b:
        return None
    return bool(a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"])


def outcome_analysis(frame: pd.DataFrame, outcome: Outcome, lineage: Lineage, n_resamples: int, seed: int) -> dict[str, Any]:
    result: dict[str, Any] = {"estimable": False, "reason": None, "judges": [], "warnings": []}
    grid = build_grid(frame, outcome, lineage)
    merged = copies(grid)  # one model entered twice counts once: the copy is merged before fitting
    family_of = dict(grid.judge_family)
    if merged:
        frame, lines = merge_copies(frame, grid, outcome)
        result["warnings"] += lines
        grid = build_grid(frame, outcome, lineage)
    result["missing"] = missing_by_family(frame, outcome, lineage)
    result["warnings"] += result["missing"]["warnings"]
    if grid.design.n_answers == 0:
        result["reason"] = f"no answer has {outcome} verdicts from two judges"
        result["n_signs"] = int(frame["sign_code"].nunique())  # the data's size still sets what intervals could be
        return result
    g = grid.design.n_clusters
    result["n_signs"] = g
    if g < 2:
        result["reason"] = f"{words().unit}-cluster intervals need at least two {words().units}"
        return result
    if g < MIN_RELIABLE_SIGNS:
        result["warnings"].append(
            f"only {g} {words().units}: the {words().unit}-cluster intervals are unreliable below "
            f"{MIN_RELIABLE_SIGNS} {words().units} (coverage falls short of 95%)"
        )
    reasons = identification(grid)
    free_scales = grid.design.n_judges >= 3
    calibrated, draws, full = calibrated_index(grid, reasons, n_resamples, seed, scale_free=free_scales)
    if not free_scales:
        result["warnings"].append(TWO_JUDGES)
        for e in calibrated.values():
            if e["identified"]:
                e["warnings"].append(TWO_JUDGES)
    if free_scales and not full.converged:
        result["warnings"].append(
            f"the calibration fit did not converge in {full.sweeps} sweeps: the data barely "
            f"separate the judges' scales from quality; read the estimates with care"
        )
    reasons = {j: e["reason"] for j, e in calibrated.items() if not e["identified"]}
    matched, _, _ = calibrated_index(grid, reasons, n_resamples, seed, scale_free=False)
    did, did_reasons = per_judge_did(grid.long, n_resamples, seed)
    for judge, entry in calibrated.items():
        iv = entry.pop("interval", None)
        entry.update(
            {
                "estimate": iv.estimate if iv else None,
                "se": iv.se if iv else None,
                "ci_low": iv.low if iv else None,
                "ci_high": iv.high if iv else None,
                "p": iv.p if iv else None,
                "p_adjusted": None,
            }
        )
        m_iv = matched[judge].get("interval")
        panel: dict[str, Any] = {
            "calibrated": _as_dict(iv),
            "answer_matched": _as_dict(m_iv),
            "did": _as_dict(did.get(judge)),
            "did_reason": did_reasons.get(judge),
        }
        panel["disagree"] = [name for name in ("answer_matched", "did") if _disagreement(panel["calibrated"], panel[name])]
        entry["sensitivity"] = panel
        result["judges"].append(entry)
    for kept, copy, r, _ in merged:
        result["judges"].append(
            {
                "judge": copy,
                "family": family_of[copy],
                "identified": False,
                "reason": f"merged with {kept} (its verdicts are a copy: r = {r:.3f})",
                "estimate": None,
                "se": None,
                "ci_low": None,
                "ci_high": None,
                "p": None,
                "p_adjusted": None,
                "sensitivity": None,
            }
        )
    judge_warnings(frame, grid, full, result, outcome, lineage, free_scales)
    belief = decompose(
        grid, frame, lineage, draws.estimate, {j: e["identified"] for j, e in calibrated.items()}, free_scales, n_resamples, seed
    )
    result["belief_reason"], result["never_answered"] = belief["reason"], belief["never_answered"]
    result["belief_gold"] = belief.get("gold")
    for entry in result["judges"]:
        entry["belief"] = belief["judges"].get(entry["judge"])
    if any(e["identified"] for e in calibrated.values()):  # with no judge identified, the matrix is not either
        result["interaction"] = interaction_matrix(grid, draws)
    pooled, why = pooled_model(grid.long)
    result["pooled"] = pooled
    if why:
        result["pooled_reason"] = why
    result["estimable"] = any(e["estimate"] is not None for e in result["judges"])
    if not result["estimable"]:
        result["reason"] = "; ".join(f"{e['judge']}: {e['reason']}" for e in result["judges"])
    return result


def point_estimates(grid: Grid) -> dict[str, float | None]:
    """Each judge's calibrated own-family effect from one fit (no bootstrap); None where not identified."""
    reasons = identification(grid)
    sums = calibration.Types.of(grid.design).resampled(None)
    f = calibration.fit(sums)
    problems, _ = fit_problems(grid, f)
    est = _statistics(sums, f, len(grid.families)).estimate[0]
    return {
        j: None if j in reasons or j in problems or not np.isfinite(est[i]) else float(est[i]) for i, j in enumerate(grid.judges)
    }


def explaining_pairs(grid: Grid, full: calibration.Fit) -> list[Pair]:
    """The correlated pairs to name: those whose removal clears the excess. A pair of judges that share
    taste or noise pulls the latent quality toward them, and the other judges' residuals then move
    together too: spurious pairs. So, while flagged pairs remain, the judge whose leaving out (refitted)
    leaves the fewest flagged pairs is found, and the strongest pending pair it belongs to is named; the
    pairs still flagged without it are what remains to explain. With three judges left the model fits
    every correlation, so nothing is left to explain."""
    pending = flagged(correlated_pairs(grid, full))
    named: list[Pair] = []
    out: set[str] = set()
    while pending:
        best: tuple[str, set[frozenset[str]]] | None = None
        for judge in sorted({j for p in pending for j in (p.first, p.second)}):
            sub = grid.without(out | {judge})
            left: set[frozenset[str]] = set()
            if sub.design.n_judges >= 4 and sub.design.n_answers and sub.design.n_clusters >= 2:
                kept = np.array([grid.judges.index(j) for j in sub.judges])
                start = full.judges(kept)  # the others' parameters move little without one judge
                types = calibration.Types.of(sub.design)
                fit = calibration.fit(types.resampled(None), start=start)
                left = {frozenset((p.first, p.second)) for p in flagged(correlated_pairs(sub, fit, types))}
            if best is None or len(left) < len(best[1]):
                best = (judge, left)
        assert best is not None
        judge, left = best
        named.append(max((p for p in pending if judge in (p.first, p.second)), key=lambda p: p.excess))
        out.add(judge)
        pending = [p for p in pending if frozenset((p.first, p.second)) in left]
    return sorted(named, key=lambda p: -p.excess)


def judge_warnings(
    frame: pd.DataFrame,
    grid: Grid,
    full: calibration.Fit,
    result: dict[str, Any],
    outcome: Outcome,
    lineage: Lineage,
    free_scales: bool = True,
) -> None:
    """Per-judge warnings (diagnostics.py), in place: correlated or copied judges (with the estimates
    each of them left out) on every identified judge, and missing own-family verdicts (with the
    sensitivity analysis) on the judge that misses them; the estimates they show are kept for withdraw()."""
    entries = {e["judge"]: e for e in result["judges"]}
    alternatives: dict[str, list[float]] = result.setdefault(ALTERNATIVES, {})  # what withdraw() widens to
    result["correlated_pairs"] = []
    for pair in explaining_pairs(grid, full) if free_scales else []:
        result["correlated_pairs"].append(
            {"judges": [pair.first, pair.second], "excess": round(pair.excess, 4), "copied": pair.copied}
        )
        members = {pair.first, pair.second, *(pair.mirror or ())}  # with four judges the mirror is as likely
        left_out = {}
        for gone in sorted(members):
            sub = build_grid(frame[frame["judge_model"].astype(str) != gone], outcome, lineage)
            if sub.design.n_answers and sub.design.n_clusters >= 2:
                left_out[gone] = point_estimates(sub)
        for e in entries.values():
            if not e["identified"]:
                continue
            shown = [
                v for gone, estimates in left_out.items() if gone != e["judge"] and (v := estimates.get(e["judge"])) is not None
            ]
            # a member's own estimate is what the shared noise biases first (a planted null: 4 of 52 intervals of
            # members missed the truth with none of them warned); another judge is warned where leaving a member
            # out moves its estimate beyond its interval
            if e["judge"] in members or moves(e, shown):
                e["warnings"].append(pair_warning(pair, left_out, e["judge"]))
                alternatives.setdefault(e["judge"], []).extend(shown)
    shifts, unit = (SHIFTS, "points") if outcome == "overall" else (tuple(x / 5 for x in SHIFTS), "probability")
    for judge, rates in missing_gaps(result["missing"]["by_judge_family"], grid.judge_family).items():
        e = entries.get(judge)
        if e is None or not e["identified"] or e["estimate"] is None:
            continue
        imputed = imputed_estimates(grid, full, judge, shifts, scale_free=free_scales)
        worst = None
        if outcome == "equivalent":  # a 0/1 verdict has a worst case: every missing own-family verdict 0
            worst = next(iter(imputed_estimates(grid, full, judge, scale_free=free_scales, value=0.0).values()))
        e["warnings"].append(missing_warning(judge, rates, e["estimate"], e["ci_high"] - e["estimate"], imputed, unit, worst))
        alternatives.setdefault(judge, []).extend([*imputed.values(), *([worst] if worst is not None else [])])


def moves(entry: dict[str, Any], estimates: list[float]) -> bool:
    """Whether any of these estimates (a pair member left out) falls outside the judge's interval: only then
    does the pair change what the judge's estimate says."""
    low, high = entry.get("ci_low"), entry.get("ci_high")
    if low is None or high is None:
        return bool(estimates)
    return any(not low <= v <= high for v in estimates if np.isfinite(v))


def label_warnings(frame: pd.DataFrame, lineage: Lineage) -> list[str]:
    """Family labels that look like mistakes: a model whose judge and system labels differ (self-preference
    then compares the wrong families), and a judge family that matches no system family but for case or
    spaces (its judge then has no own-family answers)."""
    jf, gf = lineage_columns(frame, lineage)
    judge_of = last_of(frame["judge_model"].astype(str), jf)
    system_of = last_of(frame["system_model"].astype(str), gf)
    out = []
    for model in sorted(set(judge_of) & set(system_of)):
        if judge_of[model] != system_of[model]:
            out.append(
                f"{model} is labelled {judge_of[model]!r} as a judge and {system_of[model]!r} as a system model: "
                f"self-preference compares its verdicts with the wrong family; use one label"
            )
    systems = set(system_of.values())
    folded = {s.strip().lower(): s for s in systems}
    for fam in sorted(set(judge_of.values()) - systems):
        near = folded.get(fam.strip().lower())
        judges = ", ".join(sorted(j for j, f in judge_of.items() if f == fam))
        if near is not None:
            out.append(
                f"judge family {fam!r} ({judges}) matches no system family, but {near!r} does apart from case "
                f"or spaces: a spelling difference makes its own family's answers look like another family's"
            )
    return out


def share_pairs(per_outcome: dict[str, dict[str, Any]]) -> None:
    """Judges correlated on one outcome are the same judges on the other, where the binary verdict may
    hide it: each outcome's identified judges also carry the pairs the other outcome found."""
    for outcome, result in per_outcome.items():
        seen = {tuple(p["judges"]) for p in result.get("correlated_pairs", [])}
        for other, found in per_outcome.items():
            for p in found.get("correlated_pairs", []) if other != outcome else []:
                if tuple(p["judges"]) in seen:
                    continue
                seen.add(tuple(p["judges"]))
                what = "give near-identical verdicts" if p["copied"] else "have correlated residuals"
                for e in result.get("judges", []):
                    if e["identified"]:
                        e["warnings"].append(
                            f"{p['judges'][0]} and {p['judges'][1]} {what} on {other} (see there): "
                            f"the same judges, so the same bias can reach this estimate"
                        )


ALTERNATIVES = "_alternatives"  # per outcome, while it is analysed: each judge's estimates under its warnings


def withdraw(results: dict[str, dict[str, Any]]) -> None:
    """A judge whose estimate carries a warning is not called significant, in place: it gets no adjusted
    p-value (adjust() leaves it out), and its interval is widened to cover the estimates its warnings show
    (with a correlated or copied judge left out, with its missing verdicts filled in low). A warning says
    the estimate may be biased by an amount the interval does not hold; a p-value would claim it does. A widened
    interval has no p-value of its own, so the bootstrap's (which belongs to the interval before widening) is
    withheld too (`p` null, `widened` true)."""
    for r in results.values():
        alternatives = r.pop(ALTERNATIVES, {})
        for e in r.get("judges", []):
            if e["estimate"] is None or not e["warnings"]:
                continue
            e["warned"] = True
            shown = [v for v in alternatives.get(e["judge"], []) if np.isfinite(v)]
            if shown and e["ci_low"] is not None and e["ci_high"] is not None:
                low, high = min(e["ci_low"], *shown), max(e["ci_high"], *shown)
                if (low, high) != (e["ci_low"], e["ci_high"]):  # the bootstrap's p belongs to the interval it had
                    e["ci_low"], e["ci_high"], e["p"], e["widened"] = low, high, None, True


def adjust(results: dict[str, dict[str, Any]]) -> None:
    """Benjamini-Yekutieli adjusted p-values across every identified judge and outcome that carries no
    warning (withdraw()), in place: the index's, and apart from them each part of the decomposition's (the
    belief-controlled estimate, the harmful and the legitimate part)."""
    judges = [e for r in results.values() for e in r.get("judges", []) if not e.get("warned")]
    _by([e for e in judges if e.get("p") is not None], "p", "p_adjusted")
    for part in ("controlled", "harmful", "legitimate"):
        estimates = [b[part] for e in judges if (b := e.get("belief")) and b.get(part)]
        _by(estimates, "p", "p_adjusted")


def _by(entries: list[dict[str, Any]], key: str, into: str) -> None:
    """Benjamini-Yekutieli adjusted p-values of `entries[key]`, written to `entries[into]`."""
    if not entries:
        return
    adjusted = multipletests([e[key] for e in entries], method="fdr_by")[1]
    for e, p in zip(entries, adjusted):
        e[into] = float(p)


def self_preference(
    frame: pd.DataFrame,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
    outcomes: tuple[Outcome, ...] = ("overall", "equivalent"),
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "lineage": lineage,
        "method": METHOD,
        "interval": t_interval_words(),
        "adjustment": ADJUSTMENT,
        "resamples": n_resamples,
        "seed": seed,
    }
    per_outcome: dict[str, dict[str, Any]] = {o: outcome_analysis(frame, o, lineage, n_resamples, seed) for o in outcomes}
    labels = label_warnings(frame, lineage)
    for r in per_outcome.values():
        r["warnings"] = labels + r["warnings"]
    share_pairs(per_outcome)
    withdraw(per_outcome)
    adjust(per_outcome)
    result.update(per_outcome)
    return result


CLI_KEYS = (
    "judge",
    "family",
    "identified",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "p_adjusted",
    "self",
    "family_other",
    "reason",
    "warnings",
    "warned",
    "widened",
)


def for_outcome(
    frame: pd.DataFrame, outcome: Outcome, lineage: Lineage, n_resamples: int, seed: int
) -> tuple[SelfPreference, OutcomeSelfPreference]:
    """The analysis of one outcome, with p adjusted across judges and both outcomes (as in `dualjudge
    analyze`). A DualjudgeError (exit 2) for a table without usable verdicts."""
    sp = SelfPreference.model_validate(self_preference(frame, lineage, seed, n_resamples))
    e = sp.outcomes()[outcome]
    if not e.judges:
        raise DualjudgeError(f"the table gives no self-preference estimate for {outcome}: {e.reason}")
    return sp, e


def cli_json(sp: SelfPreference, outcome: Outcome) -> dict[str, Any]:
    """The `dualjudge stats self-preference --json` object. `self` and `family_other` are the separated
    effects (null unless the judge's family has several generator models rated); their intervals are
    under `self_ci` / `family_other_ci`; `belief` is the index decomposed, as summary.json has it."""
    e = sp.outcomes()[outcome]
    judges = []
    for entry in e.judges:
        row = {k: getattr(entry, k) for k in CLI_KEYS}
        for part in ("self", "family_other"):
            iv = getattr(entry, part)
            row[part] = iv.estimate if iv else None
            row[f"{part}_ci"] = [iv.ci_low, iv.ci_high] if iv else None
        row["belief"] = entry.belief.model_dump() if entry.belief else None
        judges.append(row)
    return {
        "outcome": outcome,
        "method": sp.method,
        "interval": sp.interval,
        "adjustment": sp.adjustment,
        "lineage": sp.lineage,
        "n_signs": e.n_signs,
        "warnings": e.warnings,
        "belief_reason": e.belief_reason,
        "never_answered": e.never_answered,
        "judges": judges,
    }
