"""Markdown formatting shared by the report's sections."""

from __future__ import annotations

from typing import Any

from dualjudge.report.escape import table_cell


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
    lines += ["| " + " | ".join(table_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def rate(x: float | None) -> str:
    """A proportion as a percentage, with enough precision for small ones (0.48%, not 0.00)."""
    if x is None or x != x:
        return "-"
    pct = 100 * float(x)
    if pct == 0 or pct >= 1:
        return f"{pct:.1f}%"
    return f"{pct:.2g}%"


def count_rate(count: int, rate_value: float | None, interval: list[float] | None = None) -> str:
    text = f"{count} ({rate(rate_value)})"
    return text + (f" [{rate(interval[0])}, {rate(interval[1])}]" if interval else "")


def pvalue(p: float | None) -> str:
    """p-values as read: 1.4e-06, not 0.0000."""
    if p is None or p != p:
        return "-"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}" if p < 0.01 else f"{p:.3f}"
