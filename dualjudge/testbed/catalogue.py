"""The sign catalogue: 25 SIGN_TYPE categories and 30 signs with gold captions and descriptions."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dualjudge.errors import DualjudgeError
from dualjudge.paths import data_dir
from dualjudge.tomlfile import first_error, read_toml

Group = Literal["regulatory", "warning", "information"]
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    group: Group
    definition: str = Field(min_length=10)

    @field_validator("id")
    @classmethod
    def _snake_case(cls, v: str) -> str:
        if not _SNAKE.match(v):
            raise ValueError(f"category id {v!r} is not snake_case")
        return v


class Sign(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    code: str = Field(pattern=r"^[0-9]{3,4}(\.[0-9])?[A-Z0-9]*$")
    group: Group
    category: str
    caption: str = Field(min_length=3)
    description: str = Field(min_length=20)


class Catalogue(BaseModel):
    model_config = ConfigDict(frozen=True)
    categories: tuple[Category, ...]
    signs: tuple[Sign, ...]

    @property
    def category_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.categories)

    def sign(self, code: str) -> Sign:
        for s in self.signs:
            if s.code == code:
                return s
        raise DualjudgeError(f"unknown sign code {code!r}; known codes: {', '.join(self.codes)}")

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(s.code for s in self.signs)

    def category(self, cid: str) -> Category:
        for c in self.categories:
            if c.id == cid:
                return c
        raise DualjudgeError(f"unknown SIGN_TYPE category {cid!r}")


def load_catalogue(directory: Path | None = None) -> Catalogue:
    """Read and validate data/categories.toml and data/signs.toml."""
    d = directory or data_dir()
    cat_path, sign_path = d / "categories.toml", d / "signs.toml"
    try:
        categories = tuple(Category(**c) for c in read_toml(cat_path).get("category", []))
        signs = tuple(Sign(**s) for s in read_toml(sign_path).get("sign", []))
    except ValidationError as e:
        where, msg = first_error(e)
        raise DualjudgeError(f"{d}: catalogue entry invalid at {where}: {msg}") from None
    ids = [c.id for c in categories]
    if len(set(ids)) != len(ids):
        raise DualjudgeError(f"{cat_path}: duplicate category ids")
    codes = [s.code for s in signs]
    if len(set(codes)) != len(codes):
        raise DualjudgeError(f"{sign_path}: duplicate sign codes")
    for s in signs:
        if s.category not in ids:
            raise DualjudgeError(f"{sign_path}: sign {s.code} has unknown category {s.category!r}")
    return Catalogue(categories=categories, signs=signs)


@lru_cache(maxsize=4)
def _catalogue_cached(directory: Path, stamps: tuple[int, ...]) -> Catalogue:
    return load_catalogue(directory)


def default_catalogue() -> Catalogue:
    """The catalogue in the resource folder in use, re-read when the folder or its files change."""
    d = data_dir()
    return _catalogue_cached(d, tuple(_mtime(d / name) for name in ("categories.toml", "signs.toml")))


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1  # missing: load_catalogue says so
