"""The SIGN_TYPE vocabulary, the regex constrained generation enforces, and the paper's parse."""

from __future__ import annotations

import re
from functools import lru_cache

from dualjudge.testbed.catalogue import default_catalogue

DEFAULT_FREE_CHARS = 600


def sign_types() -> tuple[str, ...]:
    """The 25 category ids, from the catalogue in use (read on first use, not at import)."""
    return default_catalogue().category_ids


def __getattr__(name: str) -> object:  # `SIGN_TYPES`, computed when first asked for
    if name == "SIGN_TYPES":
        return sign_types()
    raise AttributeError(name)


# A line such as "SIGN_TYPE: no_entry", "**SIGN_TYPE:** no_entry" or "SIGN_TYPE: `no_entry`".
_EMPH = r"[*_`]*"
_LINE = re.compile(
    rf"^[ \t]*{_EMPH}[ \t]*SIGN_TYPE[ \t]*{_EMPH}[ \t]*:[ \t]*{_EMPH}[ \t]*"
    rf"([a-z][a-z_]*[a-z])[ \t]*{_EMPH}[ \t]*$",
    re.MULTILINE,
)


def sign_type_pattern(max_free_chars: int = DEFAULT_FREE_CHARS) -> str:
    """Free printable text of bounded length, then a final line `SIGN_TYPE: <one of the 25 ids>`.

    The bound makes the constrained output always finish within max_tokens (at worst one token per
    character); the printable class keeps small or random models from emitting invalid UTF-8. The
    pattern uses no lookarounds or `\\b`, so it compiles in xgrammar, llguidance and outlines_core.
    """
    if max_free_chars < 0:
        raise ValueError("max_free_chars must be >= 0")
    return _pattern(max_free_chars, sign_types())


@lru_cache(maxsize=16)
def _pattern(max_free_chars: int, ids: tuple[str, ...]) -> str:
    alternatives = "|".join(sorted(ids, key=lambda s: (-len(s), s)))
    return rf"[ -~\n]{{0,{max_free_chars}}}\nSIGN_TYPE: ({alternatives})"


def parse_sign_type(text: str | None) -> str | None:
    """The last line-anchored SIGN_TYPE line whose value is exactly one of the ids, else None.

    Surrounding whitespace and markdown emphasis are tolerated; nothing fuzzier (no case folding,
    no near-miss ids, no trailing words).
    """
    if not text:
        return None
    ids = sign_types()
    for match in reversed(list(_LINE.finditer(text))):
        if match.group(1) in ids:
            return match.group(1)
    return None
