"""What a table brings beside it. planted.json: the truth a simulator planted, so the report says the data are
simulated and sets the planted values beside the estimates (benchmarks/simulated/make.py writes it; a table from a
run or from elsewhere has none). task.json: the task of a run of a task other than uk-signs, in its own words."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from dualjudge.analysis.shared.results import Simulation, TaskWords
from dualjudge.errors import DualjudgeError
from dualjudge.rundir import RunDir


def task_near(table: Path) -> TaskWords | None:
    """The task beside a run's table (task.json; none for uk-signs), or None; a damaged file is one line."""
    path = RunDir(table.parent).task
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return TaskWords.model_validate({k: data.get(k) for k in TaskWords.model_fields})
    except (OSError, ValueError, ValidationError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DualjudgeError(f"{path}: unreadable task record ({first}); write it again with `dualjudge export RUN`") from None


def references_near(table: Path) -> dict[str, tuple[str, str]] | None:
    """A task's gold by item (caption, reference), from task.json beside the table; None for uk-signs."""
    path = RunDir(table.parent).task
    if not path.is_file():
        return None
    try:
        items = json.loads(path.read_text())["items"]
        return {str(i["id"]): (str(i.get("caption") or ""), str(i["reference"])) for i in items}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DualjudgeError(f"{path}: unreadable task record ({e}); write it again with `dualjudge export RUN`") from None


def planted_near(table: Path) -> Simulation | None:
    """The planted truth beside the table, or None; a damaged file is a one-line error (a simulated table
    must never be reported without its label)."""
    path = RunDir(table.parent).planted
    if not path.is_file():
        return None
    try:
        return Simulation.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError, ValidationError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DualjudgeError(
            f"{path}: unreadable planted truth ({first}); remove it or write it again (python benchmarks/simulated/make.py)"
        ) from None
