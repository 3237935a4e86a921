"""The pairwise table's answered comparisons, coded for the model: per row the judge, the systems shown first and
second, the outcome, the cluster and whether each side is the judge's own family; then aggregated into cells
(model.Cells) and per-cluster counts, so a bootstrap resample's cells are one sparse product."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from dualjudge.analysis.pairwise.model import FIRST_WINS, SECOND_WINS, TIE, Cells


def _codes(values: pd.Series, names: list[str]) -> np.ndarray:
    return np.asarray(pd.Categorical(values.astype(str), categories=names).codes, dtype=np.int64)


@dataclass(frozen=True)
class Comparisons:
    """The answered comparisons, one per table row with a verdict, coded."""

    judges: list[str]
    systems: list[str]
    judge_family: dict[str, str]
    system_family: dict[str, str]
    groups: list[str]  # the clusters (the table's group, else its items)
    judge: np.ndarray  # (N,) judge index
    first: np.ndarray  # (N,) system shown first
    second: np.ndarray  # (N,) system shown second
    outcome: np.ndarray  # (N,) FIRST_WINS, SECOND_WINS or TIE
    group: np.ndarray  # (N,) cluster index
    own_first: np.ndarray  # (N,) the first-shown answer is of the judge's family
    own_second: np.ndarray
    prob_first: np.ndarray  # (N,) the judge's probability that the first-shown answer is better (NaN: not given)
    pair: np.ndarray  # (N,) the comparison's code without its order: run, item (strategy, repeat), judge, the two systems
    missing: dict[str, int]  # judge -> its comparisons without a verdict

    def own_vs_other(self) -> np.ndarray:
        """Rows where exactly one side is the judge's own family."""
        return np.asarray(self.own_first != self.own_second)

    def own_won(self) -> np.ndarray:
        """Per row, 1 where the own-family answer won, 0.5 for a tie, 0 where the other won; with the judge's
        probability where the table gives one (Panickssery et al. 2024 average probabilities, not choices)."""
        first_won = np.where(self.outcome == FIRST_WINS, 1.0, np.where(self.outcome == TIE, 0.5, 0.0))
        first_won = np.where(np.isfinite(self.prob_first), self.prob_first, first_won)
        return np.where(self.own_first, first_won, 1.0 - first_won)


def comparisons(frame: pd.DataFrame) -> Comparisons:
    """The validated pairwise table (table.validate_pairwise) coded; rows without a verdict are counted per judge."""
    answered = frame[(frame["pairwise_status"] == "ok") & frame["winner"].notna()]
    unanswered = frame.loc[~frame.index.isin(answered.index), "judge_model"].value_counts()
    judges = sorted(frame["judge_model"].astype(str).unique())
    systems = sorted(set(frame["system_a"]) | set(frame["system_b"]))

    def pairs(model: str, family: str) -> dict[str, str]:  # each model's family, read from its distinct pairs
        distinct = frame[[model, family]].drop_duplicates()
        return dict(zip(distinct[model].astype(str), distinct[family].astype(str)))

    judge_family = pairs("judge_model", "judge_family")
    system_family = {**pairs("system_a", "family_a"), **pairs("system_b", "family_b")}
    a_first = (answered["shown_first"] == "a").to_numpy()
    sys_a, sys_b = _codes(answered["system_a"], systems), _codes(answered["system_b"], systems)
    first, second = np.where(a_first, sys_a, sys_b), np.where(a_first, sys_b, sys_a)
    winner = answered["winner"].to_numpy()
    outcome = np.where(winner == "tie", TIE, np.where((winner == "a") == a_first, FIRST_WINS, SECOND_WINS))
    judge = _codes(answered["judge_model"], judges)
    groups = sorted(answered["group"].astype(str).unique())
    family_of = np.array([system_family[s] for s in systems], dtype=object)
    judge_fam = np.array([judge_family[j] for j in judges], dtype=object)
    prob = np.full(len(answered), np.nan)
    if "prob_a" in answered.columns:
        given = pd.to_numeric(answered["prob_a"], errors="coerce").to_numpy(dtype=float)
        prob = np.where(a_first, given, 1.0 - given)
    prompt = answered["run_id"].astype(str) + "\x1f" + answered["item_id"].astype(str)
    for column in ("strategy", "repeat"):  # a run's table: one item's prompts and repeats are separate pairs
        if column in answered.columns:
            prompt = prompt + "\x1f" + answered[column].astype(str)
    item = pd.factorize(prompt)[0].astype(np.int64)
    n_s = len(systems)
    pair = ((item * len(judges) + judge) * n_s + np.minimum(sys_a, sys_b)) * n_s + np.maximum(sys_a, sys_b)
    return Comparisons(
        judges=judges,
        systems=systems,
        judge_family={j: str(judge_family[j]) for j in judges},
        system_family={s: str(system_family[s]) for s in systems},
        groups=groups,
        judge=judge,
        first=first,
        second=second,
        outcome=outcome,
        group=_codes(answered["group"], groups),
        own_first=family_of[first] == judge_fam[judge],
        own_second=family_of[second] == judge_fam[judge],
        prob_first=prob,
        pair=pair,
        missing={j: int(unanswered.get(j, 0)) for j in judges},
    )


