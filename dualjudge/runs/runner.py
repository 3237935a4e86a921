"""The resumable runner: (model, stage) jobs scheduled side by side on the run's device groups.

    systems job of a model:  answer every (variant, repeat, strategy) not yet done, then restate its
                             losing answers at length (the padding probe's inputs)
    judges job of a model:   judge every answer not yet judged (each system model's answers once its
                             systems job is done), then the order probe, the re-judged padded answers
                             and the stability passes, once every systems job is done

Which job runs when and where is schedule.py's policy: jobs run at once on free device groups
(inference/devices.py), and a model that is both system and judge stays loaded on its group from its
systems job into its judges job when that keeps no systems job waiting. A group no waiting job can use
serves a running job as a replica: one more server of its model, joined to the job's servers
(inference/replicas.py), which share the job's remaining requests (each request key is still sent once,
by the job's one caching caller); it leaves when the job ends, or serves the model's next job.

Before a model is loaded, a cache-only pass answers whatever the response cache already holds; the
model is loaded only if work remains. Rerunning on the same directory does only the missing work.
Every job is recorded (store meta `jobs`, then manifest.json) with its group and its times. All store
writes happen on the event loop's thread: the store stays one writer however many jobs run.
The steps themselves are in steps.py; the run directory's files are named in dualjudge/rundir.py.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError, ServerStartFailed
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.devices import DeviceGroup, check_placement, resolve
from dualjudge.inference.engines import EngineFactory, Engines, runs_on_devices
from dualjudge.inference.replicas import Server, Servers
from dualjudge.inference.types import Engine, EngineDown, capacity
from dualjudge.rundir import RunDir
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CacheMiss, CachingCaller
from dualjudge.runs.progress import Progress, QuietProgress, run_in_order
from dualjudge.runs.schedule import Job, Schedule
from dualjudge.runs.steps import Step
from dualjudge.runs.study import job_tokens, stages
from dualjudge.runs.testbed import build_testbed, testbed_items
from dualjudge.storage.rows import Answer, AnswerKey, AnswerRow, JobRecord
from dualjudge.storage.store import BATCH_S, WORK_TABLES, Store
from dualjudge.testbed.catalogue import default_catalogue

JOBS_META = "jobs"  # store meta key: every job of every session, as manifest.json["jobs"] lists them
RUBRICS_META = "rubric_sha256"  # store meta key: each rubric variant's rubric when the run started


def recorded_jobs(store: Store) -> list[JobRecord]:
    """Every job of every session of a run, as the store keeps them (manifest.json["jobs"])."""
    return [JobRecord.model_validate(j) for j in json.loads(store.get_meta(JOBS_META) or "[]")]


@dataclass
class RunReport:
    out: Path
    sessions_requests: int = 0
    cache_hits: int = 0
    models_loaded: list[str] = field(default_factory=list)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    verdict_failures: dict[str, dict[str, int]] = field(default_factory=dict)  # per judge model, by kind
    jobs: list[JobRecord] = field(default_factory=list)  # this session's jobs (manifest.json["jobs"])
    restarts: list[str] = field(default_factory=list)  # each engine that went down and was started again, and why
    failed_jobs: list[str] = field(default_factory=list)  # each job that stopped (its model could not serve), and why


def expected_costs(config: RunConfig, items: int) -> dict[tuple[str, str], float]:
    """Each job's expected length: its completion tokens at max_tokens, over the card's throughput hint
    when it has one, else times the model's size (decoding is memory-bound: a bigger model is slower).
    This orders the jobs (longest first); exact counts are `dualjudge plan`'s."""
    system_tokens, judge_tokens = job_tokens(config, items, "systems"), job_tokens(config, items, "judges")

    def length(model: str, tokens: float) -> float:
        card = config.card(model)
        return tokens / card.throughput_hint if card.throughput_hint else tokens * (card.parameters_b or 1.0)

    return {**{(m, "systems"): length(m, system_tokens) for m in config.systems.models},
            **{(m, "judges"): length(m, judge_tokens) for m in config.judges.models}}


def study_jobs(config: RunConfig, items: int, local: Callable[[str], bool] = lambda _: True
               ) -> tuple[list[Job], str | None]:
    """The run's jobs, ranked by `expected_costs`, and the system model that keeps the last systems slot
    (the last configured one, when it also judges)."""
    costs = expected_costs(config, items)
    systems, judges = config.systems.models, config.judges.models
    jobs = [Job(m, "systems", costs[(m, "systems")], local(m)) for m in systems] + \
           [Job(m, "judges", costs[(m, "judges")], local(m)) for m in judges]
    return jobs, systems[-1] if systems[-1] in judges else None


