"""The report in a task's words. Its sentences are written for the paper's task (signs, the SIGN_TYPE
line); a run of another task renames the bootstrap's unit (a sign becomes the task's group or item)
and the final line (SIGN_TYPE becomes VERDICT, or "label" for a task without one)."""

from __future__ import annotations

import re

from dualjudge.analysis.results import TaskWords
from dualjudge.tasks.task import plural

_PLURAL = re.compile(r"\b([Ss])igns\b")
_SINGULAR = re.compile(r"\b([Ss])ign\b")
_LABEL = re.compile(r"\bSIGN_TYPE\b")


def reword(text: str, task: TaskWords | None) -> str:
    """`text` with its sign words in the task's (unchanged for uk-signs, or no task)."""
    if task is None:
        return text
    if task.unit != "sign":
        unit, units = task.unit, plural(task.unit)
        text = _PLURAL.sub(lambda m: _case(units, m.group(1)), text)
        text = _SINGULAR.sub(lambda m: _case(unit, m.group(1)), text)
    return _LABEL.sub(task.label or "label", text)


def _case(word: str, first: str) -> str:
    return word[0].upper() + word[1:] if first.isupper() else word
