"""Where the project's resource folders (data/, prompts/, models/, benchmarks/) and caches live."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from dualjudge.errors import DualjudgeError

_PACKAGE_DIR = Path(__file__).resolve().parent


def project_root() -> Path:
    """The folder holding data/, prompts/ and models/.

    An editable install or a checkout uses the repository itself; other installs point
    DUALJUDGE_HOME at a copy of the repository's resource folders.
    """
    return _root(os.environ.get("DUALJUDGE_HOME"))


@lru_cache(maxsize=8)
def _root(env: str | None) -> Path:
    """project_root for one value of DUALJUDGE_HOME, found once (a plan builds prompts by the 100,000)."""
    candidates = [Path(env)] if env else []
    candidates.append(_PACKAGE_DIR.parent)
    for root in candidates:
        if (root / "data" / "signs.toml").is_file():
            return root
    raise DualjudgeError("cannot find the dualjudge resource folders (data/signs.toml); set DUALJUDGE_HOME to the repository root")


def data_dir() -> Path:
    return project_root() / "data"


def models_dir() -> Path:
    """The model cards (models/*.toml) and their chat templates (models/templates/)."""
    return project_root() / "models"


def cache_dir() -> Path:
    """Generated artefacts (variants, weights): DUALJUDGE_CACHE or ~/.cache/dualjudge."""
    env = os.environ.get("DUALJUDGE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "dualjudge"
