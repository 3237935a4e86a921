"""Links from the report to the run explorer (report/explorer.py), filtered to the rows behind a number."""

from __future__ import annotations

from urllib.parse import quote

from dualjudge.report.escape import plain
from dualjudge.rundir import RunDir

EXPLORER = RunDir.EXPLORER


def explorer_link(**state: object) -> str:
    """A link to the explorer with these filters set (names and values as its controls take them; a name
    the report shows escaped is taken back as it was)."""
    parts = [f"{k}={quote(plain(str(v)), safe='')}" for k, v in state.items() if v is not None]
    return f"{EXPLORER}#{'&'.join(parts)}"


def linked(text: str, on: bool, **state: object) -> str:
    """`text` as a Markdown link to the explorer with these filters set, when `on` (a run directory)."""
    return f"[{text}]({explorer_link(**state)})" if on else text


def visibility_key(v: str | float) -> str:
    """A visibility as the explorer's control names it (1.0 -> "1", 0.3 -> "0.3", as JavaScript prints it)."""
    return f"{float(v):g}"
