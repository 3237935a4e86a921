"""Identification: did the system name the right SIGN_TYPE? And the paper's Section 3 audit of it.

Identification accuracy is per answer (predicted category equal to the gold one; a missing or
unparsed SIGN_TYPE counts as wrong), per strategy and per system model. The audit counts, per judge,
the answers it scored "good" (at or above the high cut, as the paper's audit does) whose SIGN_TYPE is
wrong, and compares the ranking of systems by the judges' mean overall with their ranking by
identification accuracy (Kendall's tau).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from scipy import stats

from dualjudge.analysis.pointwise.dual_judge import quality_rows
from dualjudge.analysis.shared.scale import PAPER_SCALE, Scale
from dualjudge.analysis.shared.table import ANSWER_KEY

ANSWER = ANSWER_KEY


def _answers(frame: pd.DataFrame) -> pd.DataFrame:
    answers = frame.drop_duplicates(ANSWER)
    return answers[answers["category"].notna()]


def _correct(rows: pd.DataFrame) -> pd.Series:
    return (rows["predicted_category"] == rows["category"]).fillna(False).astype(bool)


def accuracy(frame: pd.DataFrame, by: str) -> dict[str, dict[str, Any]]:
    answers = _answers(frame)
    out = {}
    for key, g in answers.groupby(by, sort=True):
        ok = _correct(g)
        out[str(key)] = {"accuracy": float(ok.mean()), "correct": int(ok.sum()), "n": int(len(g))}
    return out


def audit(frame: pd.DataFrame, scale: Scale = PAPER_SCALE) -> dict[str, Any]:
    """Per judge, answers scored good (>= the high cut) with a wrong SIGN_TYPE; and the two rankings."""
    q = quality_rows(frame)
    q = q[q["category"].notna()]
    good = q[q["overall"] >= scale.high]
    wrong = good[~_correct(good)]
    per_judge = {
        str(j): {"good": int(len(g)), "good_but_wrong": int(len(wrong[wrong["judge_model"] == j]))}
        for j, g in good.groupby("judge_model", sort=True)
    }
    by_score = q.groupby("system")["overall"].mean()
    by_identification = pd.Series({k: v["accuracy"] for k, v in accuracy(frame, "system").items()})
    systems = sorted(set(by_score.index) & set(by_identification.index))
    tau = None
    if len(systems) >= 3 and by_score[systems].nunique() > 1 and by_identification[systems].nunique() > 1:
        tau = float(stats.kendalltau(by_score[systems], by_identification[systems]).statistic)
    return {
        "cut": f">= {scale.high:g}",
        "per_judge": per_judge,
        "ranking_by_score": [str(s) for s in by_score[systems].sort_values(ascending=False).index],
        "ranking_by_identification": [str(s) for s in by_identification[systems].sort_values(ascending=False).index],
        "kendall_tau": tau,
    }


def identification(frame: pd.DataFrame, scale: Scale = PAPER_SCALE) -> dict[str, Any] | None:
    """None when the table has no gold category or no predicted category."""
    if frame["category"].isna().all() or frame["predicted_category"].isna().all():
        return None
    return {
        "by_system": accuracy(frame, "system"),
        "by_system_model": accuracy(frame, "system_model"),
        "audit": audit(frame, scale),
    }
