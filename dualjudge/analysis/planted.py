"""A simulated verdict table's planted truth (planted.json beside it), so its report can say the data are
simulated and set the planted values beside the estimates. The simulator writes the file
(benchmarks/simulated/make.py); a table from a run or from elsewhere has none."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from dualjudge.analysis.results import Simulation
from dualjudge.errors import DualjudgeError
from dualjudge.rundir import RunDir


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
