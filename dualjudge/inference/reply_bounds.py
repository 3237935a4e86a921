"""The bounds a model's reply must keep before anything is cached or read.

A reply is text a provider controls. Python's own parsers fail outside these bounds in ways that are
not parse failures (RecursionError on deep JSON, ValueError past 4,300 integer digits, UnicodeEncodeError
for a lone UTF-16 surrogate on its way into SQLite, OverflowError for a token count past SQLite's 64-bit
integers), so a reply outside them is refused at the wire as a malformed reply: that request is retried,
then fails as an error that a rerun redoes. A cached reply outside them (cached by an earlier version) is
not used: the request is sent again.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from dualjudge.inference.types import Constraint

MAX_DEPTH = 64  # nesting of a JSON verdict; the verdict schemas need 3
MAX_DIGITS = 40  # digits of one JSON number; a 0-10 score needs 2
MAX_TOKENS = 10**9  # a usage count beyond this is no count


def content_text(content: Any) -> str | None:
    """The reply's message content as text: a string as is, a list of content parts joined (their text), one part
    object ({"type": "text", "text": ...}) as its text; anything else has no text (None), never its repr."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return None


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


_SHAPE_KEYS = ("type", "properties", "required", "additionalProperties", "enum", "items", "const")


def _shape(schema: Any) -> Any:
    """A JSON schema reduced to its shape (types, properties, required keys, enums): what any engine that
    enforces the schema at all keeps. Bounds some engines leave to the model (lengths, patterns, ranges)
    are dropped, so a reply outside only those is the model's answer, read as it is."""
    if isinstance(schema, dict):
        return {
            k: ({p: _shape(s) for p, s in v.items()} if k == "properties" else _shape(v))
            for k, v in schema.items()
            if k in _SHAPE_KEYS
        }
    return schema


@lru_cache(maxsize=64)
def _shape_validator(spec: str) -> Any:
    """A validator of a schema's shape, made once per schema (every verdict request of a kind carries the same)."""
    import jsonschema

    shape = _shape(json.loads(spec))
    return jsonschema.validators.validator_for(shape)(shape)


def constraint_problem(constraint: Constraint | None, text: str | None, finish_reason: object) -> str | None:
    """Why a reply from an endpoint that enforces constraints cannot have been decoded under the request's
    constraint, or None. A reply cut at max_tokens (finish_reason "length") may legitimately stop mid-way:
    that is the model's answer. Any other reply that breaks the shape is the endpoint's fault (a replica
    started without structured outputs, a proxy that drops the field): the request fails there and goes to
    another endpoint, and is never cached as the model's parse failure."""
    if constraint is None or finish_reason == "length":
        return None
    if text is None:
        return "no content for a constrained request"
    if constraint.kind == "regex":
        return None if re.fullmatch(constraint.spec, text) else "the reply does not match the request's regex"
    import jsonschema

    try:
        _shape_validator(constraint.spec).validate(json.loads(text))
    except ValueError:
        return "the reply is not the JSON the request's schema asks for"
    except jsonschema.ValidationError as e:
        return f"the reply breaks the request's JSON schema ({e.message[:120]})"
    return None
