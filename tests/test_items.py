"""Fair to the items (analysis/board/items.py): a system that answered only the easier items is named in a
warning with the size of its advantage, and the common-items ranking, on the items every system answered,
orders the systems by what they are, where the naive mean does not."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dualjudge.analysis.board.leaderboard import leaderboard
from dualjudge.analysis.shared.table import validate
from tests.helpers.designs import verdict_row

JUDGES = (("j_a", "fa"), ("j_b", "fb"), ("j_c", "fc"))
SYSTEMS = {"s_a": ("fa", 0.0), "s_b": ("fb", 0.3), "s_c": ("fc", 0.15)}  # family, true effect on quality


def table(skip_hard_for: str | None, n_signs: int = 12, items: int = 8, seed: int = 1) -> pd.DataFrame:
    """Every item has a difficulty all systems share; `skip_hard_for` answered only the easier half."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_signs):
        for i in range(items):
            ease = rng.normal()
            for system, (family, effect) in SYSTEMS.items():
                if system == skip_hard_for and ease < 0:
                    continue
                quality = ease + effect + rng.normal(0, 0.3)
                for judge, jfam in JUDGES:
                    score = float(np.clip(np.round(5 + 2 * quality + rng.normal(0, 0.5)), 0, 10))
                    rows.append(verdict_row(f"{s}_{i}", f"{600 + s}", system, family, judge, jfam, score, bool(quality > 0)))
    return validate(pd.DataFrame(rows), "constructed")


def _board(frame: pd.DataFrame) -> dict:
    return leaderboard(frame, "overall", n_resamples=100)["system_model"]


def test_a_system_that_answered_only_the_easier_items_is_named_and_compared_on_common_items():
    board = _board(table(skip_hard_for="s_a"))
    named = [w for w in board["warnings"] if "the items it answered are easier" in w]
    assert len(named) == 1 and named[0].startswith("s_a:"), board["warnings"]
    gap = float(named[0].split(" by ")[1].split(" ")[0])
    assert 1.0 < gap < 2.5  # about 2 points x E[ease | ease > 0] = 1.6
    assert board["naive"][0]["group"] == "s_a"  # the naive mean puts the easy-items system first
    assert 0 < board["common_items_n"] < 12 * 8  # the items s_a answered
    assert [r["group"] for r in board["common_items"]] == ["s_b", "s_c", "s_a"]  # what the systems are


def test_systems_that_answered_the_same_items_carry_no_such_warning():
    board = _board(table(skip_hard_for=None))
    assert not [w for w in board["warnings"] if "the items it answered" in w]
    assert board["common_items_n"] == 12 * 8
    naive = {r["group"]: r["estimate"] for r in board["naive"]}
    common = {r["group"]: r["estimate"] for r in board["common_items"]}
    assert common == naive  # on a balanced design the common items are every item


def test_the_ease_gap_is_its_definition_item_by_item():
    """ease_gaps (one pass over the cells) equals the definition computed group by group on a ragged table:
    mean over its items of the others' item means, minus the same mean over every item the others answered."""
    from dualjudge.analysis.board.items import ease_gaps

    rng = np.random.default_rng(3)
    rows = [(f"i{i}", f"g{g}", float(rng.normal())) for i in range(30) for g in range(5) for _ in range(rng.integers(0, 3))]
    rated = pd.DataFrame(rows, columns=["item_id", "group", "_y"])
    gaps = ease_gaps(rated, rated["group"])
    for group in sorted(set(rated["group"])):
        others = rated[rated["group"] != group].groupby("item_id")["_y"].mean()
        mine = set(rated.loc[rated["group"] == group, "item_id"])
        expected = others[others.index.isin(mine)].mean() - others.mean()
        assert abs(gaps[group] - expected) < 1e-12, group
