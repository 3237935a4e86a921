"""What a run reports as it goes (the Progress protocol), and running a stage's tasks with bounded
concurrency, in order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class StageProgress(Protocol):
    """One stage's display line: a task done (with the stage's tokens so far), and the stage's end."""

    def advance(self, tokens_so_far: int | None = None) -> None: ...

    def end(self) -> None: ...


class Progress(Protocol):
    """What the runner reports; the CLI shows it with rich, tests record it. Several stages can be
    active at once (one per model running on its device group)."""

    def stage(self, name: str, total: int, from_cache: bool = False) -> StageProgress:
        """A stage starts: `total` tasks; `from_cache` for the pass that answers from the cache only."""

    def note(self, message: str) -> None: ...


class _QuietStage:
    def advance(self, tokens_so_far: int | None = None) -> None:
        pass

    def end(self) -> None:
        pass


class QuietProgress:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.stages: list[tuple[str, int]] = []

    def stage(self, name: str, total: int, from_cache: bool = False) -> StageProgress:
        self.stages.append((name, total))
        return _QuietStage()

    def note(self, message: str) -> None:
        self.notes.append(message)


async def run_in_order(tasks: Sequence[T], work: Callable[[T], Awaitable[int | None]], concurrency: int,
                       progress: StageProgress) -> float:
    """Start tasks in list order with at most `concurrency` in flight; `work` returns the stage's token
    count so far (for the tokens/s display) or None.

    Returns the elapsed seconds. An exception in one task cancels the others and propagates.
    """
    started = time.perf_counter()
    queue: asyncio.Queue[T] = asyncio.Queue()
    for t in tasks:
        queue.put_nowait(t)

    async def worker() -> None:
        while True:
            try:
                task = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            progress.advance(await work(task))

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(tasks))))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    return time.perf_counter() - started
