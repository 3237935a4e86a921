"""Runs with models side by side on device groups (scripted engines): the same work as one group at a
time, jobs overlapping and recorded, judges judging answers as they come, a failing job stopping all."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path

from dualjudge.errors import ServerStartFailed
from dualjudge.inference.types import EngineDown
from dualjudge.runs.progress import QuietProgress
from dualjudge.studies.job import run_job
from tests.helpers.runs import CONFIG, Recorder, config

TWO_GROUPS = CONFIG.replace('backend = "vllm"', 'backend = "vllm"\ndevices = [[0], [1]]')
ONE_GROUP = CONFIG.replace('backend = "vllm"', 'backend = "vllm"\ndevices = [[0]]')


def work(out: Path) -> dict[str, object]:
    """What a run made: request keys, and every work row's key and content."""
    with sqlite3.connect(out / "results.sqlite") as con:
        made: dict[str, object] = {"requests": sorted(k for (k,) in con.execute("SELECT key FROM request_log"))}
        for table in ("answers", "verdicts", "order_probe", "padding_texts", "padding_probe"):
            made[table] = sorted(
                tuple(r) for r in con.execute(f"SELECT * FROM {table}").fetchall() for r in [r[:-1]]
            )  # all but `updated`
    return made


def jobs(out: Path) -> list[dict[str, object]]:
    return json.loads((out / "manifest.json").read_text())["jobs"]


def overlap(a: dict[str, object], b: dict[str, object]) -> bool:
    return float(a["started_at"]) < float(b["ended_at"]) and float(b["started_at"]) < float(a["ended_at"])  # type: ignore[arg-type]


def test_side_by_side_does_the_same_work_as_one_group_at_a_time(tmp_path):
    one, two = Recorder(), Recorder()
    run_job(config(tmp_path, ONE_GROUP), tmp_path / "one", engines=one)
    run_job(config(tmp_path, TWO_GROUPS), tmp_path / "two", engines=two)
    assert work(tmp_path / "one") == work(tmp_path / "two")
    assert one.calls == two.calls == len(work(tmp_path / "two")["requests"])  # type: ignore[arg-type]
    # one group: the models in turn, as before; two groups: each model loaded once, on its own core
    assert one.loaded == ["smollm2-135m-instruct", "gemma-3-270m", "smollm2-135m-instruct"]
    assert sorted(two.loaded) == ["gemma-3-270m", "smollm2-135m-instruct"]
    assert {m: g.label for m, g in two.placed} == {"smollm2-135m-instruct": "cpu:0", "gemma-3-270m": "cpu:1"}


def test_the_manifest_records_every_job_with_its_group_and_times(tmp_path):
    run_job(config(tmp_path, TWO_GROUPS), tmp_path / "run", engines=Recorder())
    recorded = jobs(tmp_path / "run")
    in_order = sorted(recorded, key=lambda j: (j["group"], j["started_at"]))
    assert [(j["model"], j["stage"], j["group"], j["loaded"]) for j in in_order] == [
        ("smollm2-135m-instruct", "systems", "cpu:0", True),
        ("smollm2-135m-instruct", "judges", "cpu:0", False),
        ("gemma-3-270m", "systems", "cpu:1", True),
        ("gemma-3-270m", "judges", "cpu:1", False),
    ]
    assert all(set(j) >= {"model", "stage", "group", "started_at", "ended_at"} for j in recorded)
    assert all(float(j["started_at"]) <= float(j["ended_at"]) for j in recorded)
    by = {(j["model"], j["stage"]): j for j in recorded}
    assert overlap(by[("smollm2-135m-instruct", "systems")], by[("gemma-3-270m", "systems")])
    for model in ("smollm2-135m-instruct", "gemma-3-270m"):  # the judges job runs on in the systems job's load
        assert by[(model, "judges")]["started_at"] == by[(model, "systems")]["ended_at"]
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["devices"] == ["cpu:0", "cpu:1"]
    # a rerun adds its own (cache-only) jobs and keeps the first session's
    run_job(config(tmp_path, TWO_GROUPS), tmp_path / "run", engines=Recorder())
    again = jobs(tmp_path / "run")
    assert len(again) == 8 and len({j["session"] for j in again}) == 2
    assert not any(j["loaded"] for j in again[4:])


