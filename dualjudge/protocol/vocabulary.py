"""The SIGN_TYPE vocabulary, the regex constrained generation enforces, and the paper's parse; any
task's final line (`VERDICT: allowed`, ...) is constrained and parsed the same way (FinalLine)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_FREE_CHARS = 600


def sign_types() -> tuple[str, ...]:
    """The 25 category ids of uk-signs (read on first use, not at import: the task is built on the protocol)."""
    from dualjudge.tasks.signs import uk_signs

    return uk_signs().label_ids


def __getattr__(name: str) -> object:  # `SIGN_TYPES`, computed when first asked for
    if name == "SIGN_TYPES":
        return sign_types()
    raise AttributeError(name)


# A line such as "SIGN_TYPE: no_entry", "**SIGN_TYPE:** no_entry" or "SIGN_TYPE: `no_entry`".
_EMPH = r"[*_`]*"
LINE_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,31}$")  # a final line's name: SIGN_TYPE, VERDICT, ...
LABEL_ID = re.compile(r"^[a-z][a-z0-9_]*[a-z0-9]$")  # a label id: snake_case, two characters or more


@lru_cache(maxsize=16)
def _line(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"^[ \t]*{_EMPH}[ \t]*{re.escape(name)}[ \t]*{_EMPH}[ \t]*:[ \t]*{_EMPH}[ \t]*"
        rf"([a-z][a-z0-9_]*[a-z0-9])[ \t]*{_EMPH}[ \t]*$",
        re.MULTILINE,
    )


@lru_cache(maxsize=16)
def _value_line(name: str) -> re.Pattern[str]:
    """A `NAME: value` line, the value being the rest of the line (emphasis and spaces around it tolerated)."""
    return re.compile(
        rf"^[ \t]*{_EMPH}[ \t]*{re.escape(name)}[ \t]*{_EMPH}[ \t]*:[ \t]*{_EMPH}[ \t]*(.*?)[ \t]*{_EMPH}[ \t]*$",
        re.MULTILINE,
    )


@dataclass(frozen=True)
class FinalLine:
    """The line an answer must end with: `NAME: <id>` with the id one of `ids`, or, for a task whose answers are
    values (GSM8K's numbers), `NAME: <value>` with the value matching the regular expression `answer`."""

    name: str
    ids: tuple[str, ...]
    answer: str | None = None

    def pattern(self, max_free_chars: int = DEFAULT_FREE_CHARS) -> str:
        """Free printable text of bounded length, then the final line (see sign_type_pattern)."""
        if max_free_chars < 0:
            raise ValueError("max_free_chars must be >= 0")
        if self.answer is not None:
            return rf"[ -~\n]{{0,{max_free_chars}}}\n{self.name}: ({self.answer})"
        return _pattern(max_free_chars, self.ids, self.name)

    def parse(self, text: str | None) -> str | None:
        """The last line-anchored `NAME:` line whose value is exactly one of the ids (or matches `answer` whole),
        else None."""
        if not text:
            return None
        if self.answer is not None:
            value = re.compile(self.answer)
            for match in reversed(list(_value_line(self.name).finditer(text))):
                if value.fullmatch(match.group(1)):
                    return match.group(1)
            return None
        for match in reversed(list(_line(self.name).finditer(text))):
            if match.group(1) in self.ids:
                return match.group(1)
        return None


def sign_type_line() -> FinalLine:
    """uk-signs' final line: SIGN_TYPE over the catalogue's categories."""
    return FinalLine("SIGN_TYPE", sign_types())


def sign_type_pattern(max_free_chars: int = DEFAULT_FREE_CHARS) -> str:
    """Free printable text of bounded length, then a final line `SIGN_TYPE: <one of the 25 ids>`.

    The bound makes the constrained output always finish within max_tokens (at worst one token per
    character); the printable class keeps small or random models from emitting invalid UTF-8. The
    pattern uses no lookarounds or `\\b`, so it compiles in xgrammar, llguidance and outlines_core.
    """
    return sign_type_line().pattern(max_free_chars)


@lru_cache(maxsize=16)
def _pattern(max_free_chars: int, ids: tuple[str, ...], name: str) -> str:
    alternatives = "|".join(sorted(ids, key=lambda s: (-len(s), s)))
    return rf"[ -~\n]{{0,{max_free_chars}}}\n{name}: ({alternatives})"


def parse_sign_type(text: str | None) -> str | None:
    """The last line-anchored SIGN_TYPE line whose value is exactly one of the ids, else None.

    Surrounding whitespace and markdown emphasis are tolerated; nothing fuzzier (no case folding,
    no near-miss ids, no trailing words).
    """
    return sign_type_line().parse(text)
