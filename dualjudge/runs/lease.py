"""A lease: a model on a device group for one or more jobs, answering each step from the cache first
and opening the model's engine only for what the cache cannot answer; an engine that does not start or
goes down is opened again (`engine.server_restarts` times) before its job stops (ServerFailed)."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from typing import Any

from dualjudge.errors import DualjudgeError, ServerStartFailed
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.replicas import Server, Servers
from dualjudge.inference.types import Engine, EngineDown, capacity
from dualjudge.runs.caller import CacheMiss, CachingCaller
from dualjudge.runs.context import RunContext
from dualjudge.runs.progress import run_in_order
from dualjudge.runs.steps import Step

YIELD_EVERY = 32  # cache-only answers between two yields to the event loop


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

    def __init__(self, ctx: RunContext, model: str, group: DeviceGroup | None, stack: AsyncExitStack) -> None:
        self.ctx = ctx
        self.model = model
        self.group = group
        self.stack = stack
        self.caller: CachingCaller | None = None
        self.cached: CachingCaller | None = None
        self.loads = 0  # times the engine was opened
        self.restarts_left = ctx.config.engine.server_restarts
        self.servers = Servers("")  # its own engine and the replicas that joined it
        self.engine: Engine | None = None  # its own engine, while open
        self.backlog = 0  # tasks of the step being sent not yet started
        self._answered = 0  # tasks of that step answered so far, since `_sending`
        self._sending = 0.0
        self._callers: list[CachingCaller] = []
        self._engine: AsyncExitStack | None = None

    async def run(self, stage: list[Step[Any]]) -> None:
        r = self.ctx
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
        r = self.ctx
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
        self.ctx.report.restarts.append(f"{self.model}{where}: {reason}")
        self.ctx.progress.note(f"{self.model}{where} stopped: {reason}; starting it again ({self.restarts_left} restart(s) left)")

    async def _send(self, step: Step[Any], name: str, tasks: list[Any], caller: CachingCaller) -> None:
        start = caller.usage.completion_tokens
        self.backlog, self._answered, self._sending = len(tasks), 0, time.monotonic()

        async def one(t: Any) -> int:
            self.backlog -= 1
            await step.work(t, caller)
            self._answered += 1
            return caller.usage.completion_tokens - start

        line = self.ctx.progress.stage(name, len(tasks))
        try:
            await run_in_order(tasks, one, lambda: capacity(self.servers), line)  # grows as replicas join
        finally:
            self.backlog = 0
            line.end()

    def close(self) -> None:
        """Count what this lease sent and answered from the cache into the run's report."""
        report = self.ctx.report
        for caller in self._callers:
            report.sessions_requests += caller.usage.requests
            report.cache_hits += caller.usage.cache_hits
        if self.cached is not None:
            report.cache_hits += self.cached.usage.cache_hits


async def run_alone(ctx: RunContext, model: str, stage: list[Step[Any]]) -> None:
    """Run one model's steps now, on the largest group that holds it (sequential work: the rubric
    clarification)."""
    group = None
    if ctx.local(model):
        group = max((g for g in ctx.groups if ctx.holds(model, g)), key=lambda g: len(g.ids))
    async with AsyncExitStack() as stack:
        lease = Lease(ctx, model, group, stack)
        try:
            await lease.run(stage)
        finally:
            lease.close()
