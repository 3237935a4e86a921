"""Which items each system answered: a comparison on the items every system answered, and a warning
when a system's answered items are easier than the others'.

A system that answered mostly the easier items gains in every mean of its verdicts (naive or
calibrated) without being better. How easy an item is, is read from the other systems' verdicts on it:
for system s, m_(-s)(i) is the mean verdict the other systems' answers to item i received. The ease gap
of s is the mean of m_(-s) over the items s answered minus its mean over every item the others
answered; a system that answered every item has a gap of exactly zero. The common-items ranking is the
mean verdict per system on the items every system answered (none: no such ranking)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dualjudge.analysis.shared.choices import Outcome

# an ease gap at least this large (in the outcome's units) is named in a warning
EASE_GAP = {"overall": 0.2, "equivalent": 0.05}


def _codes(values: pd.Series | pd.Categorical | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values)
    return np.asarray(codes), np.asarray(uniques, dtype=object)


def ease_gaps(rated: pd.DataFrame, labels: pd.Series | pd.Categorical | np.ndarray) -> dict[str, float]:
    """Per group: the ease gap of the items it answered (see the module docstring). `rated`: rows with a
    verdict value `_y` and an `item_id`; `labels`: each row's group. One pass over (item, group) cells,
    whatever the number of groups; items and groups are hashed once and handled as codes."""
    item, _ = _codes(rated["item_id"])
    group, names = _codes(labels)
    frame = pd.DataFrame({"item": item, "group": group, "y": rated["_y"].to_numpy(dtype=float)})
    per = frame.groupby(["item", "group"])["y"].agg(["sum", "count"]).reset_index()
    totals = per.groupby("item")[["sum", "count"]].sum()
    everyone = totals["sum"] / totals["count"]  # an item's ease for a group that did not answer it
    per["others_n"] = per["item"].map(totals["count"]) - per["count"]
    per["everyone"] = per["item"].map(everyone)
    per["ease"] = (per["item"].map(totals["sum"]) - per["sum"]) / per["others_n"].where(per["others_n"] > 0)
    seen = per[per["others_n"] > 0]  # items another group answered too
    answered = seen.groupby("group")["ease"].mean()
    # over every item the others answered: the items it did not answer at everyone's mean, its own at the others'
    total = float(everyone.sum()) - per.groupby("group")["everyone"].sum() + seen.groupby("group")["ease"].sum()
    items = len(totals) - per[per["others_n"] == 0].groupby("group").size().reindex(answered.index, fill_value=0)
    gaps = answered - total.reindex(answered.index) / items
    return {str(names[g]): float(v) for g, v in gaps.items() if pd.notna(v)}


def common_items(rated: pd.DataFrame, labels: pd.Series | pd.Categorical | np.ndarray, groups: list[str]) -> pd.Series:
    """Which rows are about an item every group answered (the common-items comparison's rows)."""
    item, _ = _codes(rated["item_id"])
    group, _ = _codes(labels)
    answered = pd.DataFrame({"item": item, "group": group}).drop_duplicates()
    counts = answered.groupby("item")["group"].nunique()
    full = counts.index[counts == len(groups)].to_numpy()
    return pd.Series(np.isin(item, full), index=rated.index)


def ease_warnings(gaps: dict[str, float], outcome: Outcome, n_common: int) -> list[str]:
    """A warning per group whose answered items are easier (or harder) than the others' by EASE_GAP or more."""
    unit = "points" if outcome == "overall" else "in probability"
    out = []
    for group, gap in sorted(gaps.items(), key=lambda g: -abs(g[1])):
        if abs(gap) >= EASE_GAP[outcome]:
            word = "easier" if gap > 0 else "harder"
            compare = (
                f"compare the systems on the {n_common} items every system answered (common_items)"
                if n_common
                else "no item was answered by every system, so no common-items comparison can be made"
            )
            out.append(
                f"{group}: the items it answered are {word} than the others' by {abs(gap):.2f} {unit} (the other "
                f"systems' mean {outcome} on them against on every item), which its scores carry as if it "
                f"were {'better' if gap > 0 else 'worse'}; {compare}"
            )
    return out
