"""The caching caller: every model call of a run goes through it.

A deterministic request (greedy, or sampled with a fixed seed) is answered from the cache when its
key is there; otherwise it goes to the engine, is logged, and (when it succeeded) cached. The same key
asked again while the first is in flight waits for that one instead of being sent twice, so a run sends
each deterministic request once whatever the timing (how many jobs run side by side, how many requests
are in flight). A cached reply outside the bounds replies keep (reply_bounds.py: cached before they
were checked) is sent again rather than read. Without an engine (the cache-only pass that runs before any model is loaded) a miss
raises `CacheMiss`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from dualjudge.inference.reply_bounds import text_problem
from dualjudge.inference.types import Engine, GenerationRequest, GenerationResult
from dualjudge.storage.store import Store


class CacheMiss(Exception):
    """The request is not cached and no engine is loaded."""


@dataclass
class Usage:
    requests: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0


class CachingCaller:
    def __init__(self, store: Store, model: str, identity: str, session: str, engine: Engine | None = None) -> None:
        self.store = store
        self.model = model
        self.identity = identity
        self.session = session
        self.engine = engine
        self.usage = Usage()
        self._in_flight: dict[str, asyncio.Future[GenerationResult]] = {}

    async def __call__(self, request: GenerationRequest) -> GenerationResult:
        key = request.key(self.identity)
        cacheable = request.sampling.deterministic
        if cacheable:
            hit = self.store.cache_get(key)
            if hit is not None and text_problem(hit.text, hit.constraint_kind == "json") is None:
                self.usage.cache_hits += 1
                return hit
            if hit is not None and self.engine is not None:
                self.store.cache_drop(key)  # unreadable: asked again, and the new reply takes its place
        if self.engine is None:
            raise CacheMiss(key)
        first = self._in_flight.get(key) if cacheable else None
        if first is not None:
            try:
                shared = await asyncio.shield(first)
            except asyncio.CancelledError:
                if not first.cancelled():
                    raise  # this task itself was cancelled
            else:
                if shared.ok:
                    self.usage.cache_hits += 1
                    return shared
        sent: asyncio.Future[GenerationResult] = asyncio.get_running_loop().create_future()
        if cacheable:
            self._in_flight.setdefault(key, sent)
        try:
            result = await self.engine.generate(request)
        except BaseException:
            sent.cancel()  # a waiter then sends its own request
            raise
        finally:
            if self._in_flight.get(key) is sent:
                del self._in_flight[key]
        sent.set_result(result)
        self.usage.requests += 1
        self.usage.completion_tokens += result.completion_tokens
        self.store.sent(self.session, key, self.model, result, cacheable)
        return result