def runs_here(config: RunConfig, model: str) -> bool:
    """Whether a model runs on this machine's devices (not at attached endpoints or a hosted API)."""
    return runs_on_devices(config.card(model), config.engine)


def all_groups(config: RunConfig) -> list[DeviceGroup]:
    """The run's device groups, as `engine.devices` names them on this machine."""
    local = [m for m in config.all_models() if runs_here(config, m)]
    return resolve(config.engine.devices, len(local), in_process=config.engine.backend == "transformers")


def device_groups(config: RunConfig) -> list[DeviceGroup]:
    """The run's device groups, checked to hold every model that runs here (a one-line error if not)."""
    groups = all_groups(config)
    check_placement(groups, [config.card(m) for m in config.all_models() if runs_here(config, m)])
    return groups


YIELD_EVERY = 32  # cache-only answers between two yields to the event loop
SPARE_CHECK_S = 5.0  # how often a run with an idle group looks again for a job worth a replica


class ServerFailed(DualjudgeError):
    """A model's engine did not start, or went down, more often than `engine.server_restarts` allows: its
    job stops (the other jobs go on), and a rerun does its missing work."""


class Lease:
    """A model on a device group for one or more jobs: its steps, each answered from the cache first;
    the engine is opened (at the first step with work left) only if the cache cannot answer all. When
    the engine does not start (its server exits or times out while loading) or goes down (its server died
    or hangs, or every endpoint keeps failing), the step's work in flight is dropped unrecorded, the engine
    is closed (its group freed) and opened again (`engine.server_restarts` times), and the step goes on
    with what is left; past that, ServerFailed: the job stops with one line."""

    def __init__(self, runner: Runner, model: str, group: DeviceGroup | None, stack: AsyncExitStack) -> None:
        self.runner = runner
        self.model = model
        self.group = group
        self.stack = stack
        self.caller: CachingCaller | None = None
        self.cached: CachingCaller | None = None
        self.loads = 0  # times the engine was opened
        self.restarts_left = runner.config.engine.server_restarts
        self.servers = Servers("")  # its own engine and the replicas that joined it
        self.engine: Engine | None = None  # its own engine, while open
        self.backlog = 0  # tasks of the step being sent not yet started
        self._answered = 0  # tasks of that step answered so far, since `_sending`
        self._sending = 0.0
        self._callers: list[CachingCaller] = []
        self._engine: AsyncExitStack | None = None

    async def run(self, stage: list[Step[Any]]) -> None:
        r = self.runner
        card = r.config.card(self.model)
        identity = await r.engines.identity(card)
        self.servers.model_identity = identity
        if self.cached is None:
            self.cached = CachingCaller(r.store, self.model, identity, r.session)
        suffix = f" [{self.group.label}]" if len(r.groups) > 1 and self.group is not None else ""
        for step in stage:
            tasks = step.tasks()
            if not tasks:
                continue
            remaining = []
            line = r.progress.stage(f"{step.name}{suffix} (from cache)", len(tasks), from_cache=True)
            for i, t in enumerate(tasks):
                if i % YIELD_EVERY == YIELD_EVERY - 1:
                    await asyncio.sleep(0)  # answers from the cache never wait: let the other jobs' traffic run
                try:
                    await step.work(t, self.cached)
                    line.advance()
                except CacheMiss:
                    remaining.append(t)
            line.end()
            while remaining:
                if self.caller is None:
                    try:
                        await self._open(card, identity)
                    except (ServerStartFailed, EngineDown) as e:  # the server exited or timed out while loading
                        await self._engine_down(f"it did not start: {' '.join(str(e).split())}")
                        continue
                assert self.caller is not None
                try:
                    await self._send(step, f"{step.name}{suffix}", remaining, self.caller)
                    remaining = []
                except EngineDown as e:
                    await self._engine_down(str(e))
                    remaining = step.tasks()

    async def _open(self, card: ModelCard, identity: str) -> None:
        r = self.runner
        engine_stack = AsyncExitStack()
        engine = await engine_stack.enter_async_context(r.engines.open(card, r.progress.note, self.group))
        if self.loads == 0:
            self.stack.push_async_callback(self._close_engine)
        self._engine, self.engine = engine_stack, engine
        self.loads += 1
        r.report.models_loaded.append(self.model)
        self.servers.add(engine, self.group.label if self.group is not None else "elsewhere", first=True)
        self.caller = CachingCaller(r.store, self.model, identity, r.session, self.servers)
        self._callers.append(self.caller)

    async def _close_engine(self) -> None:
        stack, self._engine, self.caller = self._engine, None, None
        if self.engine is not None:
            self.servers.remove(self.engine)
            self.engine = None
        if stack is not None:
            await stack.aclose()

    # -- replicas ------------------------------------------------------------------------------
    def join(self, engine: Engine, group: DeviceGroup) -> Server:
        """A replica on another group joins this lease's servers (its requests are shared at once)."""
        return self.servers.add(engine, group.label)

    def leave(self, server: Server) -> None:
        self.servers.remove(server.engine)

    def work_left(self) -> float:
        """Seconds of work left in the step being sent, per server at the pace measured so far in it
        (0 before its first answer: unknown)."""
        elapsed = time.monotonic() - self._sending
        if not self.backlog or not self._answered or elapsed <= 0:
            return 0.0
        per_server = self._answered / elapsed / max(1, len(self.servers.servers))
        return self.backlog / per_server

    async def _engine_down(self, reason: str) -> None:
        """Close the engine that went down; open it again when a restart is left, else stop the run."""
        where = f" on {self.group.label}" if self.group is not None else ""
        await self._close_engine()
        if self.restarts_left <= 0:
            raise ServerFailed(f"{self.model}{where} stopped: {reason}")
        self.restarts_left -= 1
        self.runner.report.restarts.append(f"{self.model}{where}: {reason}")
        self.runner.progress.note(f"{self.model}{where} stopped: {reason}; starting it again "
                                  f"({self.restarts_left} restart(s) left)")

    async def _send(self, step: Step[Any], name: str, tasks: list[Any], caller: CachingCaller) -> None:
        start = caller.usage.completion_tokens
        self.backlog, self._answered, self._sending = len(tasks), 0, time.monotonic()

        async def one(t: Any) -> int:
            self.backlog -= 1
            await step.work(t, caller)
            self._answered += 1
            return caller.usage.completion_tokens - start

        line = self.runner.progress.stage(name, len(tasks))
        try:
            await run_in_order(tasks, one, lambda: capacity(self.servers), line)  # grows as replicas join
        finally:
            self.backlog = 0
            line.end()

    def close(self) -> None:
        """Count what this lease sent and answered from the cache into the run's report."""
        report = self.runner.report
        for caller in self._callers:
            report.sessions_requests += caller.usage.requests
            report.cache_hits += caller.usage.cache_hits
        if self.cached is not None:
            report.cache_hits += self.cached.usage.cache_hits


