"""Hostile inputs, round four (issue 57): datasets that stay inside their task folder, keys in any spelling, an archived
run on a read-only disk, a run with a shared cache reproduced, no input that can stall a run, and one line that means
one line. Each case failed on the main branch before this round."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.protocol.vocabulary import FinalLine, parse_sign_type
from dualjudge.studies.job import run_job
from dualjudge.studies.reproduce import reproduce
from tests.helpers.runs import CONFIG, Recorder, config

ROWS = [{"question": f"What is {n} plus {n}?", "answer": f"{2 * n}"} for n in range(1, 5)]
TASK = (
    'name = "sums"\nmodality = "text"\nitems = "hf://{name}"\nsplit = "test"\ndomain = "sums"\nquestion = "What is the sum?"\n'
    'columns = {{ text = "question", reference = "answer" }}\n'
)


def _dataset(folder: Path, rows: list[dict] = ROWS, file: str = "test.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _task(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.toml").write_text(TASK.format(name=name))
    return folder


@pytest.fixture()
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return tmp_path


def _one_line(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- hf:// stays inside the task folder ----------------------------------------------------------------------------
def test_an_absolute_dataset_path_is_refused_and_nothing_outside_is_read(offline, cli):
    outside = _dataset(offline / "elsewhere")
    task = _task(offline / "task", str(outside).lstrip("/"))
    (task / "task.toml").write_text(TASK.format(name="/" + str(outside).lstrip("/")))  # items = "hf:///abs/path"
    line = _one_line(*cli("data", "task", str(task))[::2])
    assert "a path out of the task folder" in line


def test_dot_dot_and_a_link_that_leaves_the_task_folder_are_refused(offline, cli):
    _dataset(offline / "elsewhere")
    task = _task(offline / "task", "../elsewhere")
    assert "a path out of the task folder" in _one_line(*cli("data", "task", str(task))[::2])
    (task / "data").symlink_to(offline / "elsewhere")
    (task / "task.toml").write_text(TASK.format(name="data"))
    assert "points outside the task folder" in _one_line(*cli("data", "task", str(task))[::2])


def test_a_folder_named_like_the_dataset_in_the_current_directory_is_never_read(offline, cli, monkeypatch):
    _dataset(offline / "cwd" / "data")
    monkeypatch.chdir(offline / "cwd")
    task = _task(offline / "task", "data")
    line = _one_line(*cli("data", "task", str(task))[::2])
    assert "no folder 'data' in the task folder" in line
    _dataset(offline / "cwd" / "owner" / "name")  # a hub name that is also a folder here: the hub is asked (offline)
    (task / "task.toml").write_text(TASK.format(name="owner/name"))
    line = _one_line(*cli("data", "task", str(task))[::2])
    assert "dataset 'owner/name' (split 'test') cannot be read" in line


def test_a_missing_local_dataset_is_never_answered_from_the_cache(offline, cli):
    """Task A's hf://data is read once (offline, into the datasets cache); task B names hf://data and has no data
    folder: one line, never A's rows."""
    a = _task(offline / "a", "data")
    _dataset(a / "data")
    code, out, err = cli("data", "task", str(a))
    assert code == 0, err
    b = _task(offline / "b", "data")
    assert "no folder 'data' in the task folder" in _one_line(*cli("data", "task", str(b))[::2])


@pytest.mark.parametrize(
    "broken, needle",
    [
        (lambda d: (d / "test.jsonl").write_text('{"question": "a", "answer": "1"}\n{"question": "b", bad\n'), "in test.jsonl"),
        (lambda d: (d / "test.jsonl").write_text(""), "test.jsonl is empty"),
    ],
)
def test_a_broken_dataset_file_is_one_line_naming_it(offline, cli, broken, needle):
    task = _task(offline / "task", "data")
    (task / "data").mkdir()
    broken(task / "data")
    line = _one_line(*cli("data", "task", str(task))[::2])
    assert "dataset 'data' (split 'test')" in line and needle in line


def test_a_loading_script_is_never_run(offline, cli):
    task = _task(offline / "task", "data")
    _dataset(task / "data")
    ran = offline / "the-script-ran"
    (task / "data" / "data.py").write_text(f"open({str(ran)!r}, 'w').write('yes')\n")
    line = _one_line(*cli("data", "task", str(task))[::2])
    assert "holds a loading script (data.py), which dualjudge never runs" in line and not ran.exists()


