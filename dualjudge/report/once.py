"""Each thing said once: a reason that several judges or sections share is stated where it first appears and
referred to after ("reason 2, above"), so that a report of two judges does not print one sentence twenty times.

Candidates are the summary's own long explanations (a `reason`, a bound's `why`, a warning), as the report
shows them; only those the report prints more than once are numbered.
"""

from __future__ import annotations

import re
from typing import Any

MIN_CHARS = 60  # shorter texts are names and numbers, cheaper to repeat than to refer to
KEYS = ("reason", "why", "warnings", "judges", "did_reason")


def explanations(data: Any, key: str = "") -> set[str]:
    """Every long text under an explaining key of the summary's dump."""
    out: set[str] = set()
    if isinstance(data, dict):
        for k, v in data.items():
            out |= explanations(v, k if k in KEYS else key)
    elif isinstance(data, list):
        for v in data:
            out |= explanations(v, key)
    elif isinstance(data, str) and key and len(data) >= MIN_CHARS:
        out.add(data)
    return out


def once(md: str, candidates: set[str]) -> str:
    """`md` with every candidate printed more than once kept at its first place, numbered, and referred to after.
    Longer texts first: a reason that quotes another is referred to whole."""
    n = 0
    for text in sorted(candidates, key=lambda t: (-len(t), t)):
        first = md.find(text)
        if first < 0 or md.find(text, first + len(text)) < 0:
            continue
        n += 1
        head, tail = md[: first + len(text)], md[first + len(text) :]
        md = head + f" (reason {n})" + tail.replace(text, f"reason {n}, above")
    return md


def unfold(md: str, candidates: set[str]) -> str:
    """The text `once` made from `md`, with every reference replaced by what it refers to: what a reader who
    follows each "reason N, above" reads. Used to check that saying things once lost none of them."""
    numbered: dict[str, str] = {}
    while True:  # a numbered text may hold references itself: it is found once they are followed
        for text in candidates:
            for found in re.finditer(re.escape(text) + r" \(reason (\d+)\)", md):
                if len(text) > len(numbered.get(found.group(1), "")):  # the whole text, not a suffix of it
                    numbered[found.group(1)] = text
        followed = re.sub(r"reason (\d+), above", lambda m: numbered.get(m.group(1), m.group(0)), md)
        if followed == md:
            return re.sub(r" \(reason \d+\)", "", md)
        md = followed
