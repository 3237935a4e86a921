"""The engine contract: what a generation request and its result look like, for every backend.

A request is engine-neutral: chat messages (text, optionally one PNG image), an optional output
constraint (a JSON schema or a regex), and sampling parameters including the seed. Its `key()` is
the content address the run store caches by: it covers the model identity, the rendered messages
(images by sha256), the constraint, the sampling parameters and the hashes of the prompts used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal, Protocol

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Image:
    png: bytes = field(repr=False)
    sha256: str

    @classmethod
    def from_png(cls, png: bytes) -> Image:
        return cls(png, hashlib.sha256(png).hexdigest())


@dataclass(frozen=True)
class Message:
    role: Role
    text: str
    image: Image | None = None  # shown before the text in the same turn

    def identity(self) -> dict[str, object]:
        return {"role": self.role, "text": self.text, "image": self.image.sha256 if self.image else None}


@dataclass(frozen=True)
class Constraint:
    kind: Literal["json", "regex"]
    spec: str  # canonical JSON text of the schema, or the regex

    @classmethod
    def json_schema(cls, schema: dict[str, object]) -> Constraint:
        # key order is kept: properties are generated in schema order, so `reasoning` comes first
        return cls("json", json.dumps(schema, separators=(",", ":")))

    @classmethod
    def regex(cls, pattern: str) -> Constraint:
        return cls("regex", pattern)

    @property
    def schema(self) -> dict[str, object]:
        assert self.kind == "json"
        schema: dict[str, object] = json.loads(self.spec)
        return schema


@dataclass(frozen=True, kw_only=True)
class Sampling:
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    top_p: float = 1.0

    @property
    def deterministic(self) -> bool:
        """Reproducible and therefore cacheable: greedy, or sampled with a fixed seed."""
        return self.temperature == 0.0 or self.seed is not None


@dataclass(frozen=True)
class GenerationRequest:
    messages: tuple[Message, ...]
    sampling: Sampling
    constraint: Constraint | None = None
    prompt_hashes: tuple[str, ...] = ()  # sha256 of every prompt file used to build the messages

    def key(self, model_identity: str) -> str:
        """sha256 over model identity + messages + constraint + sampling + prompt hashes."""
        payload = {
            "model": model_identity,
            "messages": [m.identity() for m in self.messages],
            "constraint": [self.constraint.kind, self.constraint.spec] if self.constraint else None,
            "sampling": [self.sampling.temperature, self.sampling.max_tokens, self.sampling.seed, self.sampling.top_p],
            "prompts": list(self.prompt_hashes),
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class GenerationResult:
    """What came back for one request: text and usage, or an engine/transport error."""

    text: str | None
    _: KW_ONLY
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    constraint_kind: str | None = None  # the kind of constraint the engine applied ("json", "regex") or None
    error: str | None = None
    tries: int = 1  # HTTP tries this request took (retries included)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


class EngineDown(Exception):
    """The engine can no longer answer (its server died or hangs, or every endpoint keeps failing).
    Requests in flight end with this instead of a result, so nothing is recorded for them: the runner
    stops the model's job, restarts it or stops the run, and a rerun asks them again."""


# How protocol code calls a model: an engine's `generate`, or the run store's caching wrapper.
Caller = Callable[[GenerationRequest], Awaitable[GenerationResult]]


class Engine(Protocol):
    """One backend serving one model."""

    model_identity: str  # model name + weights revision/hash: part of every cache key

    async def generate(self, request: GenerationRequest) -> GenerationResult: ...

    async def close(self) -> None: ...


DEFAULT_CAPACITY = 32


def capacity(engine: Engine) -> int:
    """Requests worth keeping in flight on an engine: its own `capacity` (every endpoint's slots, or one
    batch), else 32 (an engine that does not say)."""
    return int(getattr(engine, "capacity", DEFAULT_CAPACITY))
