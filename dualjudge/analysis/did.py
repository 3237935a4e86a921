"""The pair-matched difference-in-differences against neutral judges (an alternative estimator).

    SP_j = mean over (g in fam(j), h not in fam(j)) of
           [(y_jg - y_jh) - mean over judges k with fam(k) not in {fam(g), fam(h)} of (y_kg - y_kh)]

where y_jg is judge j's mean score for generator g. The neutral judges k favour neither g nor h, so
their own self-preference cannot leak into the baseline. It is unbiased when judges differ only in
leniency, and biased when they use the scale differently or fail more on weak answers (the calibrated
model in calibration.py is the headline for that reason). Interval: the sign-cluster bootstrap t
interval of bootstrap.py, on per-sign sufficient statistics.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd

from dualjudge.analysis.bootstrap import Interval, resample_counts, t_interval


def did_terms(judges: list[str], gens: list[str], jfam: dict[str, str], gfam: dict[str, str]
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


def per_judge_did(data: pd.DataFrame, n_resamples: int, seed: int) -> tuple[dict[str, Interval | None], dict[str, str]]:
    """`data` has columns y, judge, generator, jfam, gfam, sign. Returns intervals per judge (None where
    no interval can be formed) and reasons for judges without an estimate."""
    judges = sorted(data["judge"].unique())
    gens = sorted(data["generator"].unique())
    jfam = dict(zip(data["judge"], data["jfam"]))
    gfam = dict(zip(data["generator"], data["gfam"]))
    terms, reasons = did_terms(judges, gens, jfam, gfam)
    if not terms:
        return {}, reasons
    signs = sorted(data["sign"].unique())
    cell_index = {(j, g): i for i, (j, g) in enumerate(product(judges, gens))}
    codes = data["judge"].map({j: i for i, j in enumerate(judges)}).to_numpy() * len(gens) + \
        data["generator"].map({g: i for i, g in enumerate(gens)}).to_numpy()
    sign_codes = data["sign"].map({s: i for i, s in enumerate(signs)}).to_numpy()
    sums = np.zeros((len(signs), len(judges) * len(gens)))
    counts = np.zeros_like(sums)
    np.add.at(sums, (sign_codes, codes), data["y"].to_numpy())
    np.add.at(counts, (sign_codes, codes), 1.0)
    weights = np.vstack([np.ones(len(signs)), resample_counts(len(signs), n_resamples, seed)])
    with np.errstate(divide="ignore", invalid="ignore"):
        means = (weights @ sums) / (weights @ counts)  # (1 + B, cells)

    def y(j: str, g: str) -> np.ndarray:
        return means[:, cell_index[(j, g)]]

    out: dict[str, Interval | None] = {}
    for j, triples in terms.items():
        parts = []
        for g, h, neutral in triples:
            baseline = np.mean([y(k, g) - y(k, h) for k in neutral], axis=0)
            parts.append((y(j, g) - y(j, h)) - baseline)
        values = np.mean(parts, axis=0)
        out[j] = t_interval(values[0], values[1:], len(signs)) if np.isfinite(values[0]) else None
    return out, reasons
