"""Items from a Hugging Face dataset (`items = "hf://NAME"` in task.toml), read through the `datasets` library:
from its local cache when offline (HF_DATASETS_OFFLINE=1, or no network), with the revision asked for, and
the one it resolved to recorded beside the task. NAME is a hub dataset ("openai/gsm8k") or a dataset folder
inside the task folder ("hf://data", a folder of data files `datasets` reads).

A dataset's columns rarely have this project's names: `columns` in task.toml maps each item field to a
dataset column (`{ text = "question", reference = "answer" }`), and a dataset without ids gets SPLIT-NNNNN.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
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
    cannot be read (not installed, not cached while offline, an unknown split or column, a broken data file, a hub
    that does not answer in time). NAME is a folder inside the task folder (links followed, then checked) or a hub
    dataset OWNER/NAME; nothing else is read, and a local name is never looked up anywhere but in the task folder."""
    name = items.removeprefix(PREFIX).strip()
    if not name:
        raise DualjudgeError(f"{where}: items {items!r} names no dataset (hf://OWNER/NAME, or hf://FOLDER in the task folder)")
    path, local = _where_to_read(folder, name, where)
    try:
        import datasets
        import huggingface_hub
    except ImportError:
        raise DualjudgeError(f"{where}: items from Hugging Face need the datasets package (pip install datasets)") from None
    datasets.disable_progress_bars()  # a task's check prints one table, not download and generation bars
    # the hub client's retry warnings (an unreachable hub) are not the one line a task's error is
    huggingface_hub.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    files = _FilesNamed()
    try:
        with _logged_to(files), _offline_unless_reachable(local_folder=local), _neutral_cwd(local):
            builder, data = _within_deadline(
                lambda: (
                    datasets.load_dataset_builder(path, subset, revision=revision),
                    datasets.load_dataset(path, subset, split=split, revision=revision),
                ),
                None if local else hub_deadline(),
                f"{where}: the Hugging Face hub did not finish sending dataset {name!r} within {hub_deadline():g} s; "
                f"try again, or save the dataset into the task folder",
            )
    except DualjudgeError:
        raise
    except (FileNotFoundError, ConnectionError, ValueError, OSError) as e:  # offline and uncached, no such split
        first = _first_line(e)
        hint = (
            ""
            if local or "split" in first.lower()
            else " (offline, a dataset must be in the local Hugging Face cache: read it once with the network, or save "
            "it into the task folder)"
        )
        raise DualjudgeError(f"{where}: dataset {name!r} (split {split!r}) cannot be read: {first}{files.said()}{hint}") from None
    except StopIteration:  # `datasets` on a data file with no rows
        raise DualjudgeError(f"{where}: dataset {name!r} (split {split!r}) has no rows: {_empty_files(path, local)}") from None
    except Exception as e:  # a broken data file: the reader's own error (pyarrow's), said in one line
        cause = e.__cause__ or e.__context__ or e
        raise DualjudgeError(
            f"{where}: dataset {name!r} (split {split!r}) cannot be read: {_first_line(cause)}{files.said()}"
        ) from None
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


HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")  # OWNER/NAME
DEADLINE_S = 600.0  # a hub dataset's whole read (DUALJUDGE_HUB_DEADLINE_S): a host that trickles never stalls a check


def hub_deadline() -> float:
    try:
        return max(1.0, float(os.environ.get("DUALJUDGE_HUB_DEADLINE_S", DEADLINE_S)))
    except ValueError:
        return DEADLINE_S


def _where_to_read(folder: Path, name: str, where: str) -> tuple[str, bool]:
    """What `datasets` is given, and whether it is a folder of the task's: a folder inside the task folder (resolved,
    links followed, then checked), a hub dataset OWNER/NAME, or one line."""
    candidate = folder / name
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise DualjudgeError(
            f"{where}: items 'hf://{name}' is a path out of the task folder; a local dataset is a folder inside it "
            f"(hf://FOLDER), a hub dataset is hf://OWNER/NAME"
        )
    if os.path.lexists(candidate) or "/" not in name:
        resolved = candidate.resolve()
        if not resolved.is_relative_to(folder.resolve()):
            raise DualjudgeError(f"{where}: dataset folder {name!r} points outside the task folder (a link?); nothing was read")
        if not resolved.is_dir():
            raise DualjudgeError(
                f"{where}: no folder {name!r} in the task folder {folder} (a local dataset is read only from there; a hub "
                f"dataset is hf://OWNER/NAME)"
            )
        scripts = sorted(p.name for p in resolved.rglob("*.py"))
        if scripts:
            raise DualjudgeError(
                f"{where}: dataset folder {name!r} holds a loading script ({scripts[0]}), which dualjudge never runs; "
                f"keep only data files (JSON Lines, CSV, Parquet) there"
            )
        return str(resolved), True
    if not HUB_NAME.match(name):
        raise DualjudgeError(f"{where}: {name!r} is neither a folder in the task folder nor a hub dataset (hf://OWNER/NAME)")
    return name, False


@contextlib.contextmanager
def _neutral_cwd(local: bool) -> Iterator[None]:
    """For a hub dataset, the current directory an empty one while `datasets` reads: it looks for a folder of the
    dataset's name there first, and would read one the user happens to have."""
    if local:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="dualjudge-hub-") as empty, contextlib.chdir(empty):
        yield


T = TypeVar("T")


def _within_deadline(read: Callable[[], T], seconds: float | None, message: str) -> T:
    """read(), given up after `seconds` (None: no bound) in one line: it runs in a daemon thread, so a host that keeps
    a connection open and trickles its reply never keeps the command waiting (the thread ends with the process)."""
    if seconds is None:
        return read()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = read()
        except BaseException as e:  # carried to the caller's thread
            box["error"] = e

    worker = threading.Thread(target=run, name="dualjudge-hub-read", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise DualjudgeError(message)
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


class _FilesNamed(logging.Handler):
    """The data files `datasets` names in its own error logs (which file a broken line is in)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.files: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"from file '([^']+)'", record.getMessage())
        if found:
            self.files.append(found.group(1))

    def said(self) -> str:
        return f" (in {Path(self.files[-1]).name})" if self.files else ""


@contextlib.contextmanager
def _logged_to(handler: logging.Handler) -> Iterator[None]:
    """`datasets`' log records go to `handler` alone while a dataset is read: a broken file is said once, in the one
    line of the error (with the file its log names), never also as a log line on stderr."""
    logger = logging.getLogger("datasets")
    before = (logger.handlers[:], logger.propagate, logger.level)
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.handlers, logger.propagate = before[0], before[1]
        logger.setLevel(before[2])


def _empty_files(path: str, local: bool) -> str:
    if local:
        empty = sorted(p.name for p in Path(path).rglob("*") if p.is_file() and p.stat().st_size == 0)
        if empty:
            return f"{', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty"
    return "its data files hold none"


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:200]


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
    """Whether the hub's host answers an HTTP request, status line and headers, within REACH_S in all: a host that
    accepts the connection and then trickles its reply counts as not answering."""
    parts = urlsplit(endpoint)
    if not parts.hostname:
        return False

    def ask() -> bool:
        connection = (http.client.HTTPConnection if parts.scheme == "http" else http.client.HTTPSConnection)(
            parts.hostname or "", parts.port, timeout=REACH_S
        )
        try:
            connection.request("HEAD", "/")
            connection.getresponse()
            return True
        finally:
            connection.close()

    try:
        return bool(_within_deadline(ask, REACH_S, "not in time"))
    except (OSError, DualjudgeError, http.client.HTTPException):  # no such name, refused, timed out, trickled
        return False
