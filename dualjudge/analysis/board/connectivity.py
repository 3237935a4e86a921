"""Which parts of a verdict table can be compared at all: the connected blocks of its judge-system-item graph.

A verdict links its judge, its system model and its item. Two blocks that share no judge, no system and no
item have nothing in common to put their scores on one scale: a calibrated ranking across them is not
identified (whatever a fit returns, the offset between the blocks is arbitrary), and a plain mean compares
different judges on different questions. So the leaderboard ranks within each block, never across, and the
report says so first. (The calibration itself also normalises quality within each block of judges linked by
shared answers: calibration.blocks.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

MAX_NAMED = 6  # judges named in a block's description before "and N more"


@dataclass(frozen=True)
class Block:
    """One connected block of a table: its rows, judges and systems, largest block first."""

    index: int  # 1, 2, ... largest first
    rows: np.ndarray  # bool mask over the table's rows
    judges: list[str]
    systems: list[str]

    @property
    def name(self) -> str:
        return f"block {self.index}"

    def words(self) -> str:
        shown = ", ".join(self.judges[:MAX_NAMED]) + (
            f" and {len(self.judges) - MAX_NAMED} more" if len(self.judges) > MAX_NAMED else ""
        )
        return (
            f"{self.name}: {len(self.judges)} judges ({shown}), {len(self.systems)} system models, {int(self.rows.sum())} verdicts"
        )


def blocks(frame: pd.DataFrame) -> list[Block]:
    """The table's connected blocks, largest (most verdicts) first; one block when everything connects."""
    if frame.empty:
        return []
    parts = [pd.factorize(frame[c].astype(str))[0] for c in ("judge_model", "system_model", "item_id")]
    offsets = np.cumsum([0] + [int(p.max()) + 1 for p in parts])
    judge, system, item = (p + o for p, o in zip(parts, offsets))
    n = int(offsets[-1])
    graph = coo_matrix((np.ones(2 * len(judge)), (np.r_[judge, judge], np.r_[system, item])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    row_label = labels[judge]
    order = sorted(np.unique(row_label), key=lambda lab: (-int((row_label == lab).sum()), int(lab)))
    out = []
    for i, lab in enumerate(order, start=1):
        mask = row_label == lab
        sub = frame[mask]
        out.append(
            Block(i, mask, sorted(sub["judge_model"].astype(str).unique()), sorted(sub["system_model"].astype(str).unique()))
        )
    return out
