"""The alternative annotator test (Calderon, Reichart, Dror, ACL 2025).

Can an LLM (the candidate) replace a human annotator? For each human annotator j left out, and each
item i they labelled: s_f = S(candidate_i, others_i) and s_h = S(h_ji, others_i), where others are
the remaining humans' labels on i. W_f = [s_f >= s_h] and W_h = [s_h >= s_f] (a tie counts as a win
for both). rho_j = mean W_f. One-sided test of H0: rho_f <= rho_h - epsilon on d = W_h - W_f
(t-test against epsilon, `less`); Benjamini-Yekutieli at q across annotators. omega = share of
rejected annotators (the candidate passes when omega >= 0.5); rho = mean rho_j ranks candidates.
Items need at least two human labels and a candidate label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from dualjudge.analysis.reliability.agreement import check_label_table
from dualjudge.analysis.shared.choices import AltTestKind, Metric
from dualjudge.errors import DualjudgeError

MIN_ITEMS = 30  # annotators with fewer kept items are not tested (the paper's rule)


@dataclass(frozen=True)
class AnnotatorResult:
    annotator: str
    n: int
    rho: float
    p_value: float | None
    rejected: bool


@dataclass(frozen=True)
class AltTestResult:
    omega: float
    rho: float
    passed: bool
    annotators: tuple[AnnotatorResult, ...]
    epsilon: float
    q: float
    metric: str

    def as_dict(self) -> dict[str, object]:
        return {
            "omega": self.omega,
            "rho": self.rho,
            "passed": self.passed,
            "epsilon": self.epsilon,
            "q": self.q,
            "metric": self.metric,
            "annotators": [
                {"annotator": a.annotator, "n": a.n, "rho": a.rho, "p_value": a.p_value, "rejected": a.rejected}
                for a in self.annotators
            ],
        }


def _score(pred: float, others: np.ndarray, metric: Metric) -> float:
    if metric == "accuracy":
        return float(np.mean(others == pred))
    return -float(np.sqrt(np.mean((others - pred) ** 2)))


def _p_value(d: np.ndarray, epsilon: float, test: AltTestKind) -> float:
    """One-sided p for H0: mean (t) or median (Wilcoxon) of d = W_h - W_f >= epsilon; NaN when d is constant."""
    if np.ptp(d) == 0:
        return float("nan")
    if test == "wilcoxon":
        return float(stats.wilcoxon(d - epsilon, alternative="less", zero_method="zsplit").pvalue)
    return float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)


def check_options(epsilon: float, q: float, metric: str, min_items: int) -> None:
    """The test's options, each checked by name: a bad one would silently turn the verdict."""
    if not (np.isfinite(epsilon) and 0 <= epsilon < 1):
        raise DualjudgeError(f"--epsilon must lie in [0, 1) (0.2 experts, 0.15 skilled, 0.1 crowd), got {epsilon}")
    if not (np.isfinite(q) and 0 < q < 1):
        raise DualjudgeError(f"--q (the Benjamini-Yekutieli level) must lie in (0, 1), got {q}")
    if metric not in ("accuracy", "neg_rmse"):
        raise DualjudgeError(f"--metric must be accuracy or neg_rmse, not {metric!r}")
    if min_items < 1:
        raise DualjudgeError(f"--min-items must be at least 1, got {min_items}")


def alt_test(
    long: pd.DataFrame,
    candidate: str,
    epsilon: float = 0.2,
    q: float = 0.05,
    metric: Metric = "accuracy",
    min_items: int = MIN_ITEMS,
    humans: list[str] | None = None,
    test: AltTestKind = "t",
) -> AltTestResult:
    """`humans`: the human annotators (default: everyone but the candidate); other annotators in the
    file (other LLMs) are left out. `test`: the authors' one-sample t-test, or the Wilcoxon signed-rank
    test, which the authors recommend below 30 items."""
    check_options(epsilon, q, metric, min_items)
    check_label_table(long)
    annotators = sorted(set(long["annotator"].astype(str)))
    if candidate not in annotators:
        raise DualjudgeError(f"candidate {candidate!r} is not an annotator in the table ({', '.join(annotators)})")
    if humans is not None:
        unknown = sorted(set(humans) - set(annotators))
        if unknown:
            raise DualjudgeError(f"--humans names {', '.join(unknown)}, not annotators in the table")
        if candidate in humans:
            raise DualjudgeError(f"--humans includes the candidate {candidate!r}")
        if len(set(humans)) < 3:
            raise DualjudgeError("--humans needs at least three human annotators")
    labels = long.assign(annotator=long["annotator"].astype(str))
    if humans is not None:
        labels = labels[labels["annotator"].isin([*humans, candidate])]
    if metric == "neg_rmse":
        try:
            labels["label"] = pd.to_numeric(labels["label"], errors="raise")
        except (ValueError, TypeError):
            raise DualjudgeError("metric neg_rmse needs numeric labels") from None
    else:
        labels["label"] = labels["label"].astype(str)
    wide = labels.pivot(index="item", columns="annotator", values="label")
    humans = sorted(humans) if humans is not None else [a for a in annotators if a != candidate]
    keep = wide[candidate].notna() & (wide[humans].notna().sum(axis=1) >= 2)
    wide = wide[keep]
    results, pvalues = [], []
    for j in humans:
        rows = wide[wide[j].notna()]
        if len(rows) < min_items:
            continue
        w_f, w_h = [], []
        for _, row in rows.iterrows():
            others = np.array([row[h] for h in humans if h != j and pd.notna(row[h])], dtype=object)
            if metric == "neg_rmse":
                others = others.astype(float)
            s_f = _score(row[candidate], others, metric)
            s_h = _score(row[j], others, metric)
            w_f.append(float(s_f >= s_h))
            w_h.append(float(s_h >= s_f))
        d = np.array(w_h) - np.array(w_f)
        p = _p_value(d, epsilon, test)
        results.append((j, len(rows), float(np.mean(w_f))))
        pvalues.append(p)
    if not results:
        raise DualjudgeError(
            f"no annotator other than {candidate!r} has at least {min_items} items shared with "
            f"two other humans; the test needs >= 3 annotators and enough items"
        )
    p_arr = np.array(pvalues, dtype=float)
    # a constant d gives no p-value: that annotator is tested (it counts in m) but never rejected
    rejected = multipletests(np.nan_to_num(p_arr, nan=1.0), alpha=q, method="fdr_by")[0]
    per = tuple(
        AnnotatorResult(j, n, rho, None if np.isnan(p) else p, bool(r)) for (j, n, rho), p, r in zip(results, p_arr, rejected)
    )
    omega = float(np.mean(rejected))
    rho = float(np.mean([a.rho for a in per]))
    return AltTestResult(omega, rho, omega >= 0.5, per, epsilon, q, metric)
