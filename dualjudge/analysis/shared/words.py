"""The words the analysis and the report say a task's things with: the bootstrap's unit (a sign, a group, an
item) and the answers' final line (SIGN_TYPE, VERDICT, or none). They come from the task a table was made on
(task.json beside it), never from rewriting text: a sentence is written with `words()` where it is made, and a
name or a text of the user's is never touched.

The words are set for the duration of an analysis or a report (`speaking`), and read where a sentence is made;
without a task they are the paper's (uk-signs).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from dualjudge.analysis.shared.results import TaskWords
from dualjudge.tasks.task import plural

PAPER_LABEL = "SIGN_TYPE"


@dataclass(frozen=True)
class Words:
    unit: str = "sign"  # the bootstrap's cluster, in words
    label: str = PAPER_LABEL  # the answers' final line, in words ("label" for a task whose answers end freely)
    paper: bool = True  # the paper's task (uk-signs): its sections keep the paper's names (the Section 3 audit)
    noun: str = "variant"  # what one row's item is (a sign's variant; a task's item, problem, picture)
    exact: bool = False  # the final line is a value (a number) scored by exact match, not a label identified

    @property
    def units(self) -> str:
        return plural(self.unit)

    @property
    def Units(self) -> str:  # noqa: N802 (a sentence's first word)
        return self.units[0].upper() + self.units[1:]


_WORDS: ContextVar[Words | None] = ContextVar("words", default=None)
PAPER = Words()


def words() -> Words:
    """The words of the table being analysed or reported (the paper's outside `speaking`)."""
    return _WORDS.get() or PAPER


def words_for(task: TaskWords | None, absent: Sequence[str] = ()) -> Words:
    """A table's words: its task's (task.json), the paper's for a uk-signs run, or a foreign table's (no sign_code
    column: each item is its own unit; no task: no final line of its own)."""
    if task is not None:
        return Words(unit=task.unit, label=task.label or "label", paper=False, noun=task.noun, exact=task.answer is not None)
    if "sign_code" in absent:
        return Words(unit="item", noun="item")
    return Words()


@contextmanager
def speaking(w: Words) -> Iterator[Words]:
    """Analyse or report in these words until the block ends."""
    token = _WORDS.set(w)
    try:
        yield w
    finally:
        _WORDS.reset(token)
