"""Self-preference decomposed: a judge's favour for its own family told apart from agreement with its own answer,
and split into its harmful and legitimate parts.

In a cross-family study every judge model also answers the items as a system, and every answer ends in a label
(SIGN_TYPE, a task's label, an exact-match value). A judge that believes an item's answer is X scores every answer
that says X higher, and its own family's answers say what it believes more often than the others: that raises
the calibrated index (calibration.py) with no favour for the family at all ("Are LLM Evaluators Really
Narcissists?", arXiv 2601.22548). Here:

- **the judge's own answer**: per judge and item, the label most of the judge model's own answers on the item end
  in (its family's answers, by the lineage, where the model never answered as a system); where its answers split
  evenly between labels, each of the tied labels is its own (an answer sharing any of them agrees with it, and its
  own answer is wrong only if none of them is the gold label);
- **belief control**: the calibration refitted with, per judge, terms for an answer that shares the judge's own
  label beside its own-family terms: the own-family shift with agreement held fixed;
- **harmful and legitimate parts** (Chen et al. 2025, arXiv 2504.03846), where the gold label is known: the
  own-family term split by whether the judge's own answer on the item is wrong (harmful: the favour can lift a
  wrong answer, the bias that changes conclusions) or right (legitimate), the agreement terms split alike.

The same calibration, sign-cluster bootstrap and t intervals as the index. A term the judge's verdicts cannot
separate from the others (every answer that agrees with it is its own family's, or none is) is held at 0 and
said, never estimated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dualjudge.analysis.shared import calibration
from dualjudge.analysis.shared.bootstrap import Interval, t_interval
from dualjudge.analysis.shared.choices import Lineage
from dualjudge.analysis.shared.table import ANSWER_KEY

if TYPE_CHECKING:
    from dualjudge.analysis.pointwise.grid import Grid

OWN_WRONG, OWN_RIGHT, AGREE_WRONG, AGREE_RIGHT = range(4)  # the terms with a gold label
OWN, AGREE = range(2)  # the terms without one
COLLINEAR = 1e-9  # a term whose residual on the kept ones has less than this share of its variance adds nothing
NEVER_ANSWERED = "it never answered as a system (nor did a model of its family), so its own answer is unknown"


@dataclass(frozen=True)
class Beliefs:
    """Per judge, its own label on each item (what it answered as a system) and whether that label is wrong."""

    label: dict[str, dict[str, frozenset[str]]]  # judge -> item key -> its label (the tied ones, on an even split)
    wrong: dict[str, dict[str, bool]]  # judge -> item key -> none of its labels is the gold one (items with a gold label)
    source: dict[str, str]  # judge -> "model" (its own answers) or "family" (its family's, the model never answered)
    split: dict[str, int]  # judge -> items whose answers split evenly between labels (each tied label is its own)
    never: list[str]  # judges that never answered as a system, nor did their family
    gold: bool  # the table has gold labels: the harmful and legitimate parts can be told apart


def item_keys(rows: pd.DataFrame) -> np.ndarray:
    """Each row's item as one text: the run and the item, so two runs' items never meet."""
    return np.asarray((rows["run_id"].astype(str) + "\x1f" + rows["item_id"].astype(str)).to_numpy(), dtype=object)


def no_control(frame: pd.DataFrame) -> str | None:
    """Why the agreement with the judge's own answer cannot be held fixed on this table, or None."""
    absent = set(frame.attrs.get("absent", []))
    if "predicted_category" in absent or frame["predicted_category"].isna().all():
        return (
            "the answers carry no final label (predicted_category or predicted_label), so an answer's agreement with "
            "the judge's own answer cannot be held fixed"
        )
    return None


def judge_beliefs(frame: pd.DataFrame, judges: list[str], judge_family: dict[str, str], lineage: Lineage) -> Beliefs:
    """Each judge's own label per item, from the table's answers: the judge model's own (rows whose system_model is
    the judge), else its family's by the lineage."""
    from dualjudge.analysis.pointwise.grid import lineage_columns

    _, gf = lineage_columns(frame, lineage)
    answers = frame.assign(_family=gf.to_numpy()).drop_duplicates(ANSWER_KEY)
    answers = answers[answers["predicted_category"].notna()]
    answers = answers.assign(_item=item_keys(answers), _label=answers["predicted_category"].astype(str), _gold=answers["category"])
    return beliefs_of(answers[["_item", "_label", "_gold", "system_model", "_family"]], judges, judge_family)


