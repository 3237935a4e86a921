"""Batched store commits: many rows per transaction, still safe under kill -9 (a row is final only once
committed; at most the last uncommitted batch is done again, and nothing committed is sent again)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from dualjudge.inference.types import GenerationResult
from dualjudge.storage.rows import VerdictRow
from dualjudge.storage.store import BATCH_ROWS, Store
from tests.helpers.hosted import CARD
from tests.helpers.provider import Provider

ROOT = Path(__file__).resolve().parent.parent


def _reset_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_writes_are_committed_in_batches_and_every_row_is_seen_after_a_flush(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    other = sqlite3.connect(tmp_path / "s.sqlite")
    try:
        ok = GenerationResult("x", finish_reason="stop", completion_tokens=3)
        for i in range(BATCH_ROWS // 4):  # fewer writes than a batch (two each), all at once: none committed yet
            store.sent("s", f"k{i}", "m", ok, cacheable=True)
        assert other.execute("SELECT COUNT(*) FROM request_log").fetchone()[0] == 0
        store.flush()
        assert other.execute("SELECT COUNT(*) FROM request_log").fetchone()[0] == BATCH_ROWS // 4
        assert other.execute("SELECT COUNT(*) FROM cache").fetchone()[0] == BATCH_ROWS // 4
        for i in range(BATCH_ROWS):  # a full batch commits by itself
            store.record(
                VerdictRow(
                    variant_id=f"v{i}",
                    repeat=0,
                    system_model="m",
                    strategy="sa",
                    judge_model="j",
                    judge_variant="holistic",
                    kind="quality",
                    status="ok",
                )
            )
        assert other.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] >= BATCH_ROWS - 1
        store.set_meta("k", "v")  # metadata is committed at once, with what came before
        assert other.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == BATCH_ROWS
    finally:
        other.close()
        store.close()


def test_kill_9_mid_run_loses_at_most_the_open_batch_and_the_rerun_completes_it(tmp_path):
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "toy-vlm.toml").write_text(CARD.format(extra=""))
    config = tmp_path / "run.toml"
    out = tmp_path / "run"
    db = out / "results.sqlite"
    with Provider(served=("toy-vlm",)) as api:
        api.delay_s, api.vary = 0.05, True
        config.write_text(f"""[run]
name = "batched"
seed = 3
[testbed]
signs = ["616", "512", "513", "601.1"]
visibilities = [1.0, 0.8, 0.5, 0.3]
modes = ["bottom_up", "random_block"]
repeats = 2
modality = "text"
size = 64
[systems]
models = ["toy-vlm"]
strategies = ["sa", "cot", "coi"]
sign_type = "parsed"
max_tokens = 64
[judges]
models = ["toy-vlm"]
max_tokens = 128
[probes]
order = false
padding = false
[engine]
concurrency = 8
endpoints = {{ "toy-vlm" = ["{api.url}"] }}
[models]
dir = "{cards}"
""")
        proc = subprocess.Popen(
            [sys.executable, "-m", "dualjudge.cli", "run", str(config), "--out", str(out)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            preexec_fn=_reset_signals,
        )
        try:
            deadline = time.time() + 300
            while _count(db, "SELECT COUNT(*) FROM verdicts") < 40:  # the judges are at work
                assert proc.poll() is None and time.time() < deadline
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        with sqlite3.connect(db) as con:
            sent_first = {k for (k,) in con.execute("SELECT key FROM request_log WHERE ok = 1")}
            cached = {k for (k,) in con.execute("SELECT key FROM cache")}
            first_verdicts = con.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
        assert sent_first and sent_first <= cached  # a logged success always has its cache row: one commit
        sent_before = len(api.bodies)
        assert sent_before - len(sent_first) <= BATCH_ROWS + 8  # at most the open batch and the requests in flight
        again = subprocess.run(
            [sys.executable, "-m", "dualjudge.cli", "run", str(config), "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            preexec_fn=_reset_signals,
        )
        assert again.returncode == 0, again.stdout + again.stderr
    with sqlite3.connect(db) as con:
        sessions = [s for (s,) in con.execute("SELECT session FROM request_log GROUP BY session ORDER BY MIN(at)")]
        sent_second = {k for (k,) in con.execute("SELECT key FROM request_log WHERE session = ?", (sessions[-1],))}
        verdicts = con.execute("SELECT COUNT(*), SUM(status = 'ok') FROM verdicts").fetchone()
        answers = con.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        duplicates = con.execute("SELECT COUNT(*) - COUNT(DISTINCT key) FROM request_log WHERE ok = 1").fetchone()[0]
    assert len(sessions) == 2 and first_verdicts < verdicts[0]
    assert not (sent_second & sent_first) and duplicates == 0  # nothing committed was asked again
    planned_answers = 4 * (1 + 3 * 2) * 2 * 3
    assert answers == planned_answers and verdicts[0] == verdicts[1] == 2 * planned_answers


def _count(db: Path, sql: str) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return int(con.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0