@dataclass(frozen=True)
class Coded:
    """The comparisons' cells and how to remake a resample's counts: per cluster, per cell, per outcome."""

    cells: Cells
    row_cell: np.ndarray  # (N,) each comparison's cell
    by_group: sparse.csr_matrix  # (G, 3C) counts of each cluster in each cell and outcome

    def resampled(self, weights: np.ndarray) -> np.ndarray:
        """(R, C, 3) the cells' counts under each row of (R, G) cluster weights."""
        counts = np.asarray(self.by_group.T @ weights.T).T
        return counts.reshape(len(weights), -1, 3)


def coded(comps: Comparisons, x: np.ndarray, rows: np.ndarray | None = None) -> Coded:
    """Cells of the comparisons in `rows` (all by default) under the per-row covariates x (N, K)."""
    keep = np.arange(len(comps.judge)) if rows is None else np.flatnonzero(rows)
    terms = x[keep].astype(np.int64)  # each term is a difference of two indicators: -1, 0 or 1
    if terms.size and (np.abs(terms).max() > 1 or not np.array_equal(terms, x[keep])):
        raise ValueError("pairwise terms must be -1, 0 or 1")
    n_s = len(comps.systems)
    key = (comps.judge[keep] * n_s + comps.first[keep]) * n_s + comps.second[keep]
    for k in range(terms.shape[1]):
        key = key * 3 + terms[:, k] + 1
    codes, row_cell = np.unique(key, return_inverse=True)
    first_row = np.zeros(len(codes), dtype=np.int64)
    first_row[row_cell[::-1]] = np.arange(len(keep))[::-1]  # a row of each cell, to read its parts back
    unique = np.column_stack([comps.judge[keep], comps.first[keep], comps.second[keep], terms])[first_row]
    n_cells = len(unique)
    flat = row_cell * 3 + comps.outcome[keep]
    counts = np.bincount(flat, minlength=3 * n_cells).reshape(n_cells, 3).astype(np.float64)
    cells = Cells(
        judge=unique[:, 0].astype(np.int64),
        first=unique[:, 1].astype(np.int64),
        second=unique[:, 2].astype(np.int64),
        x=unique[:, 3:].astype(np.float64),
        counts=counts,
        n_judges=len(comps.judges),
        n_systems=len(comps.systems),
    )
    by_group = sparse.csr_matrix((np.ones(len(keep)), (comps.group[keep], flat)), shape=(len(comps.groups), 3 * n_cells))
    by_group.sum_duplicates()
    full = np.full(len(comps.judge), -1)
    full[keep] = row_cell
    return Coded(cells, full, by_group)
