"""Cross-family self-preference: does a judge score outputs of its own family higher?

A raw "judge favours its own family" number is confounded: a stronger generator earns higher scores
from every judge and a lenient judge scores everyone higher. Both estimators here remove those main
effects by looking only at the judge x generator interaction:

- per judge j, the pair-matched difference-in-differences against neutral judges:
  SP_j = mean over (g in fam(j), h not in fam(j)) of
         [(y_jg - y_jh) - mean over judges k with fam(k) not in {fam(g), fam(h)} of (y_kg - y_kh)],
  where y_jg is judge j's mean score for generator g. The neutral judges k favour neither g nor h,
  so their own self-preference cannot leak into the baseline. 95 % CI: sign-level cluster bootstrap.
- pooled: score ~ C(judge) + C(generator) + same_family (+ self, where a family has several
  models) by OLS with sign-clustered standard errors (statsmodels).
When the design cannot identify an estimate, the result says so and why instead of a number.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Literal

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from dualjudge.analysis.bootstrap import N_RESAMPLES, percentile_ci, resample_counts

Lineage = Literal["family", "base_llm"]
OUTCOMES = {"overall": ("overall", "quality_status"), "equivalent": ("equivalent", "equivalence_status")}


def _lineage_columns(frame: pd.DataFrame, lineage: Lineage) -> tuple[pd.Series, pd.Series]:
    if lineage == "family":
        return frame["judge_family"].astype(str), frame["system_family"].astype(str)
    if "judge_base_llm" not in frame.columns or "system_base_llm" not in frame.columns:
        raise ValueError("the table has no judge_base_llm / system_base_llm columns; use lineage 'family'")
    return frame["judge_base_llm"].astype(str), frame["system_base_llm"].astype(str)


def _scored(frame: pd.DataFrame, outcome: str, lineage: Lineage) -> pd.DataFrame:
    value, status = OUTCOMES[outcome]
    rows = frame[frame[status] == "ok"].copy()
    jf, gf = _lineage_columns(rows, lineage)
    return pd.DataFrame({"y": rows[value].astype("float64").to_numpy(), "judge": rows["judge_model"].astype(str).to_numpy(),
                         "generator": rows["system_model"].astype(str).to_numpy(), "jfam": jf.to_numpy(),
                         "gfam": gf.to_numpy(), "sign": rows["sign_code"].astype(str).to_numpy()})


def _did_terms(judges: list[str], gens: list[str], jfam: dict[str, str], gfam: dict[str, str]
               ) -> tuple[dict[str, list[tuple[str, str, list[str]]]], dict[str, str]]:
    """For each judge, its (g, h, neutral judges) triples; and a reason when it has none."""
    terms: dict[str, list[tuple[str, str, list[str]]]] = {}
    reasons: dict[str, str] = {}
    for j in judges:
        own = [g for g in gens if gfam[g] == jfam[j]]
        other = [h for h in gens if gfam[h] != jfam[j]]
        if not own:
            reasons[j] = f"no generator of the judge's family ({jfam[j]})"
            continue
        if not other:
            reasons[j] = "no generator of another family"
            continue
        triples = []
        for g, h in product(own, other):
            neutral = [k for k in judges if jfam[k] not in (gfam[g], gfam[h])]
            if neutral:
                triples.append((g, h, neutral))
        if triples:
            terms[j] = triples
        else:
            reasons[j] = "no judge is neutral to both families compared"
    return terms, reasons


def per_judge_index(data: pd.DataFrame, seed: int = 0, n_resamples: int = N_RESAMPLES) -> tuple[dict[str, Any], dict[str, str]]:
    judges = sorted(data["judge"].unique())
    gens = sorted(data["generator"].unique())
    jfam = dict(zip(data["judge"], data["jfam"]))
    gfam = dict(zip(data["generator"], data["gfam"]))
    terms, reasons = _did_terms(judges, gens, jfam, gfam)
    if not terms:
        return {}, reasons
    signs = sorted(data["sign"].unique())
    cell_index = {(j, g): i for i, (j, g) in enumerate(product(judges, gens))}
    # per-sign sums and counts of y for every (judge, generator) cell
    codes = data["judge"].map({j: i for i, j in enumerate(judges)}).to_numpy() * len(gens) + \
        data["generator"].map({g: i for i, g in enumerate(gens)}).to_numpy()
    sign_codes = data["sign"].map({s: i for i, s in enumerate(signs)}).to_numpy()
    n_cells = len(judges) * len(gens)
    sums = np.zeros((len(signs), n_cells))
    counts = np.zeros((len(signs), n_cells))
    np.add.at(sums, (sign_codes, codes), data["y"].to_numpy())
    np.add.at(counts, (sign_codes, codes), 1.0)
    weights = np.vstack([np.ones(len(signs)), resample_counts(len(signs), n_resamples, seed)])
    with np.errstate(divide="ignore", invalid="ignore"):
        means = (weights @ sums) / (weights @ counts)  # (1 + B, cells)

    def y(j: str, g: str) -> np.ndarray:
        return means[:, cell_index[(j, g)]]

    out: dict[str, Any] = {}
    for j, triples in terms.items():
        parts = []
        for g, h, neutral in triples:
            baseline = np.mean([y(k, g) - y(k, h) for k in neutral], axis=0)
            parts.append((y(j, g) - y(j, h)) - baseline)
        values = np.mean(parts, axis=0)
        ci = percentile_ci(values[1:])
        out[j] = {"estimate": float(values[0]) if np.isfinite(values[0]) else None,
                  "ci": list(ci) if ci else None, "pairs": len(triples)}
    return out, reasons


def pooled_model(data: pd.DataFrame) -> tuple[dict[str, Any] | None, str | None]:
    """score ~ C(judge) + C(generator) + same_family (+ self) with sign-clustered errors."""
    d = data.assign(same_family=(data["jfam"] == data["gfam"]).astype(float),
                    is_self=(data["judge"] == data["generator"]).astype(float))
    if d["same_family"].nunique() < 2:
        return None, "same_family does not vary (every judge-generator pair is same-family, or none is)"
    if d["judge"].nunique() < 2 or d["generator"].nunique() < 2:
        return None, "needs at least two judges and two generators"
    if d["sign"].nunique() < 2:
        return None, "sign-clustered errors need at least two signs"
    terms = ["C(judge)", "C(generator)", "same_family"]
    # self and family coincide unless some family has several models judged as generators
    self_separable = d["is_self"].nunique() == 2 and not (d["is_self"] == d["same_family"]).all()
    if self_separable:
        terms.append("is_self")
    formula = "y ~ " + " + ".join(terms)
    try:
        fit = smf.ols(formula, data=d).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(d["sign"])[0]})
    except (np.linalg.LinAlgError, ValueError) as e:
        return None, f"the model could not be fitted ({e})"
    if fit.df_model < len(fit.params) - 1 or not np.isfinite(fit.bse.get("same_family", np.nan)):
        return None, "same_family is collinear with the judge and generator effects"
    out: dict[str, Any] = {"formula": formula, "n": int(fit.nobs), "clusters": int(d["sign"].nunique())}
    for name in ("same_family", "is_self") if self_separable else ("same_family",):
        lo, hi = fit.conf_int().loc[name]
        out["self" if name == "is_self" else name] = {"estimate": float(fit.params[name]), "se": float(fit.bse[name]),
                                                      "ci": [float(lo), float(hi)], "p": float(fit.pvalues[name])}
    return out, None


def self_preference(frame: pd.DataFrame, lineage: Lineage = "family", seed: int = 0,
                    n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    result: dict[str, Any] = {"lineage": lineage}
    for outcome in OUTCOMES:
        data = _scored(frame, outcome, lineage)
        families = set(data["jfam"]) | set(data["gfam"])
        entry: dict[str, Any] = {"estimable": False, "reason": None, "per_judge": {}, "pooled": None}
        if data.empty:
            entry["reason"] = f"no {outcome} verdicts"
            result[outcome] = entry
            continue
        reasons = []
        if len(families) < 3:
            reasons.append(f"per-judge index: needs at least 3 families, the design has {len(families)} "
                           f"({', '.join(sorted(families))}), so no judge is neutral to both families compared")
        else:
            per_judge, why = per_judge_index(data, seed, n_resamples)
            entry["per_judge"] = per_judge
            if why:
                entry["per_judge_not_estimable"] = why
            if not per_judge:
                reasons.append("per-judge index: " + "; ".join(f"{j}: {r}" for j, r in why.items()))
        pooled, why_pooled = pooled_model(data)
        entry["pooled"] = pooled
        if why_pooled:
            reasons.append(f"pooled model: {why_pooled}")
        entry["estimable"] = bool(entry["per_judge"]) or pooled is not None
        entry["reason"] = "; ".join(reasons) or None
        result[outcome] = entry
    return result


def family_matrix(frame: pd.DataFrame, lineage: Lineage = "family") -> dict[str, pd.DataFrame]:
    """Judge family x system family: mean overall and equivalence rate (for the heatmaps)."""
    jf, gf = _lineage_columns(frame, lineage)
    d = frame.assign(_jf=jf, _gf=gf)
    q = d[d["quality_status"] == "ok"]
    e = d[d["equivalence_status"] == "ok"].assign(_eq=lambda x: x["equivalent"].astype("float64"))
    return {"overall": q.pivot_table(index="_jf", columns="_gf", values="overall", aggfunc="mean"),
            "equivalent": e.pivot_table(index="_jf", columns="_gf", values="_eq", aggfunc="mean")}
