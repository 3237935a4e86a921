"""The caching caller: every model call of a run goes through it.

A deterministic request (greedy, or sampled with a fixed seed) is answered from the cache when its
key is there; otherwise it goes to the engine, is logged, and (when it succeeded) cached. Without an
engine (the cache-only pass that runs before any model is loaded) a miss raises `CacheMiss`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualjudge.inference.types import Engine, GenerationRequest, GenerationResult
from dualjudge.runs.store import Store


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

    async def __call__(self, request: GenerationRequest) -> GenerationResult:
        key = request.key(self.identity)
        cacheable = request.sampling.deterministic
        if cacheable:
            hit = self.store.cache_get(key)
            if hit is not None:
                self.usage.cache_hits += 1
                return hit
        if self.engine is None:
            raise CacheMiss(key)
        result = await self.engine.generate(request)
        self.usage.requests += 1
        self.usage.completion_tokens += result.completion_tokens
        self.store.log_request(self.session, key, self.model, result)
        if result.ok and cacheable:
            self.store.cache_put(key, self.model, result)
        return result
