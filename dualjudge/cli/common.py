"""Shared pieces of the command layer: consoles and argument parsing helpers."""

from __future__ import annotations

import sys
from typing import Optional

from rich.console import Console

from dualjudge.errors import DualjudgeError

# Tables stay readable when output goes to a file or a CI log (rich would otherwise assume 80 columns).
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)


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
