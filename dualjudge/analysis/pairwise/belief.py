"""The pairwise own-family term decomposed, as the pointwise index is (analysis/pointwise/belief.py): agreement with the judge's
own answer held fixed, and split into its harmful and legitimate parts where the gold label is known.

The judge's own label on an item is the modal label of its own answers in the table (its family's where the judge
model answered nothing), every tied label counting on an even split. Each comparison then carries, beside the first
slot, the own-family difference split by whether the judge's own answer on the item is wrong or right, and the
difference in agreement with the judge's label split alike (without gold labels: own and agreement alone). The same
Davidson-Bradley-Terry fit (estimate.py), the same item-cluster resamples; a term the design cannot separate from
the others is held at 0 and named.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dualjudge.analysis.pairwise.cells import Comparisons
from dualjudge.analysis.pointwise.belief import beliefs_of

WITH_GOLD: tuple[str, ...] = ("first", "own_wrong", "own_right", "agree_wrong", "agree_right")
WITHOUT_GOLD: tuple[str, ...] = ("first", "own", "agree")


def no_labels(frame: pd.DataFrame) -> str | None:
    """Why agreement with the judge's own answer cannot be held fixed on this pairwise table, or None."""
    if not {"label_a", "label_b"} <= set(frame.columns) or frame[["label_a", "label_b"]].isna().all().all():
        return (
            "the table has no answer labels (label_a, label_b), so an answer's agreement with the judge's own cannot be held fixed"
        )
    return None


def answers_of(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per answer the table shows (each side of each comparison), as belief.beliefs_of reads them."""
    item = frame["run_id"].astype(str) + "\x1f" + frame["item_id"].astype(str)
    gold = frame["label"] if "label" in frame.columns else pd.Series(np.nan, index=frame.index)
    prompt = [c for c in ("strategy", "repeat") if c in frame.columns]  # a run's answers: one per prompt and repeat
    sides = [
        pd.DataFrame(
            {
                "_item": item,
                "_label": frame[f"label_{s}"],
                "_gold": gold,
                "system_model": frame[f"system_{s}"],
                "_family": frame[f"family_{s}"],
                **{c: frame[c] for c in prompt},
            }
        )
        for s in ("a", "b")
    ]
    answers = pd.concat(sides, ignore_index=True).dropna(subset=["_label"])
    answers["_label"] = answers["_label"].astype(str)
    return answers.drop_duplicates(["_item", "system_model", *prompt])


def terms(frame: pd.DataFrame, comps: Comparisons) -> tuple[np.ndarray, tuple[str, ...], np.ndarray, dict[str, Any]]:
    """The decomposition's covariates per answered comparison (N, K), their names, the rows where the judge's own
    label on the item is known, and per judge what its own labels rest on."""
    answered = frame[(frame["pairwise_status"] == "ok") & frame["winner"].notna()]
    answers = answers_of(frame)
    beliefs = beliefs_of(answers, comps.judges, comps.judge_family)
    gold = beliefs.gold
    item = (answered["run_id"].astype(str) + "\x1f" + answered["item_id"].astype(str)).to_numpy()
    a_first = (answered["shown_first"] == "a").to_numpy()
    label_a = answered["label_a"].astype("string").fillna("\x00").to_numpy(dtype=object)
    label_b = answered["label_b"].astype("string").fillna("\x00").to_numpy(dtype=object)
    judges = answered["judge_model"].astype(str).to_numpy()
    n = len(answered)
    # each (judge, item)'s own labels, as rows of a table: matched against each comparison's two labels at once
    own_labels = pd.DataFrame(
        [(j, it, lab) for j, items in beliefs.label.items() for it, labels in items.items() for lab in labels],
        columns=["judge", "item", "label"],
    )
    wrong_of = pd.DataFrame(
        [(j, it, w) for j, items in beliefs.wrong.items() for it, w in items.items()], columns=["judge", "item", "wrong"]
    )
    rows = pd.DataFrame({"judge": judges, "item": item, "row": np.arange(n)})
    known = np.zeros(n, dtype=bool)
    known[rows.merge(own_labels[["judge", "item"]].drop_duplicates(), on=["judge", "item"])["row"].to_numpy()] = True
    wrong = np.zeros(n, dtype=bool)
    hit = rows.merge(wrong_of, on=["judge", "item"])
    wrong[hit["row"].to_numpy()] = hit["wrong"].to_numpy(dtype=bool)

    def shares(labels: np.ndarray) -> np.ndarray:
        """1 where the row's answer label is one of the judge's own labels on the item."""
        found = rows.assign(label=labels).merge(own_labels, on=["judge", "item", "label"])["row"].to_numpy()
        out = np.zeros(n)
        out[found] = 1.0
        return out

    agree_a, agree_b = shares(label_a), shares(label_b)
    agree = np.where(a_first, agree_a - agree_b, agree_b - agree_a)
    own = comps.own_first.astype(float) - comps.own_second.astype(float)
    first = np.ones(n)
    if gold:
        w = wrong.astype(float)
        x = np.column_stack([first, own * w, own * (1 - w), agree * w, agree * (1 - w)])
        names = WITH_GOLD
    else:
        x = np.column_stack([first, own, agree])
        names = WITHOUT_GOLD
    info = {
        "gold": gold,
        "source": beliefs.source,
        "items": {j: len(beliefs.label.get(j, {})) for j in comps.judges},
        "items_wrong": {j: int(sum(beliefs.wrong.get(j, {}).values())) for j in comps.judges},
        "split": beliefs.split,
        "never": beliefs.never,
    }
    return x, names, known, info


def never(term: str, judge: str) -> str:
    """Why a judge's term has no comparison that carries it."""
    return {
        "own": f"{judge} never compared its own family's answer with another family's",
        "own_wrong": f"its own answer is never wrong on an item where {judge} compared its family's answer with another's",
        "own_right": f"its own answer is never right on an item where {judge} compared its family's answer with another's",
        "agree": f"no comparison of {judge}'s sets an answer sharing its own label against one that does not",
        "agree_wrong": f"on the items {judge} answered wrongly, no comparison sets an answer sharing its label against another",
        "agree_right": f"on the items {judge} answered rightly, no comparison sets an answer sharing its label against another",
    }.get(term, f"no comparison of {judge}'s carries the term {term}")
