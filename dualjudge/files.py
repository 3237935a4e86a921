"""Writing result files atomically, and checking output paths before any work starts.

Readers see the old file or the new one, never half of one. An output folder or file named by the
user is checked up front (not a file where a folder is wanted, not under a file, writable), so a
long run never fails at its end for a reason that was visible at its start.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dualjudge.errors import DualjudgeError


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a temporary sibling path to write; on success it replaces `path`, on error it is removed."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> Path:
    with replacing(path) as tmp:
        tmp.write_text(text)
    return path


def _existing_ancestor(path: Path) -> Path:
    anc = path
    while not anc.exists() and anc != anc.parent:
        if anc.is_symlink():  # a dangling link: creating under it fails
            raise DualjudgeError(f"{path}: {anc} is a broken symbolic link")
        anc = anc.parent
    return anc


def check_output_dir(path: Path, option: str = "--out", outputs: Iterable[str] = (), folders: Iterable[str] = ()) -> Path:
    """Make sure `path` is (or can become) a writable folder, that none of the files the command will
    write there (`outputs`, relative names) is a folder and none of its subfolders (`folders`) is a
    file. Nothing is created or left behind; the writer creates the folder when it writes."""
    if path.exists() and not path.is_dir():
        raise DualjudgeError(f"{path}: {option} is an existing file, not a folder; choose a folder")
    anc = _existing_ancestor(path)
    if not anc.is_dir():
        raise DualjudgeError(f"{path}: {option} lies under {anc}, which is a file, not a folder")
    try:  # a real write where the first file would go: catches read-only filesystems, which access() misses
        if anc == path:
            with tempfile.NamedTemporaryFile(dir=path, prefix=".dualjudge-write-check-"):
                pass
        else:
            os.rmdir(tempfile.mkdtemp(dir=anc, prefix=".dualjudge-write-check-"))
    except OSError as e:
        raise DualjudgeError(f"{path}: {option} is not writable ({e.strerror or e}); choose another folder") from None
    for name in outputs:
        target = path / name
        if target.is_dir():
            raise DualjudgeError(f"{target}: is a folder where dualjudge writes a file; move it away or use another {option}")
    for name in folders:
        target = path / name
        if target.exists() and not target.is_dir():
            raise DualjudgeError(f"{target}: is a file where dualjudge writes a folder; move it away or use another {option}")
    return path


def check_output_file(path: Path, option: str = "--out") -> Path:
    """Make sure a file can be written at `path` (nothing is created)."""
    if path.is_dir():
        raise DualjudgeError(f"{path}: {option} is a folder; name a file")
    anc = _existing_ancestor(path.parent)
    if not anc.is_dir():
        raise DualjudgeError(f"{path}: {option} lies under {anc}, which is a file, not a folder")
    check_output_dir(path.parent, f"the folder of {option}")
    if path.exists() and not os.access(path, os.W_OK):
        raise DualjudgeError(f"{path}: {option} is not writable")
    return path