def beliefs_of(answers: pd.DataFrame, judges: list[str], judge_family: dict[str, str]) -> Beliefs:
    """The judges' own labels from answers (one row per answer: `_item`, `_label`, `_gold` (NaN: unknown),
    `system_model`, `_family`): per judge and item the modal label of the judge model's answers, else of its
    family's; every tied label where they split evenly."""
    gold_of = answers.dropna(subset=["_gold"]).drop_duplicates("_item").set_index("_item")["_gold"].astype(str)
    label: dict[str, dict[str, frozenset[str]]] = {}
    wrong: dict[str, dict[str, bool]] = {}
    source: dict[str, str] = {}
    split: dict[str, int] = {}
    never: list[str] = []
    for judge in judges:
        own = answers[answers["system_model"].astype(str) == judge]
        source[judge] = "model"
        if own.empty:
            own, source[judge] = answers[answers["_family"].astype(str) == judge_family[judge]], "family"
        if own.empty:
            never.append(judge)
            source.pop(judge)
            continue
        counts = own.groupby(["_item", "_label"], sort=True).size().rename("n").reset_index()
        top = counts.groupby("_item")["n"].transform("max")
        modal = counts[counts["n"] == top]
        split[judge] = int(modal.loc[modal["_item"].duplicated(keep=False), "_item"].nunique())
        mine = {item: frozenset(g["_label"]) for item, g in modal.groupby("_item", sort=True)}
        label[judge] = mine
        wrong[judge] = {item: gold_of[item] not in labels for item, labels in mine.items() if item in gold_of.index}
    return Beliefs(label, wrong, source, split, never, bool(len(gold_of)))


@dataclass(frozen=True)
class BeliefDesign:
    """The index's grid with the belief terms in place of its own-family ones, and what each judge's verdicts
    leave out or cannot separate."""

    design: calibration.Design
    names: tuple[str, ...]  # the terms, in the order of design.terms
    held: np.ndarray  # (J, K) 0 where a term is held (cannot be separated), NaN where estimated
    why_held: dict[tuple[int, int], str]  # (judge, term) -> why it is held


def belief_design(grid: Grid, frame: pd.DataFrame, beliefs: Beliefs) -> BeliefDesign:
    """Terms per judge and answer: own family x (its own answer wrong, right) and sharing its own label x (wrong,
    right), or own family and sharing its label where no gold label is known. A judge's verdicts on items where it
    has no own label (it did not answer them with a label) are left out; answers fewer than two judges then rate
    are dropped, as the index's grid drops them."""
    d = grid.design
    answers = frame.drop_duplicates(ANSWER_KEY)
    from dualjudge.analysis.pointwise.grid import answer_keys

    code, keys = answer_keys(answers)
    at = pd.Index(keys[code]).get_indexer(pd.Index(grid.answers))
    rows = answers.iloc[at]
    items = item_keys(rows)
    labels = rows["predicted_category"].astype("string").to_numpy(dtype=object, na_value=None)
    own = d.terms.sum(axis=0) > 0  # (J, A)
    n_j, n_a = d.n_judges, d.n_answers
    has, agree, wrong = (np.zeros((n_j, n_a), dtype=bool) for _ in range(3))
    item_codes, unique_items = pd.factorize(pd.Series(items))
    for j, judge in enumerate(grid.judges):
        mine = beliefs.label.get(judge, {})
        bad = beliefs.wrong.get(judge, {})
        has[j] = np.array([i in mine for i in unique_items], dtype=bool)[item_codes]
        agree[j] = np.array([lab is not None and lab in mine.get(i, ()) for i, lab in zip(items, labels)], dtype=bool)
        wrong[j] = np.array([bool(bad.get(i, False)) for i in unique_items], dtype=bool)[item_codes]
    present = d.present & has
    keep = present.sum(axis=0) >= 2
    names: tuple[str, ...]
    if beliefs.gold:
        names = ("own_wrong", "own_right", "agree_wrong", "agree_right")
        terms = np.stack([own & wrong, own & ~wrong, agree & wrong, agree & ~wrong])
    else:
        names = ("own", "agree")
        terms = np.stack([own, agree])
    signs, cluster = np.unique(d.cluster[keep], return_inverse=True)
    design = calibration.Design(
        d.y[:, keep],
        present[:, keep],
        terms[:, :, keep].astype(np.float64),
        cluster.reshape(-1).astype(int),
        len(signs),
        d.group[keep],
    )
    held, why = _separable(design, names)
    return BeliefDesign(design, names, held, why)