class Slow(Recorder):
    """gemma-3-270m answers slowly; every engine records when each of its requests was answered."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: dict[str, list[float]] = {}

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        async with super().open(card, on_event, group) as engine:
            generate = engine.generate
            one_at_a_time = asyncio.Lock()

            async def timed(request):  # type: ignore[no-untyped-def]
                if card.name == "gemma-3-270m" and (request.constraint is None or request.constraint.kind != "json"):
                    async with one_at_a_time:  # about 0.5 s for its answers
                        await asyncio.sleep(0.01)
                result = await generate(request)
                self.answered.setdefault(card.name, []).append(asyncio.get_running_loop().time())
                return result

            engine.generate = timed
            yield engine


def test_a_judge_judges_the_first_answers_while_a_slower_model_still_answers(tmp_path, monkeypatch):
    monkeypatch.setattr("dualjudge.inference.devices.allowed_cores", lambda: [0, 1, 2])
    text = CONFIG.replace('backend = "vllm"', 'backend = "vllm"\ndevices = [[0], [1], [2]]')
    text = text.replace('[judges]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]', '[judges]\nmodels = ["gemma-3-4b-it"]')
    assert '"gemma-3-4b-it"' in text
    engines = Slow()
    progress = Active()
    run_job(config(tmp_path, text), tmp_path / "run", engines=engines, progress=progress)
    recorded = {(j["model"], j["stage"]): j for j in jobs(tmp_path / "run") if not j["replica"]}
    # the judge starts once there are answers to judge, on a group the slow model does not hold
    assert recorded[("gemma-3-4b-it", "judges")]["group"] != recorded[("gemma-3-270m", "systems")]["group"]
    # the judge's first verdicts came before the slow system model's last answer
    assert min(engines.answered["gemma-3-4b-it"]) < max(engines.answered["gemma-3-270m"])
    assert progress.most >= 2  # the judge's stage and the slow model's on show at once


class Active(QuietProgress):
    """Counts the stages active at once."""

    def __init__(self) -> None:
        super().__init__()
        self.active = self.most = 0

    def stage(self, name: str, total: int, from_cache: bool = False):  # type: ignore[no-untyped-def]
        super().stage(name, total, from_cache)
        self.active += 1
        self.most = max(self.most, self.active)
        progress = self

        class Line:
            def advance(self, tokens_so_far: int | None = None) -> None:
                pass

            def end(self) -> None:
                progress.active -= 1

        return Line()


class FailsToLoad(Recorder):
    """gemma-3-270m's engine fails to start, after smollm's has started."""

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        if card.name == "gemma-3-270m":
            await asyncio.sleep(0.01)
            raise ServerStartFailed("vLLM server for gemma-3-270m exited with status 1 while starting")
        async with super().open(card, on_event, group) as engine:
            yield engine


def test_a_model_that_cannot_load_stops_its_own_jobs_only_and_every_engine_is_closed(tmp_path):
    engines = FailsToLoad()
    report = run_job(config(tmp_path, TWO_GROUPS), tmp_path / "run", engines=engines).report
    assert engines.loaded == engines.closed == ["smollm2-135m-instruct"]  # every started engine closed
    assert report.failed_jobs and all("gemma-3-270m" in line for line in report.failed_jobs)
    assert any("exited with status 1 while starting" in line for line in report.failed_jobs)
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:  # smollm's own answers all finished
        assert dict(
            con.execute("SELECT status, COUNT(*) FROM answers WHERE system_model = 'smollm2-135m-instruct' GROUP BY status")
        ) == {"ok": 24}
    # a rerun with a working engine does only gemma's work and sends nothing twice
    resumed = Recorder()
    assert not run_job(config(tmp_path, TWO_GROUPS), tmp_path / "run", engines=resumed).report.failed_jobs
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:
        assert con.execute("SELECT COUNT(*) - COUNT(DISTINCT key) FROM request_log WHERE ok = 1").fetchone()[0] == 0
        assert dict(con.execute("SELECT status, COUNT(*) FROM answers GROUP BY status")) == {"ok": 48}


def test_the_rich_display_shows_every_active_stage_at_once():
    from dualjudge.cli.run import RichProgress

    progress = RichProgress()
    try:
        a = progress.stage("systems: smollm2-135m-instruct [cpu:0]", 10)
        b = progress.stage("systems: gemma-3-270m [cpu:1]", 20)
        a.advance(5)
        b.advance(7)
        b.advance(9)
        shown = {t.description: t.completed for t in progress.bar.tasks}
        assert shown == {"systems: smollm2-135m-instruct [cpu:0]": 1, "systems: gemma-3-270m [cpu:1]": 2}
        cache = progress.stage("judges: x (from cache)", 3, from_cache=True)
        cache.end()  # a cache pass that answered nothing leaves the display
        a.end()
        assert [t.description for t in progress.bar.tasks] == [
            "systems: smollm2-135m-instruct [cpu:0]",
            "systems: gemma-3-270m [cpu:1]",
        ]
        assert progress.bar.tasks[0].total == 1  # an ended stage's total is what it did
    finally:
        progress.close()


class Gate:
    """An engine whose answers wait for the test to release them; counts what it was sent."""

    def __init__(self, fail_first: bool = False) -> None:
        self.sent = 0
        self.release = asyncio.Event()
        self.fail_first = fail_first

    async def generate(self, request):  # type: ignore[no-untyped-def]
        from dualjudge.inference.types import GenerationResult

        self.sent += 1
        await self.release.wait()
        if self.fail_first and self.sent == 1:
            return GenerationResult(None, error="ConnectionError: engine down")
        return GenerationResult("SIGN_TYPE: no_entry", finish_reason="stop", completion_tokens=4)


def request(temperature: float = 0.0, seed: int | None = 0):  # type: ignore[no-untyped-def]
    from dualjudge.inference.types import GenerationRequest, Message, Sampling

    return GenerationRequest((Message("user", "Which sign is this?"),), Sampling(temperature=temperature, max_tokens=8, seed=seed))


async def ask_twice(engine: Gate, tmp_path: Path, req) -> tuple[list[object], object]:  # type: ignore[no-untyped-def]
    from dualjudge.runs.caller import CachingCaller
    from dualjudge.storage.store import Store

    store = Store(tmp_path / "s.sqlite")
    caller = CachingCaller(store, "m", "m@test", "session", engine)  # type: ignore[arg-type]
    both = asyncio.gather(caller(req), caller(req))
    await asyncio.sleep(0.01)  # both asked, the first in flight
    engine.release.set()
    results = await both
    store.close()
    return results, caller.usage


def test_a_request_asked_again_while_in_flight_is_sent_once(tmp_path):
    engine = Gate()
    (a, b), usage = asyncio.run(ask_twice(engine, tmp_path, request()))
    assert engine.sent == 1 and a is b and usage.requests == 1 and usage.cache_hits == 1
    # a request that is not deterministic (sampled without a seed) is never shared
    engine = Gate()
    asyncio.run(ask_twice(engine, tmp_path / "b", request(temperature=0.7, seed=None)))
    assert engine.sent == 2


def test_a_waiter_sends_its_own_request_when_the_first_fails(tmp_path):
    engine = Gate(fail_first=True)
    (a, b), usage = asyncio.run(ask_twice(engine, tmp_path, request()))
    assert engine.sent == 2 and not a.ok and b.ok and usage.requests == 2  # type: ignore[attr-defined]


def test_status_lists_the_latest_sessions_jobs_with_their_groups(cli, tmp_path):
    run_job(config(tmp_path, TWO_GROUPS), tmp_path / "run", engines=Recorder())
    code, out, _ = cli("status", str(tmp_path / "run"))
    assert code == 0
    rows = [line for line in out.splitlines() if "cpu:" in line]
    assert len(rows) == 4
    assert any("smollm2-135m-instruct" in r and "systems" in r and "cpu:0" in r and "yes" in r for r in rows)
    assert any("gemma-3-270m" in r and "judges" in r and "cpu:1" in r and " no " in r for r in rows)


class Paced(Recorder):
    """Every request takes `delay_s`, each engine serves `capacity` at once, and each request's key is
    recorded with the device group that answered it."""

    def __init__(self, delay_s: float = 0.01, capacity: int = 2, slow: dict[str, float] | None = None) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.slow = slow or {}  # per model: the delay of its answers (requests without a JSON constraint)
        self.capacity = capacity
        self.served: list[tuple[str, str, str]] = []  # (model, group, prompt) of every request answered

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        async with super().open(card, on_event, group) as engine:
            generate = engine.generate
            slots = asyncio.Semaphore(self.capacity)

            async def paced(request):  # type: ignore[no-untyped-def]
                answer = request.constraint is None or request.constraint.kind != "json"
                async with slots:
                    await asyncio.sleep(self.slow.get(card.name, self.delay_s) if answer else self.delay_s)
                    result = await generate(request)
                self.served.append((card.name, group.label, request.key(f"{card.name}@test")))
                return result

            engine.generate = paced
            engine.capacity = self.capacity
            yield engine


THREE_GROUPS_ONE_JUDGE = CONFIG.replace(
    'backend = "vllm"', 'backend = "vllm"\nreplica_min_s = 0\ndevices = [[0], [1], [2]]'
).replace('[judges]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]', '[judges]\nmodels = ["gemma-3-4b-it"]')


def test_replicas_on_idle_groups_share_a_job_and_change_nothing_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr("dualjudge.inference.devices.allowed_cores", lambda: [0, 1, 2])
    monkeypatch.setattr("dualjudge.runs.runner.SPARE_CHECK_S", 0.02)
    assert "replica_min_s = 0" in THREE_GROUPS_ONE_JUDGE and '["gemma-3-4b-it"]' in THREE_GROUPS_ONE_JUDGE
    split, alone = Paced(), Paced()
    run_job(config(tmp_path, THREE_GROUPS_ONE_JUDGE), tmp_path / "split", engines=split)
    run_job(
        config(tmp_path, THREE_GROUPS_ONE_JUDGE.replace("devices = [[0], [1], [2]]", "devices = [[0]]")),
        tmp_path / "alone",
        engines=alone,
    )
    # the same work, every request key sent once, whichever server answered it
    assert work(tmp_path / "split") == work(tmp_path / "alone")
    keys = [k for _, _, k in split.served]
    assert len(keys) == len(set(keys)) == split.calls == alone.calls
    assert sorted(keys) == sorted(k for _, _, k in alone.served)
    # the judge's requests were shared between its first server and a replica on another group
    judged = {g for m, g, _ in split.served if m == "gemma-3-4b-it"}
    assert len(judged) >= 2, split.served
    recorded = jobs(tmp_path / "split")
    replicas = [j for j in recorded if j["replica"]]
    assert replicas and all(j["requests"] is not None for j in replicas)
    first = {(j["model"], j["stage"]): j["group"] for j in recorded if not j["replica"]}
    for j in replicas:  # a replica runs on another group than its job's first server, within the job's time
        assert j["group"] != first[(j["model"], j["stage"])]
    served = {(m, g): 0 for m, g, _ in split.served}
    for m, g, _ in split.served:
        served[(m, g)] += 1
    judge_replicas = [j for j in replicas if j["model"] == "gemma-3-4b-it"]
    assert sum(j["requests"] for j in judge_replicas) == sum(
        n for (m, g), n in served.items() if m == "gemma-3-4b-it" and g != first[("gemma-3-4b-it", "judges")]
    )
    assert not [j for j in jobs(tmp_path / "alone") if j["replica"]]  # one group: never a replica


def test_no_replicas_when_the_settings_say_so(tmp_path, monkeypatch):
    monkeypatch.setattr("dualjudge.inference.devices.allowed_cores", lambda: [0, 1, 2])
    monkeypatch.setattr("dualjudge.runs.runner.SPARE_CHECK_S", 0.02)
    engines = Paced()
    run_job(
        config(tmp_path, THREE_GROUPS_ONE_JUDGE.replace("replica_min_s = 0", "replicas = false")), tmp_path / "run", engines=engines
    )
    assert not [j for j in jobs(tmp_path / "run") if j["replica"]]
    assert len({g for m, g, _ in engines.served if m == "gemma-3-4b-it"}) == 1
    assert sorted(engines.loaded) == ["gemma-3-270m", "gemma-3-4b-it", "smollm2-135m-instruct"]


def test_an_early_judge_judges_other_answers_and_its_systems_load_joins_it(tmp_path, monkeypatch):
    monkeypatch.setattr("dualjudge.inference.devices.allowed_cores", lambda: [0, 1, 2])
    text = CONFIG.replace('backend = "vllm"', 'backend = "vllm"\nreplica_min_s = 1e9\ndevices = [[0], [1], [2]]').replace(
        '[judges]\nmodels = ["smollm2-135m-instruct", "gemma-3-270m"]', '[judges]\nmodels = ["smollm2-135m-instruct"]'
    )
    assert "replica_min_s" in text
    engines = Paced(slow={"smollm2-135m-instruct": 0.1})  # smollm answers slowly, gemma quickly
    run_job(config(tmp_path, text), tmp_path / "run", engines=engines)
    recorded = jobs(tmp_path / "run")
    by = {(j["model"], j["stage"], j["replica"]): j for j in recorded}
    systems, judges = by[("smollm2-135m-instruct", "systems", False)], by[("smollm2-135m-instruct", "judges", False)]
    # smollm's judging started on another group while smollm still answered (gemma's answers first) ...
    assert judges["group"] != systems["group"] and judges["started_at"] < systems["ended_at"] and judges["loaded"]
    early = [m for m, g, _ in engines.served if m == "smollm2-135m-instruct" and g == judges["group"]]
    assert early
    # ... and smollm's systems group joined it in the same load when its answers were done
    joined = by[("smollm2-135m-instruct", "judges", True)]
    assert joined["group"] == systems["group"] and joined["loaded"] is False and joined["requests"] > 0
    assert joined["started_at"] == systems["ended_at"]
    assert engines.loaded.count("smollm2-135m-instruct") == 2  # the spare group's load, and the first one
    alone = Paced()
    run_job(config(tmp_path, text.replace("devices = [[0], [1], [2]]", "devices = [[0]]")), tmp_path / "alone", engines=alone)
    assert work(tmp_path / "run") == work(tmp_path / "alone")
    assert engines.calls == alone.calls


class ReplicaDies(Paced):
    """The second engine opened for gemma-3-4b-it goes down after answering two requests."""

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        async with super().open(card, on_event, group) as engine:
            if card.name == "gemma-3-4b-it" and self.loaded.count(card.name) == 2:
                generate, answered = engine.generate, []

                async def dies(request):  # type: ignore[no-untyped-def]
                    if len(answered) >= 2:
                        raise EngineDown("the replica's server exited")
                    answered.append(request)
                    return await generate(request)

                engine.generate = dies
            yield engine


def test_a_replica_that_goes_down_leaves_and_the_job_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr("dualjudge.inference.devices.allowed_cores", lambda: [0, 1, 2])
    monkeypatch.setattr("dualjudge.runs.runner.SPARE_CHECK_S", 0.02)
    engines, progress = ReplicaDies(), QuietProgress()
    run_job(config(tmp_path, THREE_GROUPS_ONE_JUDGE), tmp_path / "run", engines=engines, progress=progress)
    assert engines.loaded.count("gemma-3-4b-it") >= 2
    assert any("went down; the job goes on without it" in n for n in progress.notes), progress.notes
    alone = Paced()
    run_job(
        config(tmp_path, THREE_GROUPS_ONE_JUDGE.replace("devices = [[0], [1], [2]]", "devices = [[0]]")),
        tmp_path / "alone",
        engines=alone,
    )
    assert work(tmp_path / "run") == work(tmp_path / "alone")  # nothing lost, nothing recorded twice
