"""A run directory's files: the store, the testbed it built, and the results a run writes there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dualjudge.errors import DualjudgeError
from dualjudge.runs.store import Store
from dualjudge.testbed.variants import load_manifest

STORE_FILE = "results.sqlite"
TESTBED = "testbed"


def load_run_store(out: Path) -> Store:
    """A run's store opened read-only (status, export): nothing in it is ever changed."""
    if not (out / STORE_FILE).exists():
        raise DualjudgeError(f"{out}: no {STORE_FILE}; is this a run directory?")
    return Store(out / STORE_FILE, readonly=True)


def load_variants(out: Path) -> dict[str, dict[str, Any]]:
    """The run's variants by id, from the testbed manifest it built."""
    return {r["variant_id"]: r for r in load_manifest(out / TESTBED).to_dict("records")}
