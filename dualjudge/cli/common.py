"""Shared pieces of the command layer: consoles and argument parsing helpers."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from dualjudge.errors import DualjudgeError

# Tables stay readable when output goes to a file or a CI log (rich would otherwise assume 80 columns).
# No markup: what the project prints holds names and data ("[gpu:0]", a task's "[/]"), never rich tags; a
# style is given as a Text's style (`styled`).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character (an escape sequence's ESC, a carriage return, a bidirectional
    override) shown as its code, so data printed to a terminal can neither colour, move, rewrite nor link it."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


class PlainConsole(Console):
    """A console that reads no markup and prints no control character from what it is given (`printable`):
    every string it renders, table cells and error lines included, is data, not terminal instructions."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


console = PlainConsole(width=None if sys.stdout.isatty() else 140, markup=False)
err_console = PlainConsole(stderr=True, width=None if sys.stderr.isatty() else 140, markup=False)


def styled(text: str, style: str) -> Text:
    """`text` as it is (control characters shown as codes), in a style (a table cell, a line)."""
    return Text(printable(text), style=style)


def csv_list(value: Optional[str]) -> Optional[list[str]]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def floats(value: Optional[str], option: str) -> Optional[list[float]]:
    items = csv_list(value)
    if items is None:
        return None
    try:
        return [float(v) for v in items]
    except ValueError:
        raise DualjudgeError(f"{option} takes numbers separated by commas, got {value!r}") from None


# Two keys of a table declared to name one model, flagged on the leaderboard (analysis/board/duplicates.py).
Alias = Annotated[
    Optional[list[str]],
    typer.Option("--alias", help="KEY=KEY: two keys of the table that name one model (repeatable); flagged on the board."),
]


def aliases(values: Optional[list[str]]) -> tuple[tuple[str, str], ...]:
    out = []
    for v in values or []:
        a, sep, b = v.partition("=")
        if not sep or not a.strip() or not b.strip():
            raise DualjudgeError(f"--alias {v!r}: give two keys as KEY=KEY")
        out.append((a.strip(), b.strip()))
    return tuple(out)


# The quality scale's maximum: one option, the same for every command that reads a verdict table.
ScaleMax = Annotated[
    float,
    typer.Option(
        "--scale-max", help="The quality scale's maximum (the paper: 10; e.g. 5 for a 1-5 Likert table, 100 for percentages)."
    ),
]


@contextmanager
def stage_progress(what: str) -> Iterator[Callable[[str], None] | None]:
    """A progress callback for work in named parts: on a terminal, a spinner naming the part and the time
    so far; elsewhere none (stderr stays the one line an error is)."""
    if not err_console.is_terminal:
        yield None
        return
    started = time.monotonic()
    with err_console.status(what) as status:
        yield lambda part: status.update(f"{what}: {part} ({time.monotonic() - started:.0f} s)")
