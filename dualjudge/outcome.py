"""Outcome states, declared once.

Every model call ends ok, parse_failure (the model answered and the answer is unusable) or error
(transport or engine failure, retried with backoff). Never a default score. ok and parse_failure are
final: a final row is never redone or overwritten. The verdict table adds two states for verdicts no
call produced: not_run (asked for, not done yet) and skipped (the run does not ask for that judge).
"""

from __future__ import annotations

from typing import Literal, get_args

Status = Literal["ok", "parse_failure", "error"]
STATUSES: tuple[str, ...] = get_args(Status)
FINAL: tuple[str, ...] = ("ok", "parse_failure")
TableStatus = Literal["ok", "parse_failure", "error", "not_run", "skipped"]
TABLE_STATUSES: tuple[str, ...] = get_args(TableStatus)
