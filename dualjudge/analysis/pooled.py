"""The pooled crossed-design regression (an alternative estimator).

    score ~ C(judge) + C(generator) + same_family (+ self, where a family has several generator models)

by OLS with sign-clustered (CR1) standard errors from statsmodels, and t intervals on G-1 degrees of
freedom (G = signs). One number for all judges; it assumes every judge has the same self-preference
and the same use of the scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

POOLED_INTERVAL = "analytic cluster-robust (CR1) standard errors by sign, 95% t interval on G-1 degrees of freedom"


def pooled_model(data: pd.DataFrame) -> tuple[dict[str, Any] | None, str | None]:
    """`data` has columns y, judge, generator, jfam, gfam, sign."""
    d = data.assign(same_family=(data["jfam"] == data["gfam"]).astype(float),
                    is_self=(data["judge"] == data["generator"]).astype(float))
    if d["same_family"].nunique() < 2:
        return None, "same_family does not vary (every judge-generator pair is same-family, or none is)"
    if d["judge"].nunique() < 2 or d["generator"].nunique() < 2:
        return None, "needs at least two judges and two generators"
    n_signs = d["sign"].nunique()
    if n_signs < 2:
        return None, "sign-clustered errors need at least two signs"
    terms = ["C(judge)", "C(generator)", "same_family"]
    # self and family coincide unless some family has several models judged as generators
    self_separable = d["is_self"].nunique() == 2 and not (d["is_self"] == d["same_family"]).all()
    if self_separable:
        terms.append("is_self")
    formula = "y ~ " + " + ".join(terms)
    try:
        fit = smf.ols(formula, data=d).fit(cov_type="cluster", use_t=True,
                                           cov_kwds={"groups": pd.factorize(d["sign"])[0], "df_correction": True})
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError) as e:
        return None, f"the model could not be fitted ({e})"
    if fit.df_model < len(fit.params) - 1 or not np.isfinite(fit.bse.get("same_family", np.nan)):
        return None, "same_family is collinear with the judge and generator effects"
    out: dict[str, Any] = {"formula": formula, "n": int(fit.nobs), "clusters": n_signs, "interval": POOLED_INTERVAL}
    for name in ("same_family", "is_self") if self_separable else ("same_family",):
        lo, hi = fit.conf_int().loc[name]
        out["self" if name == "is_self" else name] = {"estimate": float(fit.params[name]), "se": float(fit.bse[name]),
                                                      "ci": [float(lo), float(hi)], "p": float(fit.pvalues[name])}
    return out, None