class Runner:
    def __init__(self, config: RunConfig, out: Path, progress: Progress | None = None,
                 engines: EngineFactory | None = None) -> None:
        self.config = config
        self.out = out
        self.progress = progress or QuietProgress()
        self.engines = engines or Engines(config.engine, seed=config.run.seed, log_dir=RunDir(out).logs)
        self.session = secrets.token_hex(6)
        self.report = RunReport(out)
        self.catalogue = default_catalogue()
        self.groups = device_groups(config)
        out.mkdir(parents=True, exist_ok=True)
        cache = Path(config.engine.cache).expanduser() if config.engine.cache else None
        self.store = Store(RunDir(out).store, cache)
        self._check_fingerprint()
        self._earlier_jobs = recorded_jobs(self.store)  # other sessions' jobs, kept as they are
        self._answers_ready = asyncio.Event()
        self._leases: dict[Job, Lease] = {}  # each running job's lease (its servers)
        self._ended: dict[Job, asyncio.Event] = {}  # set when the job has ended
        self._failed: dict[str, str] = {}  # models whose job stopped in this session, and why

    def _check_fingerprint(self) -> None:
        fp = self.config.fingerprint()
        stored = self.store.get_meta("config_fingerprint")
        rubrics = self.config.rubric_hashes()
        recorded = json.loads(self.store.get_meta(RUBRICS_META) or "null")
        if stored is not None and recorded is not None:
            for variant, sha in rubrics.items():
                if variant in recorded and recorded[variant] != sha:
                    raise DualjudgeError(
                        f"{self.out}: the rubric of judge variant {variant} changed since this run started (sha256 "
                        f"{recorded[variant][:12]} then, {sha[:12]} now); verdicts of two rubrics would share one "
                        f"label: restore the file, or add the new text as a new variant (rubric:NAME) or another --out")
        if stored is None:
            self.store.set_meta("config_fingerprint", fp)
            self.store.set_meta("config", self.config.model_dump_json())
            self.store.set_meta(RUBRICS_META, json.dumps(rubrics))
        elif recorded is None:
            self.store.set_meta(RUBRICS_META, json.dumps(rubrics))  # a run from before rubric hashes were kept
        if stored is not None and stored != fp:
            raise DualjudgeError(f"{self.out} holds a run of a different configuration; use another --out "
                                 f"(responses are reused through the cache)")

    def local(self, model: str) -> bool:
        """Whether the model runs on this machine's devices (not at attached endpoints or a hosted API)."""
        return runs_here(self.config, model)

    def holds(self, model: str, group: DeviceGroup) -> bool:
        return group.holds(self.config.card(model))

    # -- orchestration -------------------------------------------------------------------------
    def prepare(self) -> list[Any]:
        """The run's testbed (built or checked) and its items; the runner then knows each variant's sign."""
        variants = build_testbed(self.config, RunDir(self.out).testbed)
        self.variants = {v.variant_id: v for v in variants}
        return testbed_items(self.config, RunDir(self.out).testbed, variants)

    def schedule(self, items: int) -> Schedule:
        jobs, last = study_jobs(self.config, items, self.local)
        return Schedule(jobs, self.groups, self.holds, last_system=last, spare=self.config.engine.replicas)

    async def run(self) -> RunReport:
        items = self.prepare()
        ctx = steps.Context(self.config, self.store, self.catalogue, self.answers, self.planned_of(items))
        schedule = self.schedule(len(items))
        lanes: dict[asyncio.Task[None], DeviceGroup | None] = {}
        free = list(self.groups)
        flusher = asyncio.create_task(self._flush_batches())
        try:
            while not schedule.complete():
                for job, group in schedule.assign(free):
                    if group is not None:
                        free.remove(group)
                    lanes[asyncio.create_task(self._lane(schedule, ctx, items, job, group))] = group
                for job, group in schedule.replicate(free, self._work_left, self.config.engine.replica_min_s):
                    free.remove(group)
                    lanes[asyncio.create_task(self._replica(schedule, job, group))] = group
                assert lanes, "the schedule is stuck"
                done, _ = await asyncio.wait(lanes, timeout=SPARE_CHECK_S if free and schedule.spare else None,
                                             return_when=asyncio.FIRST_COMPLETED)
                for lane in done:
                    group = lanes.pop(lane)
                    lane.result()  # a failed job stops the run (the others are cancelled below)
                    if group is not None:
                        free.append(group)
            await asyncio.gather(*lanes)  # replicas of the last jobs, leaving now that their jobs have ended
            lanes.clear()
        finally:
            for lane in lanes:
                lane.cancel()
            await asyncio.gather(*lanes, return_exceptions=True)  # every engine closed, every server stopped
            flusher.cancel()
            await asyncio.gather(flusher, return_exceptions=True)
            self.store.flush()
        for table in WORK_TABLES:
            kinds = self.store.error_kinds(table)
            if kinds:
                self.report.failures[table] = kinds
        self.report.verdict_failures = self.store.error_kinds_by("verdicts", "judge_model")
        return self.report

    async def _flush_batches(self) -> None:
        """Commit the store's open batch whenever it is older than BATCH_S, while the run goes on."""
        while True:
            await asyncio.sleep(BATCH_S)
            self.store.flush_if_due()

    async def _lane(self, schedule: Schedule, ctx: steps.Context, items: list[Any], job: Job,
                    group: DeviceGroup | None) -> None:
        """One model on one group: its job, and its judges job after its systems job when the schedule
        keeps it there (same load). A job whose model cannot serve (ServerFailed) stops alone: it is
        recorded as failed, the jobs waiting on it go on, and the model's later jobs in this session stop
        at once (what failed to load once fails again)."""
        async with AsyncExitStack() as stack:
            lease = Lease(self, job.model, group, stack)
            try:
                current: Job | None = job
                ended: float | None = None  # a following job starts the moment its systems job ends
                while current is not None:
                    self._leases[current] = lease
                    record, loads_before = self._job_started(current, group, at=ended), lease.loads
                    try:
                        if current.model in self._failed:
                            raise ServerFailed(f"{current.model}: not started ({self._failed[current.model]})")
                        following = await self._job(schedule, ctx, items, current, group, lease)
                    except ServerFailed as e:
                        self._job_failed(schedule, current, record, str(e))
                        return
                    ended = self._job_ended(record, lease.loads > loads_before)
                    self._ended_event(current).set()
                    if following is not None and group is not None and schedule.running[following] != group:
                        # its judges job started early elsewhere: this group and load join it as a replica
                        if lease.engine is None:
                            schedule.release(following, group)  # nothing loaded here (all from the cache)
                        else:
                            await self._serve(schedule, following, group, lease.engine, self._job_started(
                                following, group, at=ended, replica=True), loaded=False)
                        following = None
                    current = following
            finally:
                lease.close()

    async def _job(self, schedule: Schedule, ctx: steps.Context, items: list[Any], current: Job,
                   group: DeviceGroup | None, lease: Lease) -> Job | None:
        """Run one job's stages; returns the model's judges job when it runs on in this load."""
        if current.stage == "judges":
            await self._judges(lease, ctx, items, schedule, current.model)
            schedule.end(current)
            return None
        await lease.run([s.step(ctx, current.model, items, None) for s in stages("systems")])
        following = schedule.keep(current)
        if following is not None and schedule.running[following] == group:
            self._leases[following] = lease  # its judges job runs on in this load
        self._answers_arrived()
        return following

    def _answers_arrived(self) -> None:
        """Wake the judges waiting for answers: a systems job has ended."""
        self._answers_ready.set()
        self._answers_ready = asyncio.Event()

    def _job_failed(self, schedule: Schedule, job: Job, record: JobRecord, reason: str) -> None:
        """A job stopped: recorded with its reason, ended in the schedule (its replicas leave, the judges
        waiting for its answers go on with what there is), and its model's later jobs will not start."""
        self._failed.setdefault(job.model, reason)
        record.failed = reason
        self._job_ended(record, False)
        if job in schedule.running:
            schedule.end(job)
        self._ended_event(job).set()
        if job.stage == "systems":
            self._answers_arrived()
        line = f"the {job.stage} job of {reason}"
        self.report.failed_jobs.append(line)
        self.progress.note(f"{line}; the other jobs go on, and the same command run again redoes its work")

    def _ended_event(self, job: Job) -> asyncio.Event:
        return self._ended.setdefault(job, asyncio.Event())

    def _work_left(self, job: Job) -> float:
        lease = self._leases.get(job)
        return lease.work_left() if lease is not None else 0.0

    async def _replica(self, schedule: Schedule, job: Job, group: DeviceGroup) -> None:
        """One more server of a running job's model on an idle group: loaded (unless the job ends first
        and the schedule has no next job of the model for the group), joined to the job's servers until
        the job ends, then to the model's next job when the schedule moves the group there. A replica
        that fails to start or goes down stops alone: the job goes on."""
        card = self.config.card(job.model)
        record = self._job_started(job, group, replica=True)
        self.progress.note(f"starting a replica of {job.model} on {group.label} for its {job.stage} job "
                           f"(about {self._work_left(job):.0f} s of work left per server)")
        async with AsyncExitStack() as stack:
            opening = asyncio.ensure_future(stack.enter_async_context(self.engines.open(card, self.progress.note, group)))
            current: Job | None = job
            while current is not None and not opening.done():
                ended = asyncio.ensure_future(self._ended_event(current).wait())
                try:
                    await asyncio.wait((opening, ended), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ended.cancel()
                if not opening.done():  # the job ended first: load on for the model's next job, if any
                    at = self._job_ended(record, False)
                    current = self._next_served(schedule, current, group)
                    if current is not None:
                        record = self._job_started(current, group, at=at, replica=True)
            if current is None:
                opening.cancel()
                await asyncio.gather(opening, return_exceptions=True)
                return
            try:
                engine = await opening
            except (DualjudgeError, EngineDown, OSError) as e:
                self.progress.note(f"the replica of {job.model} on {group.label} did not start ({e}); "
                                   f"the job goes on without it")
                schedule.release(current, group)
                self._job_ended(record, False)
                return
            self.report.models_loaded.append(job.model)
            await self._serve(schedule, current, group, engine, record, loaded=True)

    @staticmethod
    def _next_served(schedule: Schedule, job: Job, group: DeviceGroup) -> Job | None:
        """The job of the same model the schedule gave `group` to when `job` ended (same load), if any."""
        return next((j for j, groups in schedule.replicas.items() if group in groups and j.model == job.model), None)

    async def _serve(self, schedule: Schedule, job: Job, group: DeviceGroup, engine: Engine, record: JobRecord,
                     loaded: bool) -> None:
        """Serve `job` as a replica with an open engine until it ends (or the replica goes down), then the
        next job of the same model the schedule gave this group to, in the same load."""
        current: Job | None = job
        while current is not None:
            ended = self._ended_event(current)
            lost = False
            record.requests = 0
            if not ended.is_set():
                server = self._leases[current].join(engine, group)
                waits = (asyncio.ensure_future(ended.wait()), asyncio.ensure_future(server.lost.wait()))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                    self._leases[current].leave(server)
                    record.requests = server.served
                lost = server.lost.is_set() and not ended.is_set()
            at = self._job_ended(record, loaded)
            if lost:
                self.progress.note(f"the replica of {current.model} on {group.label} went down; the job goes on "
                                   f"without it")
                schedule.release(current, group)
                return
            current = self._next_served(schedule, current, group)
            if current is not None:
                record, loaded = self._job_started(current, group, at=at, replica=True), False

    async def _judges(self, lease: Lease, ctx: steps.Context, items: list[Any], schedule: Schedule,
                      judge: str) -> None:
        """Judge each system model's answers as soon as its systems job has ended, then, once every
        systems job has, the probes and the stability passes (the judges stages of study.py, in order)."""
        early = [s for s in stages("judges") if s.as_answers_arrive]
        seen: frozenset[str] = frozenset()
        while True:
            ready = schedule.systems_done
            complete = ready >= schedule.systems_models
            if ready != seen or complete:
                await lease.run([s.step(ctx, judge, items, None if complete else ready) for s in early])
                seen = ready
            if complete:
                break
            if schedule.systems_done == seen:  # no systems job ended while judging: wait for the next
                await self._answers_ready.wait()
        await lease.run([s.step(ctx, judge, items, None) for s in stages("judges") if not s.as_answers_arrive])

    def _job_started(self, job: Job, group: DeviceGroup | None, at: float | None = None,
                     replica: bool = False) -> JobRecord:
        started = at if at is not None else round(time.time(), 3)
        record = JobRecord(model=job.model, stage=job.stage, group=group.label if group is not None else None,
                           started_at=started, session=self.session, replica=replica)
        self.report.jobs.append(record)
        self._save_jobs()
        return record

    def _job_ended(self, record: JobRecord, loaded: bool) -> float:
        record.ended_at = ended = round(time.time(), 3)
        record.loaded = loaded
        self._save_jobs()
        return ended

    def _save_jobs(self) -> None:
        """Every session's jobs, kept in the store as they start and end (a killed session's too)."""
        self.store.set_meta(JOBS_META, json.dumps([j.model_dump() for j in self._earlier_jobs + self.report.jobs]))

    def planned_of(self, items: list[Any]) -> Callable[[str | None], list[AnswerKey]]:
        """The answers the design asks for, of one system model or of all (the probes draw from these)."""
        def planned(model: str | None = None) -> list[AnswerKey]:
            models = self.config.systems.models if model is None else (model,)
            return [t.answer for m in models for t in plan.answer_tasks(self.config, items, m)]
        return planned

    def answers(self, model: str | None = None) -> list[Answer]:
        """This run's answers (of one system model, or of all), with their variant's sign and category."""
        wanted = set(self.config.systems.models) if model is None else {model}
        out = []
        for r in self.store.read(AnswerRow):
            v = self.variants.get(r.variant_id)
            if v is not None and r.system_model in wanted:
                out.append(Answer(r.answer_key, r.text, r.predicted_category, v.sign_code, v.category))
        return out

    async def stage(self, model: str, stage: list[Step[Any]]) -> None:
        """Run one model's steps now, on the largest group that holds it (sequential work: the
        rubric clarification)."""
        group = None
        if self.local(model):
            group = max((g for g in self.groups if self.holds(model, g)), key=lambda g: len(g.ids))
        async with AsyncExitStack() as stack:
            lease = Lease(self, model, group, stack)
            try:
                await lease.run(stage)
            finally:
                lease.close()
