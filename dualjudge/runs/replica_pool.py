"""Replicas: one more server of a running job's model on a device group no waiting job could use.

A replica is loaded (unless its job ends first and the schedule has no next job of the model for the
group), joins the job's servers until the job ends, then serves the model's next job when the schedule
moves the group there (`Schedule.successor`, the walk the placement simulation takes too). A replica
that fails to start or goes down stops alone: its job goes on."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from dualjudge.errors import DualjudgeError
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.types import Engine, EngineDown
from dualjudge.runs.context import RunContext
from dualjudge.runs.job_log import JobLog
from dualjudge.runs.lease import Lease
from dualjudge.runs.schedule import Job, Schedule
from dualjudge.storage.rows import JobRecord


class ReplicaPool:
    """The running jobs' leases (their servers), when each job ends, and the replicas that join them."""

    def __init__(self, ctx: RunContext, schedule: Schedule, log: JobLog) -> None:
        self.ctx = ctx
        self.schedule = schedule
        self.log = log
        self.leases: dict[Job, Lease] = {}  # each running job's lease (its servers)
        self._ended: dict[Job, asyncio.Event] = {}  # set when the job has ended

    def ended(self, job: Job) -> asyncio.Event:
        return self._ended.setdefault(job, asyncio.Event())

    def work_left(self, job: Job) -> float:
        lease = self.leases.get(job)
        return lease.work_left() if lease is not None else 0.0

    async def replica(self, job: Job, group: DeviceGroup) -> None:
        """One more server of a running job's model on an idle group, for as long as the schedule keeps
        the group on the model's jobs."""
        ctx, schedule = self.ctx, self.schedule
        card = ctx.config.card(job.model)
        record = self.log.started(job, group, replica=True)
        ctx.progress.note(
            f"starting a replica of {job.model} on {group.label} for its {job.stage} job "
            f"(about {self.work_left(job):.0f} s of work left per server)"
        )
        async with AsyncExitStack() as stack:
            opening = asyncio.ensure_future(stack.enter_async_context(ctx.engines.open(card, ctx.progress.note, group)))
            current: Job | None = job
            while current is not None and not opening.done():
                ended = asyncio.ensure_future(self.ended(current).wait())
                try:
                    await asyncio.wait((opening, ended), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ended.cancel()
                if not opening.done():  # the job ended first: load on for the model's next job, if any
                    at = self.log.ended(record, False)
                    current = schedule.successor(current, group)
                    if current is not None:
                        record = self.log.started(current, group, at=at, replica=True)
            if current is None:
                opening.cancel()
                await asyncio.gather(opening, return_exceptions=True)
                return
            try:
                engine = await opening
            except (DualjudgeError, EngineDown, OSError) as e:
                ctx.progress.note(f"the replica of {job.model} on {group.label} did not start ({e}); the job goes on without it")
                schedule.release(current, group)
                self.log.ended(record, False)
                return
            ctx.report.models_loaded.append(job.model)
            await self.serve(current, group, engine, record, loaded=True)

    async def serve(self, job: Job, group: DeviceGroup, engine: Engine, record: JobRecord, loaded: bool) -> None:
        """Serve `job` as a replica with an open engine until it ends (or the replica goes down), then the
        next job of the same model the schedule gave this group to, in the same load."""
        current: Job | None = job
        while current is not None:
            ended = self.ended(current)
            lost = False
            record.requests = 0
            if not ended.is_set():
                server = self.leases[current].join(engine, group)
                waits = (asyncio.ensure_future(ended.wait()), asyncio.ensure_future(server.lost.wait()))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                    self.leases[current].leave(server)
                    record.requests = server.served
                lost = server.lost.is_set() and not ended.is_set()
            at = self.log.ended(record, loaded)
            if lost:
                self.ctx.progress.note(f"the replica of {current.model} on {group.label} went down; the job goes on without it")
                self.schedule.release(current, group)
                return
            current = self.schedule.successor(current, group)
            if current is not None:
                record, loaded = self.log.started(current, group, at=at, replica=True), False
