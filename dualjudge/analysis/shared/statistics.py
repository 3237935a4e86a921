"""Statistics declared in one place: what a statistic computes from the verdict table, and the report section
that shows it. The summary keeps each declared statistic's result under `statistics.NAME` (summary.json), and
report.md prints its section after the checks, so a statistic is one declaration (docs/extending.md), as a
judge kind is (protocol/kinds.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

Computed = dict[str, Any]  # JSON-ready: numbers, text, lists and dicts of them


@dataclass(frozen=True)
class Statistic:
    name: str  # its key in summary.json's `statistics`
    compute: Callable[[pd.DataFrame], Computed]  # from the verdict table (one judge variant's rows)
    section: Callable[[Computed], list[str]]  # its report.md lines (Markdown; names through report/escape.py)


_DECLARED: dict[str, Statistic] = {}


def declare(statistic: Statistic) -> Statistic:
    if statistic.name in _DECLARED:
        raise ValueError(f"a statistic called {statistic.name!r} is declared already")
    _DECLARED[statistic.name] = statistic
    return statistic


def withdraw(name: str) -> None:
    _DECLARED.pop(name, None)


def declared() -> tuple[Statistic, ...]:
    return tuple(_DECLARED.values())


def computed(frame: pd.DataFrame) -> dict[str, Computed]:
    """Every declared statistic of the table, by name."""
    return {s.name: s.compute(frame) for s in declared()}


def sections(results: dict[str, Computed]) -> list[str]:
    """The report lines of every declared statistic the summary holds."""
    lines: list[str] = []
    for s in declared():
        if s.name in results:
            lines += s.section(results[s.name])
    return lines
