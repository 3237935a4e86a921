"""Reading the project's TOML files (catalogue, model cards, run configs) with one-line errors."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dualjudge.errors import DualjudgeError


def read_toml(path: Path, what: str = "file") -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise DualjudgeError(f"{path}: {what} not found") from None
    except tomllib.TOMLDecodeError as e:
        raise DualjudgeError(f"{path}: invalid TOML ({e})") from None


def first_error(e: ValidationError) -> tuple[str, str]:
    """(dotted location, message) of a validation error's first problem, in user words."""
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
    return where, msg
