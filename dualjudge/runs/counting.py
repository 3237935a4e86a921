"""Counting a stage before any model loads: what its requests cost (prompt, prefill, images), how
many the caches answer, and the state the stages' counts share. Each stage's own count lives in its
module under runs/stages/; estimate.py adds them up into `dualjudge plan`."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from dualjudge.config import RunConfig
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.image_tokens import ImageTokens, image_tokens
from dualjudge.inference.types import GenerationRequest, GenerationResult
from dualjudge.inference.weights import locate
from dualjudge.protocol.systems import Item
from dualjudge.runs.caller import CacheMiss
from dualjudge.storage.rows import Answer, AnswerKey
from dualjudge.storage.store import Store
from dualjudge.tasks.task import Task

T = TypeVar("T")
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # chat-template tokens around each message


@dataclass(frozen=True)
class Charge:
    """What requests cost a server: their prompt tokens, the part it has to prefill, the images it encodes."""

    prompt: int = 0
    prefill: int = 0
    images: int = 0


@dataclass
class StageCount:
    model: str
    stage: str
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0  # of the requests still to send (earlier outputs at their expected length)
    completion_tokens: int = 0  # of the requests still to send, at most (max_tokens each)
    prefill_tokens: int = 0  # of prompt_tokens, what the server computes: a prefix it has cached counts once
    images: int = 0  # images the vision encoder still has to encode
    upper_bound: bool = False  # the count depends on results and is at most this

    @property
    def to_send(self) -> int:
        return self.requests - self.cached

    def add(self, charge: Charge) -> None:
        self.prompt_tokens += charge.prompt
        self.prefill_tokens += charge.prefill
        self.images += charge.images

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "to_send": self.to_send}


@dataclass(frozen=True)
class Observed:
    """A request a run made, with what the caches hold for it: what `dualjudge reproduce` re-sends."""

    model: str
    stage: str
    answer: AnswerKey  # the answer the request makes, restates or judges
    request: GenerationRequest
    cached: GenerationResult


Observe = Callable[[GenerationRequest, GenerationResult], None]


class CacheProbe:
    """A caller that answers from the caches only and counts what it answered; a miss raises CacheMiss.
    `observe` is told of every request the caches answered."""

    def __init__(self, caches: list[Store], identity: str, observe: Observe | None = None) -> None:
        self.caches = caches
        self.identity = identity
        self.observe = observe
        self.hits = 0

    async def __call__(self, request: GenerationRequest) -> GenerationResult:
        if request.sampling.deterministic:
            key = request.key(self.identity)
            for cache in self.caches:
                hit = cache.cache_get(key)
                if hit is not None:
                    self.hits += 1
                    if self.observe is not None:
                        self.observe(request, hit)
                    return hit
        raise CacheMiss(request.key(self.identity))


class TokenCounter:
    """The model's tokenizer when its weights are here; otherwise about four characters a token. Image
    tokens: inference/image_tokens.py, on a `image_px` image, counted at the first image (a text-only run
    never loads a processor)."""

    def __init__(self, card: ModelCard, image_px: int = 512) -> None:
        self.encode: Callable[[str], int] | None = None
        found = locate(card)
        self._card = card
        self._px = image_px
        unread = ""
        if found is not None:
            try:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(str(found.path))
                self.encode = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
            except Exception as e:  # any tokenizer file transformers cannot read (a tekken.json, say): estimated
                self.encode = None
                unread = f" (its tokenizer could not be read here: {type(e).__name__} {str(e)[:80]})"
        self.method = "tokenizer" if self.encode else f"about {CHARS_PER_TOKEN} characters a token{unread}"
        self.images = 0  # images counted so far
        self._image: ImageTokens | None = None
        self._prefixes: set[str] = set()  # message prefixes a server of this model has already prefilled

    @property
    def image(self) -> ImageTokens:
        """What one image costs, counted at the first use."""
        if self._image is None:
            self._image = image_tokens(self._card, self._px)
        return self._image

    @property
    def image_method(self) -> str:
        return self.image.method

    def _tokens(self, text: str) -> int:
        return self.encode(text) if self.encode else math.ceil(len(text) / CHARS_PER_TOKEN)

    def count(self, request: GenerationRequest, pending: int = 0, times: int = 1) -> Charge:
        """`times` requests like this one, `pending` tokens of earlier outputs not yet known in each: their prompt
        tokens (images included) and what a prefix-caching server prefills of them. The leading messages an
        earlier request already sent are cached; the last message of each further copy is new (it holds what
        differs: the answer judged, the restatement), and so is everything after an unknown earlier output."""
        if times <= 0:
            return Charge()
        messages = request.messages
        cost = [self._tokens(m.text) + MESSAGE_OVERHEAD + (self.image.count if m.image is not None else 0) for m in messages]
        keys, running = [], hashlib.sha256()
        for m in messages:
            running.update(json.dumps(m.identity(), sort_keys=True).encode())
            keys.append(running.hexdigest())
        limit = len(messages)
        if pending:  # the unknown earlier outputs are the assistant turns (else the last message): new from there
            limit = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages) - 1)
        cached = max((k + 1 for k in range(limit) if keys[k] in self._prefixes), default=0)
        self._prefixes.update(keys[:limit])
        last = len(messages) - 1
        images = sum(m.image is not None for m in messages[cached:])
        later_images = (times - 1) * int(messages[last].image is not None) if messages else 0
        self.images += images + later_images
        prompt = sum(cost) + pending
        prefill = sum(cost[cached:]) + pending + (times - 1) * ((cost[last] if messages else 0) + pending)
        return Charge(times * prompt, prefill, images + later_images)


async def probe(
    work: Callable[[CacheProbe], Awaitable[T]], caches: list[Store], identity: str, observe: Observe | None = None
) -> tuple[T | None, int]:
    """Run one task's protocol against the caches: its result when every call was cached, and the hits."""
    probe = CacheProbe(caches, identity, observe)
    try:
        return await work(probe), probe.hits
    except CacheMiss:
        return None, probe.hits


