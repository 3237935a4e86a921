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


async def run_in_order(
    tasks: Sequence[T], work: Callable[[T], Awaitable[int | None]], concurrency: int | Callable[[], int], progress: StageProgress
) -> float:
    """Start tasks in list order with at most `concurrency` in flight; `work` returns the stage's token
    count so far (for the tokens/s display) or None. A callable `concurrency` is asked again after each
    task: more tasks go in flight when it grows (a replica joined), fewer when it shrinks.

    Returns the elapsed seconds. An exception in one task cancels the others and propagates.
    """
    started = time.perf_counter()
    queue: asyncio.Queue[T] = asyncio.Queue()
    for t in tasks:
        queue.put_nowait(t)
    limit = concurrency if callable(concurrency) else (lambda: concurrency)
    workers: set[asyncio.Task[None]] = set()
    failed: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    def spawn() -> None:
        while len(workers) < max(1, limit()) and len(workers) < queue.qsize():
            w = asyncio.create_task(worker())
            workers.add(w)
            w.add_done_callback(finished)

    def finished(w: asyncio.Task[None]) -> None:
        workers.discard(w)
        if not w.cancelled() and w.exception() is not None and not failed.done():
            failed.set_result(w.exception())
        elif not workers and not failed.done():
            failed.set_result(None)

    async def worker() -> None:
        while len(workers) <= max(1, limit()):
            try:
                task = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            progress.advance(await work(task))
            spawn()

    if not tasks:
        return 0.0
    spawn()
    try:
        error = await failed
    except BaseException:
        error = None
        for w in list(workers):
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    if error is not None:
        for w in list(workers):
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise error
    return time.perf_counter() - started
