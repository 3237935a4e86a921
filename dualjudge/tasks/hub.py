"""Items from a Hugging Face dataset (`items = "hf://NAME"` in task.toml), read through the `datasets` library:
from its local cache when offline (HF_DATASETS_OFFLINE=1, or no network), with the revision asked for, and
the one it resolved to recorded beside the task. NAME is a hub dataset ("openai/gsm8k") or a dataset folder
inside the task folder ("hf://data", a folder of data files `datasets` reads).

A dataset's columns rarely have this project's names: `columns` in task.toml maps each item field to a
dataset column (`{ text = "question", reference = "answer" }`), and a dataset without ids gets SPLIT-NNNNN.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from dualjudge.errors import DualjudgeError

PREFIX = "hf://"
MAX_ROWS = 100_000
REACH_S = 3.0  # how long the hub's host may take to accept a connection before the cache is read offline


@dataclass(frozen=True)
class HubSource:
    """Where a task's items came from: what a run records, so that another machine reads the same rows."""

    dataset: str
    subset: str | None
    split: str
    revision: str | None  # as asked for (None: the default branch)
    resolved: str  # the revision `datasets` read: the hub's commit, or a local folder's content hash
    fingerprint: str  # `datasets`' hash of the rows read

    def record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def is_hub(items: str) -> bool:
    return items.startswith(PREFIX)


def read_hub(
    folder: Path, items: str, subset: str | None, split: str, revision: str | None, columns: dict[str, str], where: str
) -> tuple[pd.DataFrame, HubSource]:
    """The dataset's split as a frame with this project's column names, and where it came from; one line when it
    cannot be read (not installed, not cached while offline, an unknown split or column)."""
    name = items.removeprefix(PREFIX).strip()
    if not name:
        raise DualjudgeError(f"{where}: items {items!r} names no dataset (hf://OWNER/NAME, or hf://FOLDER in the task folder)")
    try:
        import datasets
        import huggingface_hub
    except ImportError:
        raise DualjudgeError(f"{where}: items from Hugging Face need the datasets package (pip install datasets)") from None
    datasets.disable_progress_bars()  # a task's check prints one table, not download and generation bars
    datasets.logging.set_verbosity_error()
    # the hub client's retry warnings (an unreachable hub) are not the one line a task's error is
    huggingface_hub.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    local = (folder / name).resolve()
    path = str(local) if local.is_dir() and local.is_relative_to(folder.resolve()) else name
    try:
        with _offline_unless_reachable(local_folder=path != name):
            builder = datasets.load_dataset_builder(path, subset, revision=revision)
            data = datasets.load_dataset(path, subset, split=split, revision=revision)
    except (FileNotFoundError, ConnectionError, ValueError, OSError) as e:  # offline and uncached, no such split
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        hint = (
            ""
            if "split" in first.lower()
            else " (offline, a dataset must be in the local Hugging Face cache: read it once with the network, or save "
            "it into the task folder)"
        )
        raise DualjudgeError(f"{where}: dataset {name!r} (split {split!r}) cannot be read: {first}{hint}") from None
    if len(data) > MAX_ROWS:
        raise DualjudgeError(f"{where}: dataset {name!r} split {split!r} has {len(data):,} rows; the limit is {MAX_ROWS:,}")
    frame = data.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    missing = sorted(set(columns.values()) - set(frame.columns))
    if missing:
        raise DualjudgeError(
            f"{where}: columns maps to {', '.join(repr(m) for m in missing)}, which dataset {name!r} lacks "
            f"(it has {', '.join(map(str, frame.columns))})"
        )
    frame = frame.rename(columns={source: field for field, source in columns.items()})
    if "id" not in frame.columns:
        frame.insert(0, "id", [f"{split}-{n:05d}" for n in range(len(frame))])
    source = HubSource(name, subset, split, revision, str(builder.hash or ""), str(data._fingerprint))
    return frame, source


@contextlib.contextmanager
def _offline_unless_reachable(local_folder: bool) -> Iterator[None]:
    """Hub offline mode while a dataset is read, where the hub's host does not answer within REACH_S: `datasets`
    then reads its cache at once, instead of retrying each request for half a minute before it does."""
    import datasets
    import huggingface_hub

    if local_folder or huggingface_hub.constants.is_offline_mode() or _reachable(huggingface_hub.constants.ENDPOINT):
        yield
        return
    before = (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE)
    huggingface_hub.constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = before


def _reachable(endpoint: str) -> bool:
    parts = urlsplit(endpoint)
    try:
        with socket.create_connection(
            (parts.hostname or "", parts.port or (80 if parts.scheme == "http" else 443)), timeout=REACH_S
        ):
            return True
    except OSError:  # no such name, refused, timed out
        return False
