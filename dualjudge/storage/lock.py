"""One run per run directory at a time: an OS file lock held for the whole run.

The lock is `flock` on `RUN/run.lock`, so it is released by the kernel when the process ends, however
it ends: a run killed with SIGKILL never leaves a stale lock. The file records the holder's pid and
start time so a second run can say who holds the directory. Read-only commands (status, export)
take no lock and keep working during a run.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dualjudge.errors import DualjudgeError
from dualjudge.rundir import RunDir

LOCK_FILE = RunDir.LOCK


@contextmanager
def run_lock(out: Path) -> Iterator[None]:
    path = out / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise DualjudgeError(f"{path}: cannot create the run lock ({e.strerror or e})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise DualjudgeError(
                f"{out} is in use by another dualjudge run ({holder}); wait for it to end or use "
                f"another --out (`dualjudge status {out}` works meanwhile)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def is_running(out: Path) -> bool:
    """Whether a dualjudge run holds the directory now (its lock is taken); takes no lock itself for long."""
    path = out / LOCK_FILE
    if not path.is_file():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the shared lock at once
    return False
