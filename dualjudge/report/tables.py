"""Markdown formatting shared by the report's sections."""

from __future__ import annotations

from typing import Any


def num(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    return f"{float(x):.{digits}f}"


def ci(interval: Any, digits: int = 2) -> str:
    return "-" if not interval else f"[{num(interval[0], digits)}, {num(interval[1], digits)}]"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