def _separable(d: calibration.Design, names: tuple[str, ...]) -> tuple[np.ndarray, dict[tuple[int, int], str]]:
    """Per judge, the terms its verdicts can tell apart from its leniency and from each other: taken in turn, the
    agreement terms first (the control), each kept where it adds a direction to the ones kept before; one that adds
    none is held at 0. A term no verdict of the judge carries is left to the fit (it pins it at 0 itself)."""
    held = np.full((d.n_judges, d.n_terms), np.nan)
    why: dict[tuple[int, int], str] = {}
    order = [k for k, n in enumerate(names) if n.startswith("agree")] + [k for k, n in enumerate(names) if n.startswith("own")]
    for j in range(d.n_judges):
        x = d.terms[:, j, d.present[j]].T  # (verdicts, K)
        if not len(x):
            continue
        kept = [np.ones(len(x))]
        for k in order:
            column = x[:, k]
            if not column.any():
                continue
            basis = np.stack(kept, axis=1)
            coef, *_ = np.linalg.lstsq(basis, column, rcond=None)
            left = column - basis @ coef
            if float(left @ left) <= COLLINEAR * max(float(column @ column), 1e-300):
                held[j, k] = 0.0
                why[(j, k)] = _why(names[k], names, [i for i in order if i != k and x[:, i].any()], x, k)
            else:
                kept.append(column)
    return held, why


def _why(name: str, names: tuple[str, ...], others: list[int], x: np.ndarray, k: int) -> str:
    if np.all(x[:, k] == 1):
        return "every answer this judge rated here shares its own label, so agreement cannot be told from its leniency"
    if name.startswith("own"):
        return (
            "among this judge's verdicts, an answer of its own family and an answer that shares its own label go "
            "together (every own-family answer agrees with it and no other does, or the reverse), so the two cannot "
            "be told apart"
        )
    return f"{name.replace('_', ' ')} cannot be told apart from the judge's other terms ({', '.join(names[i] for i in others)})"


@dataclass
class BeliefDraws:
    """Per-judge statistics of the full fit (index 0) and of every bootstrap refit."""

    effects: np.ndarray  # (1+B, J, K)
    counts: np.ndarray  # (1+B, J, K): verdicts with each term


def belief_fits(bd: BeliefDesign, scale_free: bool, n_resamples: int, seed: int) -> BeliefDraws:
    """The calibration with the belief terms, refitted on the index's sign resamples (same seed)."""
    held = bd.held if np.isfinite(bd.held).any() else None
    effects, counts = [], []
    for sums, fit in calibration.refits(calibration.Types.of(bd.design), scale_free, n_resamples, seed, fixed=held):
        effects.append(fit.effects)
        counts.append(sums.wx)
    return BeliefDraws(np.concatenate(effects), np.concatenate(counts))


def weighted(draws: BeliefDraws, j: int, terms: list[int]) -> np.ndarray:
    """(1+B,) the terms' effects averaged over the judge's verdicts that carry them."""
    eff = np.nan_to_num(draws.effects[:, j, terms])
    n = draws.counts[:, j, terms]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((eff * n).sum(axis=1) / n.sum(axis=1))


def interval(values: np.ndarray, n_signs: int, n_resamples: int) -> dict[str, float] | None:
    """A t interval from the draws, p floored at 1 / (B + 1) as the index's is."""
    if not np.isfinite(values[0]):
        return None
    iv = t_interval(values[0], values[1:], n_signs)
    if iv is None:
        return None
    return Interval(iv.estimate, iv.se, iv.low, iv.high, max(iv.p, 1.0 / (n_resamples + 1))).as_dict()


