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
The parts: context.py (what a run shares), lease.py (a model on a group, cache first), replica_pool.py
(replicas), job_log.py (every job's record), jobs.py (the jobs and groups); the steps are in steps.py
and the stages' order in study.py; the run directory's files are named in dualjudge/rundir.py.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

from dualjudge.inference.devices import DeviceGroup
from dualjudge.runs import steps
from dualjudge.runs.context import RunContext, RunReport
from dualjudge.runs.job_log import JobLog
from dualjudge.runs.jobs import study_jobs
from dualjudge.runs.lease import Lease, ServerFailed
from dualjudge.runs.replica_pool import ReplicaPool
from dualjudge.runs.schedule import Job, Schedule
from dualjudge.runs.study import stages
from dualjudge.storage.rows import JobRecord
from dualjudge.storage.store import BATCH_S, WORK_TABLES

SPARE_CHECK_S = 5.0  # how often a run with an idle group looks again for a job worth a replica


class Runner:
    """The scheduling loop of one session: jobs started on free groups as the schedule allows, replicas on
    idle ones, each job's stages through its lease; a job whose model cannot serve stops alone."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.log = JobLog(ctx.store, ctx.session, ctx.report.jobs)
        self._answers_ready = asyncio.Event()
        self._failed: dict[str, str] = {}  # models whose job stopped in this session, and why

    async def run(self) -> RunReport:
        ctx = self.ctx
        items = ctx.prepare()
        sctx = ctx.steps_context(items)
        jobs, last = study_jobs(ctx.config, len(items), ctx.local)
        schedule = Schedule(jobs, ctx.groups, ctx.holds, last_system=last, spare=ctx.config.engine.replicas)
        pool = ReplicaPool(ctx, schedule, self.log)
        lanes: dict[asyncio.Task[None], DeviceGroup | None] = {}
        free = list(ctx.groups)
        flusher = asyncio.create_task(self._flush_batches())
        try:
            while not schedule.complete():
                for job, group in schedule.assign(free):
                    if group is not None:
                        free.remove(group)
                    lanes[asyncio.create_task(self._lane(pool, sctx, items, job, group))] = group
                for job, group in schedule.replicate(free, pool.work_left, ctx.config.engine.replica_min_s):
                    free.remove(group)
                    lanes[asyncio.create_task(pool.replica(job, group))] = group
                assert lanes, "the schedule is stuck"
                done, _ = await asyncio.wait(
                    lanes, timeout=SPARE_CHECK_S if free and schedule.spare else None, return_when=asyncio.FIRST_COMPLETED
                )
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
            ctx.store.flush()
        for table in WORK_TABLES:
            kinds = ctx.store.error_kinds(table)
            if kinds:
                ctx.report.failures[table] = kinds
        ctx.report.verdict_failures = ctx.store.error_kinds_by("verdicts", "judge_model")
        return ctx.report

    async def _flush_batches(self) -> None:
        """Commit the store's open batch whenever it is older than BATCH_S, while the run goes on."""
        while True:
            await asyncio.sleep(BATCH_S)
            self.ctx.store.flush_if_due()

    async def _lane(self, pool: ReplicaPool, sctx: steps.Context, items: list[Any], job: Job, group: DeviceGroup | None) -> None:
        """One model on one group: its job, and its judges job after its systems job when the schedule
        keeps it there (same load). A job whose model cannot serve (ServerFailed) stops alone: it is
        recorded as failed, the jobs waiting on it go on, and the model's later jobs in this session stop
        at once (what failed to load once fails again)."""
        schedule = pool.schedule
        async with AsyncExitStack() as stack:
            lease = Lease(self.ctx, job.model, group, stack)
            try:
                current: Job | None = job
                ended: float | None = None  # a following job starts the moment its systems job ends
                while current is not None:
                    pool.leases[current] = lease
                    record, loads_before = self.log.started(current, group, at=ended), lease.loads
                    try:
                        if current.model in self._failed:
                            raise ServerFailed(f"{current.model}: not started ({self._failed[current.model]})")
                        await self._job(pool, sctx, items, current, lease)
                    except ServerFailed as e:
                        self._job_failed(pool, current, record, str(e))
                        return
                    ended = self.log.ended(record, lease.loads > loads_before)
                    pool.ended(current).set()
                    following = schedule.successor(current, group) if current.stage == "systems" else None
                    if following is not None and group is not None and schedule.running[following] != group:
                        # its judges job started early elsewhere: this group and load join it as a replica
                        if lease.engine is None:
                            schedule.release(following, group)  # nothing loaded here (all from the cache)
                        else:
                            await pool.serve(
                                following,
                                group,
                                lease.engine,
                                self.log.started(following, group, at=ended, replica=True),
                                loaded=False,
                            )
                        following = None
                    current = following
            finally:
                lease.close()

    async def _job(self, pool: ReplicaPool, sctx: steps.Context, items: list[Any], current: Job, lease: Lease) -> None:
        """Run one job's stages; a systems job's end lets the schedule keep its group for the model's
        judges job (`Schedule.keep`) and wakes the judges waiting for answers."""
        if current.stage == "judges":
            await self._judges(lease, sctx, items, pool.schedule, current.model)
            pool.schedule.end(current)
            return
        await lease.run([s.step(sctx, current.model, items, None) for s in stages("systems")])
        pool.schedule.keep(current)
        self._answers_arrived()

    def _answers_arrived(self) -> None:
        """Wake the judges waiting for answers: a systems job has ended."""
        self._answers_ready.set()
        self._answers_ready = asyncio.Event()

    def _job_failed(self, pool: ReplicaPool, job: Job, record: JobRecord, reason: str) -> None:
        """A job stopped: recorded with its reason, ended in the schedule (its replicas leave, the judges
        waiting for its answers go on with what there is), and its model's later jobs will not start."""
        self._failed.setdefault(job.model, reason)
        self.log.failed(record, reason)
        if job in pool.schedule.running:
            pool.schedule.end(job)
        pool.ended(job).set()
        if job.stage == "systems":
            self._answers_arrived()
        line = f"the {job.stage} job of {reason}"
        self.ctx.report.failed_jobs.append(line)
        self.ctx.progress.note(f"{line}; the other jobs go on, and the same command run again redoes its work")

    async def _judges(self, lease: Lease, sctx: steps.Context, items: list[Any], schedule: Schedule, judge: str) -> None:
        """Judge each system model's answers as soon as its systems job has ended, then, once every
        systems job has, the probes and the stability passes (the judges stages of study.py, in order)."""
        early = [s for s in stages("judges") if s.as_answers_arrive]
        seen: frozenset[str] = frozenset()
        while True:
            ready = schedule.systems_done
            complete = ready >= schedule.systems_models
            if ready != seen or complete:
                await lease.run([s.step(sctx, judge, items, None if complete else ready) for s in early])
                seen = ready
            if complete:
                break
            if schedule.systems_done == seen:  # no systems job ended while judging: wait for the next
                await self._answers_ready.wait()
        await lease.run([s.step(sctx, judge, items, None) for s in stages("judges") if not s.as_answers_arrive])