def test_a_hub_that_accepts_and_trickles_is_given_up_in_one_line(tmp_path):
    """A host that accepts the connection and sends a byte a second: `data task` says so in one line within seconds
    (it waited past 120 s before), reading the cache instead (empty here)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def trickle() -> None:
        server.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=_drip, args=(conn, stop), daemon=True).start()

    threading.Thread(target=trickle, daemon=True).start()
    task = _task(tmp_path / "task", "owner/name")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env |= {
        "HF_ENDPOINT": f"http://127.0.0.1:{server.getsockname()[1]}",
        "HF_HOME": str(tmp_path / "hf-home"),
        "DUALJUDGE_HUB_DEADLINE_S": "10",
    }
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "dualjudge", "data", "task", str(task)], env=env, capture_output=True, text=True, timeout=90
        )
    finally:
        stop.set()
        server.close()
    assert time.monotonic() - started < 45
    line = _one_line(done.returncode, done.stderr)
    assert "dataset 'owner/name' (split 'test') cannot be read" in line or "did not finish sending" in line


def _drip(conn: socket.socket, stop: threading.Event) -> None:
    with conn:
        try:
            conn.recv(4096)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 1000:
                if stop.is_set():
                    return
                conn.sendall(bytes([byte]))
                time.sleep(1.0)
        except OSError:
            return


# -- no input stalls a run -------------------------------------------------------------------------------------------
def test_parsing_a_final_line_takes_linear_time_whatever_trails_it():
    started = time.perf_counter()
    for n in (500, 1000, 2000, 20000):
        assert FinalLine("ANSWER", (), answer=r"-?[0-9]+").parse("x\nANSWER: 12" + " " * n) == "12"
        assert parse_sign_type("x\nSIGN_TYPE: no_entry" + " " * n + "y") is None
        assert parse_sign_type("x\n" + " " * n + "SIGN_TYPE: no_entry") == "no_entry"
    assert time.perf_counter() - started < 1.0  # 22.6 s for 2,000 trailing spaces alone before


@pytest.mark.parametrize(
    "pattern, needle",
    [
        ("(a+)+b", "does not match the task's answer pattern"),  # the issue's: told at once now
        ("(a|a)+b", "cannot be checked against label"),  # one no engine settles: given up within its bound
    ],
)
def test_a_task_pattern_that_backtracks_without_end_is_one_line_in_bounded_time(tmp_path, cli, pattern, needle):
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.toml").write_text(
        'name = "a"\nmodality = "text"\nitems = "items.jsonl"\ndomain = "letters"\nquestion = "Which?"\n'
        f'label = "ANSWER"\nanswer = "{pattern}"\n'
    )
    (folder / "items.jsonl").write_text(json.dumps({"id": "q", "text": "t", "reference": "r", "label": "a" * 34}) + "\n")
    started = time.monotonic()
    line = _one_line(*cli("data", "task", str(folder))[::2])
    assert time.monotonic() - started < 10 and needle in line
    started = time.monotonic()
    assert FinalLine("ANSWER", (), answer=pattern).parse("ANSWER: " + "a" * 34) is None  # a reply: no answer, in time
    assert time.monotonic() - started < 2


# -- one line means one line -----------------------------------------------------------------------------------------
def test_a_decompression_bomb_is_refused_in_one_line_without_pillows_warning(tmp_path, cli):
    from PIL import Image

    folder = tmp_path / "task"
    (folder / "img").mkdir(parents=True)
    buffer = io.BytesIO()
    Image.new("1", (10_000, 10_000)).save(buffer, "PNG")  # 100 megapixels: past Pillow's warning, short of its error
    (folder / "img" / "bomb.png").write_bytes(buffer.getvalue())
    (folder / "task.toml").write_text(
        'name = "b"\nmodality = "image"\nitems = "items.jsonl"\ndomain = "pictures"\nquestion = "What?"\n'
    )
    (folder / "items.jsonl").write_text(json.dumps({"id": "q", "image": "img/bomb.png", "reference": "r"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "dualjudge", "data", "task", str(folder)], capture_output=True, text=True)
    line = _one_line(done.returncode, done.stderr)
    assert "decompression bomb" in line and "DecompressionBombWarning" not in done.stderr


# -- keys in any spelling ------------------------------------------------------------------------------------------------
def test_a_key_echoed_in_json_escapes_reaches_no_file_of_the_run(tmp_path, monkeypatch):
    """A provider that writes the key into a 200's content with JSON escapes (a \\u0073 for its first letter): no
    file of the run holds it, decoded or as the provider spelled it."""
    from tests.helpers.hosted import KEY, hosted_config
    from tests.helpers.provider import ESCAPED_KEY, Provider

    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        api.always = "key_escaped"
        run_job(hosted_config(api.url, tmp_path), tmp_path / "run")
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"results.sqlite", "verdicts.csv", "verdicts.parquet", "explorer.html"}
    raw = b"".join(p.read_bytes() for p in files)
    assert KEY.encode() not in raw and ESCAPED_KEY not in raw and KEY[4:].encode() not in raw
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:
        texts = [t for (t,) in con.execute("SELECT text FROM cache") if t]
    assert texts and any("The key is ***" in t for t in texts)


@pytest.mark.parametrize("where", ["hosted", "endpoints"])
def test_a_key_too_short_to_scrub_is_refused_before_anything_is_written(tmp_path, monkeypatch, where):
    from tests.helpers.hosted import hosted_config
    from tests.helpers.provider import Provider

    if where == "hosted":
        monkeypatch.setenv("DJ_HOSTED_KEY", "k3y")
        with Provider() as api, pytest.raises(DualjudgeError, match="DJ_HOSTED_KEY holds a key of 3 characters"):
            run_job(hosted_config(api.url, tmp_path), tmp_path / "run")
    else:
        with pytest.raises(Exception, match="engine.api_key holds a key of 3 characters"):
            config(tmp_path, CONFIG.replace('backend = "vllm"', 'backend = "vllm"\napi_key = "k3y"'))
    assert not (tmp_path / "run").exists()


# -- an archived run is readable ------------------------------------------------------------------------------------------
@pytest.fixture()
def read_only_copy(tmp_path):
    """A finished run, then the folder it lies in mounted read-only (a bind mount; skipped where this process may
    not mount, as on a machine without root)."""
    run_job(config(tmp_path, CONFIG), tmp_path / "archive" / "run", engines=Recorder())
    mount = tmp_path / "mounted"
    mount.mkdir()
    bind = subprocess.run(["mount", "--bind", str(tmp_path / "archive"), str(mount)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bind.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True, capture_output=True)
        assert not os.access(mount, os.W_OK)
        yield mount / "run"
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_finished_run_on_a_read_only_disk_is_read_and_a_write_says_read_only(read_only_copy, cli):
    run = read_only_copy
    code, out, err = cli("status", str(run))
    assert code == 0 and "damaged" not in err + out, err
    assert "verdicts" in out
    again = reproduce(run, sample=10, seed=1, engines=Recorder())
    assert again.matched and again.compared
    code, _, err = cli("export", str(run))
    line = _one_line(code, err)
    assert "not writable" in line and "damaged" not in line
    code, _, err = cli("view", str(run))
    assert code == 2 and "damaged" not in err


# -- reproduce reads the run's cache where the run kept it ----------------------------------------------------------------
@pytest.mark.parametrize("layout", ["in the store", "a shared file beside other runs", "the shared file is the store"])
def test_reproduce_reads_the_cache_of_every_layout_a_run_can_have(tmp_path, layout):
    out = tmp_path / "run"
    text = CONFIG
    if layout == "a shared file beside other runs":
        text = text.replace('backend = "vllm"', f'backend = "vllm"\ncache = "{tmp_path / "shared" / "cache.sqlite"}"')
        (tmp_path / "shared").mkdir()
    elif layout == "the shared file is the store":
        text = text.replace('backend = "vllm"', f'backend = "vllm"\ncache = "{out / "results.sqlite"}"')
    run_job(config(tmp_path, text), out, engines=Recorder())
    again = reproduce(out, sample=400, seed=1, engines=Recorder())
    assert again.matched and len(again.compared) == again.requests > 0
    assert {c.stage for c in again.compared} >= {"answers", "verdicts"}


def test_reproduce_of_a_run_whose_shared_cache_is_gone_says_so(tmp_path):
    out = tmp_path / "run"
    shared = tmp_path / "shared" / "cache.sqlite"
    shared.parent.mkdir()
    run_job(config(tmp_path, CONFIG.replace('backend = "vllm"', f'backend = "vllm"\ncache = "{shared}"')), out, engines=Recorder())
    shutil.rmtree(shared.parent)
    with pytest.raises(DualjudgeError, match="kept its replies in the shared cache .* which is not there"):
        reproduce(out, sample=10, seed=1, engines=Recorder())
