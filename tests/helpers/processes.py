"""The CLI as a child process, and what a test reads of it: rows in its store, its vLLM servers' pids."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def reset_signals() -> None:
    """In a child before exec: default SIGINT/SIGTERM. A test runner started in the background
    (`make test &`) has SIGINT ignored, and children inherit that, so Ctrl-C tests would hang."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start_cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dualjudge.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=reset_signals,
        **kw,
    )


def count_rows(db: Path, sql: str) -> int:
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as con:
            return int(con.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def server_pids(log_dir: Path) -> set[int]:
    pids = set()
    for log in log_dir.glob("vllm-*.log"):
        pids |= {int(p) for p in re.findall(r"\((?:APIServer|EngineCore|Worker)[^ ]* pid=(\d+)\)", log.read_text(errors="replace"))}
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state not in ("Z", "X")


@pytest.fixture()
def children():
    """Processes a test starts; killed (with their vLLM servers) whatever the test's outcome."""
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