@dataclass
class Seen:
    """What the planner has found so far: the run's variants as items, every planned answer, the answers
    and restatements the caches hold, and how many restatements the padding probe makes at most."""

    items: list[Item]
    every: list[Answer]
    known: dict[AnswerKey, Answer] = field(default_factory=dict)
    padded: dict[AnswerKey, str] = field(default_factory=dict)
    padding_bound: int = 0


@dataclass
class Planner:
    """What every stage's count reads: the configuration, the caches, the task, each model's identity
    and token counter, and the expected length of an answer not yet generated."""

    config: RunConfig
    caches: list[Store]
    task: Task
    identities: dict[str, str]
    counters: dict[str, TokenCounter]
    answer_tokens: int  # an answer not yet generated, inside the prompts that carry it
    collect: Callable[[Observed], None] | None = None  # told of every request the caches answer (reproduce)

    def observer(self, model: str, stage: str, answer: AnswerKey) -> Observe | None:
        """What tells `collect` of the cached requests of one task (None when nothing collects)."""
        collect = self.collect
        if collect is None:
            return None
        return lambda request, hit: collect(Observed(model, stage, answer, request, hit))

    async def judged(
        self,
        judge: str,
        stage: str,
        tasks: Iterable[tuple[Answer, Any]],
        known: dict[AnswerKey, Answer],
        run: Callable[[Answer, Any, CacheProbe], Awaitable[object]],
        request: Callable[[Answer, Any], GenerationRequest],
        calls: int = 1,
    ) -> StageCount:
        """A judge step over answers: each task's calls answered from the caches when its answer is known."""
        row = StageCount(judge, stage)
        counter = self.counters[judge]
        for answer, extra in tasks:
            row.requests += calls
            hits = 0
            if answer.key in known:
                found = known[answer.key]
                _, hits = await probe(
                    lambda call: run(found, extra, call),
                    self.caches,
                    self.identities[judge],
                    self.observer(judge, stage, answer.key),
                )
                row.cached += hits
            if hits < calls:
                pending = 0 if answer.key in known else self.answer_tokens
                r = request(known.get(answer.key, answer), extra)
                row.add(counter.count(r, pending=pending, times=calls - hits))
                row.completion_tokens += (calls - hits) * r.sampling.max_tokens
        return row


@dataclass
class ModelCost:
    """One model's price in the plan: its roles, its memory, its serving time for the requests still to send (and
    what that time rests on), the completion tokens those are expected to take, and one load's time."""

    model: str
    roles: list[str]
    gpu_memory_gb: float | None  # None: served at an attached endpoint
    tokens: str  # how tokens were counted
    seconds: float | None
    time_basis: str
    expected_completion_tokens: int = 0  # of the requests still to send
    completion_basis: str = ""
    load_seconds: float | None = None  # one load: the weights read from disk, then the engine's start
    load_basis: str = ""  # what that figure rests on (roofline.load_basis)
