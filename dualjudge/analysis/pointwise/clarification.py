"""Label-free rubric clarification, the statistics: the sign split, the contested clauses, and the
experiment's result on the test split (after Han and Kim, 2026).

- Split: the run's signs into development and test, stratified by sign group (regulatory, warning,
  information), seeded: in each group, signs in seeded order, the first floor(n x dev_share) to
  development. A group of one sign goes to test.
- Contested clauses: on the development split, each clause's disagreement is the mean, over answers two
  judges or more scored, of the variance of the judges' 0-2 scores of that clause (the rubric quality
  judges'). Krippendorff's alpha (interval) per clause is reported beside it; it is not the ranking
  statistic because it is undefined for a clause every judge scores the same everywhere.
  The top k are clarified; the control is k clauses drawn (seeded) from the others.
- Result on the test split: alpha between judges (overall and equivalent) under the original,
  clarified and control rubrics, and the paired differences clarified - original, clarified - control
  and control - original with sign-cluster intervals; the calibrated self-preference index per judge
  under each rubric and its paired differences; agreement with human labels per rubric when imported.
  Human labels are never read before this point: they do not select or edit clauses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dualjudge.analysis.pointwise.designs import RESPONSE, alpha_difference, alpha_sums, self_preference_difference
from dualjudge.analysis.reliability.agreement import alpha_from_sums
from dualjudge.analysis.shared.choices import N_RESAMPLES, Lineage
from dualjudge.analysis.shared.results import ClarificationRecord
from dualjudge.analysis.shared.words import words
from dualjudge.errors import DualjudgeError
from dualjudge.protocol.kinds import EQUIVALENCE, QUALITY
from dualjudge.protocol.seeds import seeded_rank

CLARIFICATION = "clarification.json"
ARMS = {"original": "rubric", "clarified": "rubric:clarified", "control": "rubric:control"}
CONTRASTS = (("clarified", "original"), ("clarified", "control"), ("control", "original"))
STATISTIC = "mean within-answer variance of the judges' 0-2 clause scores (rubric quality judges, development split)"


def split_signs(codes: list[str], group_of: Callable[[str], str], seed: int, dev_share: float = 0.5) -> tuple[list[str], list[str]]:
    """Development and test signs (or a task's clusters), disjoint, stratified by group (a sign's: regulatory,
    warning, information), seeded."""
    if not 0 < dev_share < 1:
        raise DualjudgeError(f"--dev-share must be between 0 and 1 (exclusive), got {dev_share}")
    by_group: dict[str, list[str]] = {}
    for code in sorted(set(codes)):
        by_group.setdefault(group_of(code), []).append(code)
    dev: list[str] = []
    for _, members in sorted(by_group.items()):
        ordered = sorted(members, key=lambda c: seeded_rank(seed, "rubric-split", c))
        dev += ordered[: int(len(members) * dev_share)]
    test = sorted(set(codes) - set(dev))
    if not dev or not test:
        raise DualjudgeError(
            f"the run's {len(set(codes))} {words().units} give no development/test split at dev share "
            f"{dev_share} (a group of one {words().unit} goes to test); run more {words().units}"
        )
    return sorted(dev), test


def clause_scores(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per verdict with its clause scores as columns (from rubric quality verdicts' criteria)."""
    return pd.DataFrame(
        [
            {**{k: r[k] for k in (*RESPONSE, "sign_code", "judge_model")}, **json.loads(r["criteria"])}
            for r in rows
            if r.get("criteria")
        ]
    )


