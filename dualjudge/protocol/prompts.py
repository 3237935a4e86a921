"""Prompts live in prompts/*.toml, one file per prompt, loaded by name.

A file holds `name`, `variables` (the placeholders it uses) and `system` and `user` templates with
`$name` placeholders. The run records each file's sha256, which is part of the cache key of every
request built from it: editing a prompt re-runs exactly the requests that use it.
"""

from __future__ import annotations

import hashlib
import re
import string
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dualjudge.errors import DualjudgeError
from dualjudge.paths import project_root

_NAME = re.compile(r"^[a-z_]+(\.(image|text))?$")


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str
    variables: frozenset[str]
    sha256: str
    path: Path

    def render(self, **values: str) -> tuple[str, str]:
        """Fill every placeholder; a missing or unexpected value is an error, never a silent blank."""
        given = set(values)
        if given != self.variables:
            missing, extra = sorted(self.variables - given), sorted(given - self.variables)
            raise DualjudgeError(f"prompt {self.name}: missing values {missing}, unexpected values {extra}")
        return (string.Template(self.system).substitute(values), string.Template(self.user).substitute(values))


def prompts_dir() -> Path:
    return project_root() / "prompts"


def _placeholders(template: str) -> set[str]:
    names = set()
    for m in string.Template.pattern.finditer(template):
        if m.group("invalid") is not None:
            raise ValueError(f"invalid placeholder near {template[m.start() : m.start() + 20]!r}")
        name = m.group("named") or m.group("braced")
        if name:
            names.add(name)
    return names


def parse_prompt(path: Path) -> Prompt:
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise DualjudgeError(f"{path}: malformed prompt file ({e})") from None
    missing = [k for k in ("name", "variables", "system", "user") if k not in data]
    if missing:
        raise DualjudgeError(f"{path}: malformed prompt file (missing {', '.join(missing)})")
    unknown = sorted(set(data) - {"name", "variables", "system", "user"})
    if unknown:
        raise DualjudgeError(f"{path}: malformed prompt file (unknown keys {', '.join(unknown)})")
    if data["name"] != path.stem:
        raise DualjudgeError(f"{path}: prompt name {data['name']!r} does not match the file name")
    if not (isinstance(data["system"], str) and isinstance(data["user"], str) and data["user"].strip()):
        raise DualjudgeError(f"{path}: malformed prompt file (system and user must be text)")
    declared = data["variables"]
    if not isinstance(declared, list) or not all(isinstance(v, str) for v in declared):
        raise DualjudgeError(f"{path}: malformed prompt file (variables must be a list of names)")
    try:
        used = _placeholders(data["system"]) | _placeholders(data["user"])
    except ValueError as e:
        raise DualjudgeError(f"{path}: malformed prompt file ({e})") from None
    if used != set(declared):
        raise DualjudgeError(f"{path}: placeholders {sorted(used)} do not match declared variables {sorted(declared)}")
    return Prompt(data["name"], data["system"], data["user"], frozenset(declared), hashlib.sha256(raw).hexdigest(), path)


@lru_cache(maxsize=128)
def _load_cached(directory: Path, name: str, mtime_ns: int) -> Prompt:
    return parse_prompt(directory / f"{name}.toml")


def load_prompt(name: str, directory: Path | None = None) -> Prompt:
    """Load prompt `name` (e.g. "sa.image", "judge_quality") from the prompts folder."""
    if not _NAME.match(name):
        raise DualjudgeError(f"invalid prompt name {name!r}")
    d = directory or prompts_dir()
    path = d / f"{name}.toml"
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise DualjudgeError(f"{path}: prompt file not found") from None
    return _load_cached(d, name, mtime)


def prompt_hashes(directory: Path | None = None) -> dict[str, str]:
    """sha256 of every prompt file, for the run manifest."""
    d = directory or prompts_dir()
    return {p.stem: load_prompt(p.stem, d).sha256 for p in sorted(d.glob("*.toml"))}


@dataclass(frozen=True)
class PromptSet:
    """The prompts of one task: its folders searched in order (a task's own overrides first), and the
    task's words that fill any placeholder a prompt declares (`domain`, `question`, ...).

    The built-in uk-signs task searches only the project's prompts/ and brings no words, so its
    requests are exactly those of the prompts themselves (and their cache keys unchanged)."""

    dirs: tuple[Path, ...] = ()
    words: tuple[tuple[str, str], ...] = ()

    def load(self, name: str) -> Prompt:
        for d in self.dirs:
            if (d / f"{name}.toml").is_file():
                return load_prompt(name, d)
        return load_prompt(name)

    def has(self, name: str) -> bool:
        """Whether one of the task's own folders holds the prompt (the project's prompts/ are not looked at)."""
        return any((d / f"{name}.toml").is_file() for d in self.dirs)

    def render(self, prompt: Prompt, **values: str) -> tuple[str, str]:
        """Fill `prompt` with the values and task words it declares (the caller's values win): a task's own
        prompt may leave out what the default one uses, never use a name it is not given."""
        given = {**dict(self.words), **values}
        return prompt.render(**{k: v for k, v in given.items() if k in prompt.variables})

    def hashes(self) -> dict[str, str]:
        """sha256 of every prompt this set resolves to, by name (the manifest's record)."""
        names = sorted({p.stem for d in (*self.dirs, prompts_dir()) for p in d.glob("*.toml")})
        return {name: self.load(name).sha256 for name in names}


SIGN_PROMPTS = PromptSet()  # the project's prompts/ as they are (uk-signs)
