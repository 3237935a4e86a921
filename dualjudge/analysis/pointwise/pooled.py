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
import statsmodels.api as sm
from scipy import stats

from dualjudge.analysis.shared.words import words

ABSORB_ABOVE = 200  # generators above which their effects are absorbed rather than fitted as dummies


def pooled_interval() -> str:
    return f"analytic cluster-robust (CR1) standard errors by {words().unit}, 95% t interval on G-1 degrees of freedom"


def pooled_model(data: pd.DataFrame) -> tuple[dict[str, Any] | None, str | None]:
    """`data` has columns y, judge, generator, jfam, gfam, sign."""
    d = data.assign(
        same_family=(data["jfam"] == data["gfam"]).astype(float), is_self=(data["judge"] == data["generator"]).astype(float)
    )
    if d["same_family"].nunique() < 2:
        return None, "same_family does not vary (every judge-generator pair is same-family, or none is)"
    if d["judge"].nunique() < 2 or d["generator"].nunique() < 2:
        return None, "needs at least two judges and two generators"
    n_signs = d["sign"].nunique()
    if n_signs < 2:
        return None, f"{words().unit}-clustered errors need at least two {words().units}"
    terms = ["C(judge)", "C(generator)", "same_family"]
    # self and family coincide unless some family has several models judged as generators
    self_separable = d["is_self"].nunique() == 2 and not (d["is_self"] == d["same_family"]).all()
    if self_separable:
        terms.append("is_self")
    formula = "y ~ " + " + ".join(terms)
    wanted = ("same_family", "is_self") if self_separable else ("same_family",)
    groups = pd.factorize(d["sign"])[0]
    try:
        if d["generator"].nunique() > ABSORB_ABOVE:
            params, bse, conf, pvalues, collinear = _absorbed(d, list(wanted), groups)
        else:
            fit = sm.OLS(d["y"], _dummies(d, list(wanted))).fit(
                cov_type="cluster", use_t=True, cov_kwds={"groups": groups, "df_correction": True}
            )
            params, bse, conf, pvalues = fit.params, fit.bse, fit.conf_int(), fit.pvalues
            collinear = fit.df_model < len(fit.params) - 1
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError) as e:
        return None, f"the model could not be fitted ({e})"
    if collinear or not np.isfinite(bse.get("same_family", np.nan)):
        return None, "same_family is collinear with the judge and generator effects"
    out: dict[str, Any] = {"formula": formula, "n": int(len(d)), "clusters": n_signs, "interval": pooled_interval()}
    for name in wanted:
        lo, hi = conf.loc[name]
        out["self" if name == "is_self" else name] = {
            "estimate": float(params[name]),
            "se": float(bse[name]),
            "ci": [float(lo), float(hi)],
            "p": float(pvalues[name]),
        }
    return out, None


def _dummies(d: pd.DataFrame, wanted: list[str]) -> pd.DataFrame:
    """The formula's design matrix, built directly (patsy's categorical sniffing costs seconds per million
    rows): an intercept, treatment-coded judge and generator dummies (the first level in sorted order is the
    reference, as in patsy), then the wanted terms."""
    parts = [pd.DataFrame({"Intercept": np.ones(len(d))}, index=d.index)]
    for name in ("judge", "generator"):
        codes = pd.Categorical(d[name], categories=sorted(d[name].unique()))
        dummies = pd.get_dummies(codes, drop_first=True, dtype=float)
        dummies.index = d.index
        dummies.columns = [f"C({name})[T.{c}]" for c in dummies.columns]
        parts.append(dummies)
    parts.append(d[wanted].astype(float))
    return pd.concat(parts, axis=1)


def _absorbed(d: pd.DataFrame, wanted: list[str], groups: np.ndarray) -> tuple[pd.Series, pd.Series, pd.DataFrame, pd.Series, bool]:
    """The same regression with the generator effects absorbed (Frisch-Waugh-Lovell: every column demeaned
    within its generator, then OLS without them), for thousands of generators, where the dummy matrix would
    not fit in memory. Coefficients and cluster-robust errors are those of the full model: the residuals and
    the residualized regressors are the same, and the CR1 small-sample factor is rescaled from the few
    regressors fitted to the full model's count (judges, generators, the terms)."""
    judges = sorted(d["judge"].unique())
    x = pd.DataFrame({f"judge[{j}]": (d["judge"] == j).astype(float) for j in judges[1:]}, index=d.index)
    for name in wanted:
        x[name] = d[name]
    by = d["generator"]
    y = d["y"] - d["y"].groupby(by).transform("mean")
    x = x - x.groupby(by).transform("mean")
    fit = sm.OLS(y, x).fit(cov_type="cluster", use_t=True, cov_kwds={"groups": groups, "df_correction": True})
    n, k_fitted = len(d), x.shape[1]
    k_full = k_fitted + d["generator"].nunique()  # the intercept and the generator effects it absorbed
    factor = np.sqrt((n - k_fitted) / (n - k_full))
    bse = fit.bse * factor
    crit = float(stats.t.ppf(0.975, fit.df_resid_inference))
    conf = pd.DataFrame({0: fit.params - crit * bse, 1: fit.params + crit * bse})
    pvalues = pd.Series(2 * stats.t.sf(np.abs(fit.params / bse), fit.df_resid_inference), index=fit.params.index)
    collinear = bool(np.linalg.matrix_rank(x.to_numpy()) < k_fitted)
    return fit.params, bse, conf, pvalues, collinear