def rank_clauses(scores: pd.DataFrame, clause_ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """Clauses from most to least contested (ties in rubric order), each with its disagreement, alpha and
    the answers behind it."""
    if scores.empty:
        raise DualjudgeError("no rubric verdict on the development split has clause scores; nothing to rank")
    out: list[dict[str, Any]] = []
    data = scores.assign(_ok="ok")
    for order, cid in enumerate(clause_ids):
        per_answer = data.groupby([*RESPONSE, "sign_code"])[cid]
        variance = per_answer.var(ddof=0)[per_answer.count() >= 2]
        sums = alpha_sums(data, cid, "_ok", sorted(set(data["sign_code"])))
        a = float(alpha_from_sums(sums.sum(axis=0, keepdims=True))[0])
        out.append(
            {
                "clause": cid,
                "disagreement": float(variance.mean()) if len(variance) else None,
                "alpha": a if np.isfinite(a) else None,
                "answers": int(len(variance)),
                "order": order,
            }
        )
    if all(c["answers"] == 0 for c in out):
        raise DualjudgeError("no development answer was scored by two judges; the clauses cannot be ranked")
    out.sort(key=lambda c: (-(c["disagreement"] or 0.0), c["order"]))
    for rank, c in enumerate(out, 1):
        c["rank"] = rank
        del c["order"]
    return out


def choose_clauses(ranking: list[dict[str, Any]], k: int, seed: int) -> tuple[list[str], list[str]]:
    """The k most contested clauses, and the control: k clauses drawn (seeded) from the others."""
    ids = [c["clause"] for c in ranking]
    if k < 1 or 2 * k > len(ids):
        raise DualjudgeError(f"--k must be from 1 to {len(ids) // 2} (half the rubric's {len(ids)} clauses), got {k}")
    selected = ids[:k]
    unselected = sorted(ids[k:], key=lambda c: seeded_rank(seed, "rubric-control", c))
    return selected, sorted(unselected[:k], key=ids.index)


# -- the experiment's result (read at analysis time) -------------------------------------------------------
def clarification_near(table: Path) -> ClarificationRecord | None:
    """The clarification record beside a verdict table (None: none there, or one that cannot be read)."""
    path = table.parent / CLARIFICATION
    if not path.is_file():
        return None
    try:
        return ClarificationRecord.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def experiment(
    frame: pd.DataFrame,
    record: ClarificationRecord | dict[str, Any],
    human: dict[str, Any] | None,
    lineage: Lineage = "family",
    seed: int = 0,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, Any]:
    """The clarification experiment on its test split: alpha per rubric, paired differences, the
    self-preference index per rubric, agreement with humans per rubric."""
    record = ClarificationRecord.model_validate(record)  # a record, or its JSON object
    test = set(record.split["test"])
    rows = frame[frame["sign_code"].astype(str).isin(test)]
    arms = {
        arm: rows[rows["judge_variant"] == variant]
        for arm, variant in ARMS.items()
        if arm in record.arms and (rows["judge_variant"] == variant).any()
    }
    result: dict[str, Any] = {
        "record": record,
        "arms": sorted(arms, key=list(ARMS).index),
        "alpha": {},
        "differences": {},
        "self_preference": {},
        "human": {},
    }
    for a, b in CONTRASTS:
        if a not in arms or b not in arms:
            continue
        name = f"{a} - {b}"
        entry = {
            value: alpha_difference(arms[a], arms[b], value, status, seed, n_resamples)
            for value, status in (("overall", QUALITY.status), ("equivalent", EQUIVALENCE.status))
        }
        for arm, side in ((a, "a"), (b, "b")):
            result["alpha"].setdefault(arm, {value: e[side] for value, e in entry.items()})
        result["differences"][name] = {
            **{value: e["difference"] for value, e in entry.items()},
            "answers": entry["overall"]["answers"],
            "signs": entry["overall"]["signs"],
        }
        result["self_preference"][name] = self_preference_difference(arms[b], arms[a], lineage, seed, n_resamples)
    if human:
        for arm, variant in ARMS.items():
            judges = (human.get("by_variant") or {}).get(variant, {})
            result["human"][arm] = {
                j: {"r_overall": h["overall"]["pearson"], "n": h["overall"]["n"], "kappa_equivalent": h["equivalence"]["kappa"]}
                for j, h in judges.items()
            }
    return result
