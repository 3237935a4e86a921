"""The bounds a model's reply must keep before anything is cached or read.

A reply is text a provider controls. Python's own parsers fail outside these bounds in ways that are
not parse failures (RecursionError on deep JSON, ValueError past 4,300 integer digits, UnicodeEncodeError
for a lone UTF-16 surrogate on its way into SQLite, OverflowError for a token count past SQLite's 64-bit
integers), so a reply outside them is refused at the wire as a malformed reply: that request is retried,
then fails as an error that a rerun redoes. A cached reply outside them (cached by an earlier version) is
not used: the request is sent again.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 64  # nesting of a JSON verdict; the verdict schemas need 3
MAX_DIGITS = 40  # digits of one JSON number; a 0-10 score needs 2
MAX_TOKENS = 10**9  # a usage count beyond this is no count


def content_text(content: Any) -> str | None:
    """The reply's message content as text: a string as is, a list of content parts joined (their text)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


def _json_problem(text: str) -> str | None:
    depth, deepest, digits, longest = 0, 0, 0, 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch.isdigit():
            digits += 1
            longest = max(longest, digits)
            continue
        digits = 0
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_DEPTH:
        return f"JSON nested {deepest} deep (at most {MAX_DEPTH})"
    if longest > MAX_DIGITS:
        return f"a JSON number of {longest} digits (at most {MAX_DIGITS})"
    return None


def text_problem(text: str | None, json_expected: bool) -> str | None:
    """Why a reply's text is outside the bounds, or None."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "text that is not valid Unicode (a lone UTF-16 surrogate)"
    return _json_problem(text) if json_expected else None


def count_problem(name: str, value: Any) -> str | None:
    """Why a usage count is outside the bounds (absent is fine), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        shown = str(value)
        return f"usage.{name} = {shown[:20]}{'...' if len(shown) > 20 else ''} (a count from 0 to {MAX_TOKENS:,})"
    return None
