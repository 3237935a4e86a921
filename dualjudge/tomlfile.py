"""Reading the project's TOML files (catalogue, model cards, run configs) with one-line errors."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dualjudge.errors import DualjudgeError


def read_toml(path: Path, what: str = "file") -> dict[str, Any]:
    if path.is_dir():
        raise DualjudgeError(f"{path}: is a folder; name the {what} itself")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DualjudgeError(f"{path}: {what} not found") from None
    except UnicodeDecodeError as e:
        raise DualjudgeError(f"{path}: the {what} is not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except OSError as e:
        raise DualjudgeError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise DualjudgeError(f"{path}: invalid TOML ({e})") from None


def first_error(e: ValidationError) -> tuple[str, str]:
    """(dotted location, message) of a validation error's first problem, in user words."""
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
    return where, msg