def judge_entry(
    source: str | None, items: int, items_wrong: int | None, items_split: int, verdicts: dict[str, int]
) -> dict[str, Any]:
    """One judge's decomposition (the fields of results.JudgeBelief), its estimates and reasons yet to be given: the
    pointwise index's and the pairwise own term's alike."""
    return {
        "source": source,
        "items": items,
        "items_wrong": items_wrong,
        "items_split": items_split,
        "verdicts": verdicts,
        "controlled": None,
        "explained": None,
        "agreement": None,
        "harmful": None,
        "legitimate": None,
        "reason": None,
        "harmful_reason": None,
        "legitimate_reason": None,
    }


def decompose(
    grid: Grid,
    frame: pd.DataFrame,
    lineage: Lineage,
    index: np.ndarray,
    identified: dict[str, bool],
    scale_free: bool,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Per judge: the index with agreement held fixed (`controlled`), how much of the index agreement explains
    (`explained`: index minus controlled, on the same resamples), the judge's shift for answers that share its
    label (`agreement`), and the harmful and legitimate parts; with the reasons where a part is not given.
    `index` (1+B, J) is the index's draws on the grid, `identified` which judges the index identified."""
    reason = no_control(frame)
    out: dict[str, Any] = {"reason": reason, "never_answered": [], "judges": {}}
    if reason is not None:
        return out
    beliefs = judge_beliefs(frame, grid.judges, grid.judge_family, lineage)
    out["gold"] = beliefs.gold
    if beliefs.never:
        out["never_answered"] = list(beliefs.never)
    bd = belief_design(grid, frame, beliefs)
    d = bd.design
    if d.n_answers == 0 or d.n_clusters < 2:
        out["reason"] = "no answer is rated by two judges on items where they answered themselves"
        return out
    draws = belief_fits(bd, scale_free, n_resamples, seed)
    g = d.n_clusters
    same_resamples = g == grid.design.n_clusters  # the same signs: the refits drew the same resamples
    own_terms = [k for k, n in enumerate(bd.names) if n.startswith("own")]
    agree_terms = [k for k, n in enumerate(bd.names) if n.startswith("agree")]
    for j, judge in enumerate(grid.judges):
        entry = judge_entry(
            beliefs.source.get(judge),
            len(beliefs.label.get(judge, {})),
            int(sum(beliefs.wrong.get(judge, {}).values())) if beliefs.gold else None,
            beliefs.split.get(judge, 0),
            {bd.names[k]: int(draws.counts[0, j, k]) for k in range(len(bd.names))},
        )
        out["judges"][judge] = entry
        if judge in beliefs.never:
            entry["reason"] = NEVER_ANSWERED
            continue
        if not identified.get(judge, False):
            entry["reason"] = "the index does not identify this judge (see its reason)"
            continue
        held = [k for k in own_terms if (j, k) in bd.why_held]
        carried = [k for k in own_terms if draws.counts[0, j, k] > 0]
        if not carried:
            entry["reason"] = "none of its own family's answers is on an item where it answered itself"
            continue
        agree = [k for k in agree_terms if (j, k) not in bd.why_held and draws.counts[0, j, k] > 0]
        if agree:
            entry["agreement"] = interval(weighted(draws, j, agree), g, n_resamples)
        if any(k in held for k in carried):
            k = next(k for k in carried if k in held)
            entry["reason"] = bd.why_held[(j, k)]
        else:
            controlled = weighted(draws, j, carried)
            entry["controlled"] = interval(controlled, g, n_resamples)
            if same_resamples and entry["controlled"] is not None:
                entry["explained"] = interval(index[:, j] - controlled, g, n_resamples)
        if beliefs.gold:
            for part, k, when in (("harmful", OWN_WRONG, "wrong"), ("legitimate", OWN_RIGHT, "right")):
                if (j, k) in bd.why_held:
                    entry[f"{part}_reason"] = bd.why_held[(j, k)]
                elif draws.counts[0, j, k] == 0:
                    entry[f"{part}_reason"] = f"its own answer is never {when} on an item its own family answered"
                else:
                    entry[part] = interval(draws.effects[:, j, k], g, n_resamples)
        else:
            entry["harmful_reason"] = entry["legitimate_reason"] = "the table has no gold label, so right and wrong are unknown"
    return out
