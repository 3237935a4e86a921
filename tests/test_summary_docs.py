"""docs/summary.md against the types summary.json is validated with (analysis/shared/results.py): every key a
documented object has is in its table, and every key a table names is one the object has."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from dualjudge.analysis.shared.results import (
    Clarification,
    JudgeSelfPreference,
    Leaderboard,
    OutcomeSelfPreference,
    PairwiseAnalysis,
    PairwiseJudge,
    SelfPreference,
    Summary,
    Systems,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "summary.md"
# the doc's tables, in order, and the type each documents
TABLES: tuple[type[BaseModel], ...] = (
    Summary,
    SelfPreference,
    OutcomeSelfPreference,
    JudgeSelfPreference,
    Systems,
    Leaderboard,
    Clarification,
    PairwiseAnalysis,
    PairwiseJudge,
)


def documented() -> list[set[str]]:
    """The keys each table of the doc names in its first column (`a`, `b` in backticks)."""
    tables: list[set[str]] = []
    inside = False
    for line in DOC.read_text().splitlines():
        if line.startswith("| key |"):
            tables.append(set())
            inside = True
        elif inside and line.startswith("|") and not line.startswith("|---"):
            tables[-1] |= set(re.findall(r"`([^`]+)`", line.split("|")[1]))
        elif not line.startswith("|"):
            inside = False
    return tables


def test_every_key_of_summary_json_is_documented_and_every_documented_key_exists():
    tables = documented()
    assert len(tables) == len(TABLES)
    gaps = {}
    for keys, model in zip(tables, TABLES):
        fields = set(model.model_fields)
        if keys != fields:
            gaps[model.__name__] = {"undocumented": sorted(fields - keys), "not a key": sorted(keys - fields)}
    assert gaps == {}
