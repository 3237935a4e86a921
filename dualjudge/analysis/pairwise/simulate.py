"""Simulated pairwise tables with planted effects (tests, benchmarks/stats/pairwise_coverage.py, the 1M-row benchmark).

Each system answers each item with quality strength + item noise (a per-answer effect: items cluster); each judge
compares two answers to the same item in both orders and its verdict follows the Davidson model of model.py with its
own decisiveness, first-slot preference, own-family term and tie propensity. What was planted is returned with the
table, so an estimator's recovery can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from dualjudge.analysis.pairwise.model import probabilities

Design = Literal["own_vs_other", "all"]


@dataclass(frozen=True)
class PlantedPairs:
    systems: dict[str, str] = field(
        default_factory=lambda: {"qwen-j": "qwen", "google-j": "google", "meta-j": "meta", "mistral-j": "mistral"}
    )
    judges: dict[str, str] = field(
        default_factory=lambda: {"qwen-j": "qwen", "google-j": "google", "meta-j": "meta", "mistral-j": "mistral"}
    )
    strength: dict[str, float] = field(default_factory=lambda: {"qwen-j": 0.6, "google-j": 0.2, "meta-j": -0.2, "mistral-j": -0.6})
    decisiveness: dict[str, float] = field(default_factory=dict)  # per judge (default 1)
    position: dict[str, float] = field(default_factory=dict)  # per judge, first-slot logit (default 0)
    own: dict[str, float] = field(default_factory=dict)  # per judge, own-family logit (default 0)
    tie: dict[str, float] = field(default_factory=dict)  # per judge, Davidson nu (default 0: never ties)
    n_items: int = 60
    answer_sd: float = 0.5  # an answer's quality around its system's strength, per item
    design: Design = "all"
    # final labels (0: none): each answer is right (label "l0") with its system's accuracy, else a wrong label drawn
    # from the others; a right answer is `right_bonus` stronger; a judge adds `agree[judge]` to an answer sharing the
    # label of its own model's answer on the item (the judge's own answer: judges must be system models)
    labels: int = 0
    accuracy: dict[str, float] = field(default_factory=dict)  # per system (default 0.6)
    right_bonus: float = 1.0
    agree: dict[str, float] = field(default_factory=dict)


def simulate_pairs(planted: PlantedPairs, seed: int = 0) -> pd.DataFrame:
    """The pairwise table (docs/verdict-table.md) of a planted study: every pair of the design in both orders."""
    rng = np.random.default_rng(seed)
    systems = list(planted.systems)
    quality = np.array([planted.strength.get(s, 0.0) for s in systems])[None, :] + rng.normal(
        0, planted.answer_sd, size=(planted.n_items, len(systems))
    )
    label = np.zeros((planted.n_items, len(systems)), dtype=int)
    if planted.labels:
        right = rng.random((planted.n_items, len(systems))) < np.array([planted.accuracy.get(s, 0.6) for s in systems])
        label = np.where(right, 0, rng.integers(1, planted.labels, size=right.shape))
        quality = quality + planted.right_bonus * right
    rows: list[tuple[str, str, str, str, int, int]] = []
    pairs = list(combinations(range(len(systems)), 2))
    for judge, family in planted.judges.items():
        mine = [i for i, s in enumerate(systems) if planted.systems[s] == family]
        if planted.design == "own_vs_other":
            chosen = [(a, b) for a, b in pairs if (a in mine) != (b in mine)]
        else:
            chosen = pairs
        for item in range(planted.n_items):
            for a, b in chosen:
                rows.append((judge, family, f"item{item:04d}", systems[a], a, b))
    frame = pd.DataFrame(rows, columns=["judge_model", "judge_family", "item_id", "system_a", "ia", "ib"])
    frame = pd.concat([frame.assign(shown_first="a"), frame.assign(shown_first="b")], ignore_index=True)
    frame["system_a"] = [systems[i] for i in frame["ia"]]
    frame["system_b"] = [systems[i] for i in frame["ib"]]
    item = frame["item_id"].str[4:].astype(int).to_numpy()
    ia, ib = frame["ia"].to_numpy(), frame["ib"].to_numpy()
    a_first = (frame["shown_first"] == "a").to_numpy()
    first, second = np.where(a_first, ia, ib), np.where(a_first, ib, ia)
    judge = frame["judge_model"].to_numpy()
    family = frame["judge_family"].to_numpy()
    sys_family = np.array([planted.systems[s] for s in systems], dtype=object)

    def per_judge(values: dict[str, float], default: float) -> np.ndarray:
        return np.array([values.get(j, default) for j in judge])

    own = (sys_family[first] == family).astype(float) - (sys_family[second] == family).astype(float)
    eta = (
        per_judge(planted.decisiveness, 1.0) * (quality[item, first] - quality[item, second])
        + per_judge(planted.position, 0.0)
        + per_judge(planted.own, 0.0) * own
    )
    if planted.labels:
        own_label = label[item, np.array([systems.index(j) for j in judge])]
        agree = (label[item, first] == own_label).astype(float) - (label[item, second] == own_label).astype(float)
        eta = eta + per_judge(planted.agree, 0.0) * agree
    nu = per_judge(planted.tie, 0.0)
    probs = probabilities(eta, np.log(np.where(nu > 0, nu, np.nan)))
    probs = np.nan_to_num(probs, nan=0.0)
    draw = rng.random(len(frame))
    cum = np.cumsum(probs, axis=1)
    outcome = (draw[:, None] > cum[:, :2]).sum(axis=1)  # 0 first, 1 second, 2 tie
    first_letter = np.where(a_first, "a", "b")
    second_letter = np.where(a_first, "b", "a")
    winner = np.where(outcome == 0, first_letter, np.where(outcome == 1, second_letter, "tie"))
    out = pd.DataFrame(
        {
            "item_id": frame["item_id"],
            "judge_model": frame["judge_model"],
            "judge_family": frame["judge_family"],
            "system_a": frame["system_a"],
            "system_b": frame["system_b"],
            "family_a": sys_family[ia],
            "family_b": sys_family[ib],
            "shown_first": frame["shown_first"],
            "winner": winner,
        }
    )
    if planted.labels:
        out["label_a"] = [f"l{v}" for v in label[item, ia]]
        out["label_b"] = [f"l{v}" for v in label[item, ib]]
        out["label"] = "l0"
    return out
