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


# A line such as "SIGN_TYPE: no_entry", "**SIGN_TYPE:** no_entry" or "SIGN_TYPE: `no_entry`": spaces and markdown
# emphasis around the name and the value are tolerated, nothing fuzzier. Read line by line with str methods, never a
# regular expression over the reply: two spans of spaces side by side in a pattern backtrack, and a reply of a few
# thousand trailing spaces took tens of seconds to parse.
_SPACES, _EMPH_CHARS = " \t", "*_`"
LINE_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,31}$")  # a final line's name: SIGN_TYPE, VERDICT, ...
LABEL_ID = re.compile(r"^[a-z][a-z0-9_]*[a-z0-9]$")  # a label id: snake_case, two characters or more
VALUE_S = 0.5  # how long a task's answer pattern may take to match one value (regex's own timeout)


def _trimmed(part: str) -> str:
    """`part` without the spaces, then the emphasis, then the spaces around it (the same on both ends)."""
    return part.strip(_SPACES).strip(_EMPH_CHARS).strip(_SPACES)


def named_values(text: str, name: str) -> list[str]:
    """The values of the text's `NAME: value` lines, in order, each as its line holds it (trimmed): linear in the
    text's length whatever it holds."""
    out = []
    for line in text.split("\n"):
        head, colon, rest = line.partition(":")
        if colon and name in head and _trimmed(head) == name:
            out.append(_trimmed(rest))
    return out


def matches_whole(pattern: str, value: str) -> bool | None:
    """Whether `value` matches the task's answer pattern whole, or None where that cannot be told within VALUE_S (a
    pattern that backtracks without end on this value, such as a nested quantifier: `(a+)+b` on a run of a's)."""
    import regex

    try:
        return regex.fullmatch(pattern, value, timeout=VALUE_S) is not None
    except TimeoutError:
        return None


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
        for value in reversed(named_values(text, self.name)):
            if self.answer is not None:
                if matches_whole(self.answer, value):  # undecided in time: not read as the answer
                    return value
            elif value in self.ids and LABEL_ID.match(value):
                return value
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
