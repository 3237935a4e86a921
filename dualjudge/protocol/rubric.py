"""The rubric of the rubric judge variant: named clauses of the task, each scored before a verdict.

A rubric is a TOML file (`prompts/rubrics/rubric.toml` is the shipped one): a name and a list of clauses,
each an `id` and a `text` that carries its own score bands ("2: ...; 1: ...; 0: ..."). The rubric
judges score every clause in the JSON schema before they conclude: the quality judge 0-2 per clause
then the three axis scores; the equivalence judge whether each clause matches the reference, then
its decision; the pairwise judge each clause for both responses, then the winner. A rewritten
rubric (`dualjudge rubric clarify`) keeps the ids and the bands; `check_rewrite` says what breaks.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dualjudge.errors import DualjudgeError
from dualjudge.paths import project_root

CLAUSE_ID = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
RESERVED = frozenset({"reasoning", "accuracy", "completeness", "relevance", "overall", "equivalent", "winner"})
BANDS = ("2:", "1:", "0:")
MAX_CLAUSE_CHARS = 600


@dataclass(frozen=True)
class Clause:
    id: str
    text: str


@dataclass(frozen=True)
class Rubric:
    name: str
    clauses: tuple[Clause, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.clauses)

    @property
    def sha256(self) -> str:
        """The hash of what a judge is shown (the clause ids and texts, in order; not the name)."""
        return hashlib.sha256(self.block().encode()).hexdigest()

    def block(self) -> str:
        """The clauses as the judge prompt lists them."""
        return "\n".join(f"- {c.id}: {c.text}" for c in self.clauses)

    def text_of(self, clause_id: str) -> str:
        return next(c.text for c in self.clauses if c.id == clause_id)

    def with_texts(self, name: str, texts: dict[str, str]) -> Rubric:
        """This rubric with some clauses' texts replaced (ids and order kept)."""
        return Rubric(name, tuple(Clause(c.id, texts.get(c.id, c.text)) for c in self.clauses))

    def to_toml(self) -> str:
        def quoted(text: str) -> str:
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'

        parts = [f"name = {quoted(self.name)}"]
        for c in self.clauses:
            parts.append(f"\n[[clauses]]\nid = {quoted(c.id)}\ntext = {quoted(c.text)}")
        return "\n".join(parts) + "\n"


def band_problem(text: str) -> str | None:
    """Why a clause text does not end in its score bands "2: ...; 1: ...; 0: ..." (in that order), or None.
    The last "0:" and the last "1:" and "2:" before it are the bands, so the clause's own words may hold
    such marks too."""
    p0 = text.rfind("0:")
    p1 = text.rfind("1:", 0, max(p0, 0))
    p2 = text.rfind("2:", 0, max(p1, 0))
    if min(p0, p1, p2) < 0:
        return f"the score bands {', '.join(BANDS)} are not all there in that order"
    return None


UNBANDED = " 2: fully met; 1: partly met; 0: not met"  # the bands of an item's criterion written without them


def item_rubric(value: object, source: str) -> Rubric | None:
    """An item's own rubric (a `rubric` column): a list of criteria, or a text of one criterion a line; each a clause
    (c1, c2, ...), given the bands 2/1/0 where it has none. None where the item has none; one line where a
    criterion is empty or too long."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        texts = [line.strip() for line in value.splitlines() if line.strip()]
    elif isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        listed = value.tolist() if hasattr(value, "tolist") else value  # a Parquet list arrives as an array
        raw: list[object] = list(listed) if isinstance(listed, (list, tuple)) else [listed]
        strings = [t for t in raw if isinstance(t, str)]
        if len(strings) != len(raw):
            raise DualjudgeError(f"{source}: column 'rubric' holds a list with something other than text in it")
        texts = [t.strip() for t in strings if t.strip()]
    else:
        raise DualjudgeError(f"{source}: column 'rubric' holds a {type(value).__name__}; a list of criteria or a text is wanted")
    if not texts:
        return None
    clauses = []
    for n, body in enumerate(texts, 1):
        full = body if band_problem(body) is None else body.rstrip(". ") + "." + UNBANDED
        if len(full) > MAX_CLAUSE_CHARS:
            raise DualjudgeError(f"{source}: rubric criterion {n} is longer than {MAX_CLAUSE_CHARS} characters")
        clauses.append(Clause(f"c{n}", full))
    return Rubric("item", tuple(clauses))


def parse_rubric(text: str, source: str) -> Rubric:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise DualjudgeError(f"{source}: malformed rubric ({e})") from None
    if (
        set(data) - {"name", "clauses"}
        or not isinstance(data.get("name"), str)
        or not isinstance(data.get("clauses"), list)
        or not data["clauses"]
    ):
        raise DualjudgeError(f"{source}: a rubric is a name and a non-empty list of [[clauses]] (id, text)")
    clauses = []
    for i, raw in enumerate(data["clauses"]):
        if not isinstance(raw, dict) or set(raw) != {"id", "text"} or not all(isinstance(v, str) for v in raw.values()):
            raise DualjudgeError(f"{source}: clause {i + 1} must have exactly an id and a text")
        cid, body = raw["id"], raw["text"].strip()
        if not CLAUSE_ID.match(cid) or cid in RESERVED:
            raise DualjudgeError(
                f"{source}: clause id {cid!r} must be a lower-case name and not one of {', '.join(sorted(RESERVED))}"
            )
        problem = band_problem(body)
        if problem or len(body) > MAX_CLAUSE_CHARS:
            raise DualjudgeError(f"{source}: clause {cid}: {problem or f'longer than {MAX_CLAUSE_CHARS} characters'}")
        clauses.append(Clause(cid, body))
    ids = [c.id for c in clauses]
    if len(set(ids)) != len(ids):
        raise DualjudgeError(f"{source}: clause ids repeat")
    return Rubric(data["name"], tuple(clauses))


@lru_cache(maxsize=16)
def _load(path: Path, mtime_ns: int) -> Rubric:
    return parse_rubric(path.read_text(encoding="utf-8"), str(path))


def load_rubric(path: Path | None = None) -> Rubric:
    """A rubric file; the shipped one (prompts/rubrics/rubric.toml) by default."""
    path = path or project_root() / "prompts" / "rubrics" / "rubric.toml"
    try:
        return _load(path, path.stat().st_mtime_ns)
    except FileNotFoundError:
        raise DualjudgeError(f"{path}: rubric file not found") from None
    except UnicodeDecodeError:
        raise DualjudgeError(f"{path}: rubric file is not UTF-8 text") from None


def check_rewrite(original: Rubric, rewritten: dict[str, str], allowed: set[str]) -> list[str]:
    """What is wrong with an editor's rewrite of some clauses: only the allowed ids, each present,
    non-empty, within length, with its score bands kept. Empty when the rewrite can be used."""
    problems = []
    unknown = sorted(set(rewritten) - allowed)
    if unknown:
        problems.append(f"rewrote clauses it was not given: {', '.join(unknown)}")
    for cid in sorted(allowed):
        text = rewritten.get(cid, "").strip()
        if not text:
            problems.append(f"dropped clause {cid}")
            continue
        if len(text) > MAX_CLAUSE_CHARS:
            problems.append(f"clause {cid} is longer than {MAX_CLAUSE_CHARS} characters")
        problem = band_problem(text)
        if problem:
            problems.append(f"clause {cid}: {problem}")
        elif cid in original.ids and " ".join(text.split()) == " ".join(original.text_of(cid).split()):
            problems.append(f"clause {cid} came back unchanged")
    if not set(original.ids) >= allowed:
        problems.append("the clauses to rewrite are not all in the rubric")
    return problems
