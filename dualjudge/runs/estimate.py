"""`dualjudge plan`: what a run will ask of each model, before any model loads.

Per model and stage: the requests the runner will make, how many the response cache already
answers, the prompt and completion tokens of the rest, the GPU memory the model needs and the wall
time it will take. The requests are counted by building the very requests the runner builds (the
same protocol functions, the same seeds and cache keys), answered by a caller that only reads the
caches, so "cached" is exact. Work that depends on results is counted at its upper bound and marked:
the padding probe restates only losing answers, which are known only once the answers are.

Assumed: every system call returns an answer (a failed one is not judged, so a failing run sends
fewer judge requests). Tokens: the model's own tokenizer when its weights are present, otherwise
about four characters a token, plus per image what the model's own processor makes of one image of the
testbed's size when its files are here, else the card's `image_tokens` (its source stated; 576 when
the card has none). An answer not yet generated counts, inside the prompts that carry it, at the mean
answer length the caches hold, else a stated default; never at max_tokens. Prefill: what a server with
vLLM's prefix cache computes, so a prompt's leading messages that an earlier request of the same model
already sent (a judge's system prompt and rubric, the same image and question in another repeat) count
once. Expected completion tokens: the mean the caches hold for the model and kind of request (answers,
JSON verdicts), else a stated per-kind default, never more than max_tokens. Time: seconds per request
measured in earlier sessions of this run directory (or of `--measured` ones) for the same model, else
the card's throughput_hint over the expected completion tokens, else a roofline of the card on the
visible GPU (roofline.py); each model says which. Completion-token bounds stay at max_tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.engines import (
    EngineFactory,
    Engines,
    endpoint_concurrency,
    gpu_server_concurrency,
    placement,
    runs_on_devices,
)
from dualjudge.inference.gpus import needed_gb, visible_gpus
from dualjudge.inference.types import GenerationRequest, GenerationResult
from dualjudge.inference.weights import locate
from dualjudge.protocol.judges import build_judge_request, run_judge
from dualjudge.protocol.kinds import QUALITY
from dualjudge.protocol.probes import build_padding_request, build_pairwise_request, pad, run_order_probe
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.systems import STEPS, Item, build_step_request, run_system
from dualjudge.protocol.variants import variant_rubric
from dualjudge.rundir import RunDir
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CacheMiss
from dualjudge.runs.jobs import all_groups
from dualjudge.runs.roofline import GPUS, GpuSpec, Work, cpu_spec, gpu_spec, load_seconds, serving_seconds
from dualjudge.runs.study import stages
from dualjudge.runs.testbed import build_testbed, testbed_items
from dualjudge.storage.rows import Answer, AnswerKey
from dualjudge.storage.store import Store
from dualjudge.testbed.catalogue import Catalogue, default_catalogue
from dualjudge.testbed.variants import MANIFEST_CSV, Variant, load_manifest, variant_rows

T = TypeVar("T")
CHARS_PER_TOKEN = 4
DEFAULT_IMAGE_TOKENS = 576  # a 24 x 24 LLaVA-style grid, for a card that does not say
# completion tokens a request is expected to take when no cache has measured the model: a description and
# a SIGN_TYPE line (CoT and MA steps run longer, answers average out near this); a JSON verdict whose
# reasoning is bounded; a padding restatement
KIND_DEFAULTS = {"answers": 160, "padding": 120, "judge": 110}
FREE_TEXT_STAGES = ("answers", "padding")
MESSAGE_OVERHEAD = 4  # chat-template tokens around each message
MIN_MEASURED = 5  # requests a session must have sent before its pace counts


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


@dataclass
class ModelCost:
    model: str
    roles: list[str]
    gpu_memory_gb: float | None  # None: served at an attached endpoint
    tokens: str  # how tokens were counted
    seconds: float | None
    time_basis: str
    expected_completion_tokens: int = 0  # of the requests still to send
    completion_basis: str = ""
    load_seconds: float | None = None  # one load: the weights read from disk, then the engine's start


@dataclass
class Estimate:
    config: str
    rows: list[StageCount]
    models: list[ModelCost]
    notes: list[str] = field(default_factory=list)

    @property
    def total_requests(self) -> int:
        return sum(r.requests for r in self.rows)

    @property
    def cached(self) -> int:
        return sum(r.cached for r in self.rows)

    @property
    def seconds(self) -> float | None:
        times = [m.seconds for m in self.models]
        return None if any(t is None for t in times) else sum(t for t in times if t is not None)

    @property
    def load_seconds(self) -> float:
        """Each model loaded once (a group that serves several jobs of one model loads it once)."""
        return sum(m.load_seconds or 0.0 for m in self.models)

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config, "total_requests": self.total_requests, "cached": self.cached,
                "to_send": self.total_requests - self.cached, "seconds": self.seconds,
                "load_seconds": self.load_seconds,
                "rows": [r.as_dict() for r in self.rows], "models": [asdict(m) for m in self.models],
                "notes": self.notes}


class CacheProbe:
    """A caller that answers from the caches only and counts what it answered; a miss raises CacheMiss."""

    def __init__(self, caches: list[Store], identity: str) -> None:
        self.caches = caches
        self.identity = identity
        self.hits = 0

    async def __call__(self, request: GenerationRequest) -> GenerationResult:
        if request.sampling.deterministic:
            key = request.key(self.identity)
            for cache in self.caches:
                hit = cache.cache_get(key)
                if hit is not None:
                    self.hits += 1
                    return hit
        raise CacheMiss(request.key(self.identity))


def processor_image_tokens(path: Path, px: int) -> int | None:
    """The prompt tokens one px x px image adds for the model whose files are at `path`, as its own
    processor expands it (a one-line prompt with and without the image); None when the processor cannot
    say (no processor, no image token, no chat template)."""
    try:
        from PIL import Image as PILImage
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(str(path))  # type: ignore[no-untyped-call]  # an untyped library
        if not hasattr(processor, "image_processor"):
            return None
        image = PILImage.new("RGB", (px, px), (255, 255, 255))

        def prompt(with_image: bool) -> str:
            content = [{"type": "image"}] if with_image else []
            messages = [{"role": "user", "content": [*content, {"type": "text", "text": "What sign is this?"}]}]
            return str(processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

        with_image = processor(text=[prompt(True)], images=[image], return_tensors="np")["input_ids"].shape[-1]
        without = processor(text=[prompt(False)], return_tensors="np")["input_ids"].shape[-1]
    except Exception:  # any processor's own failure means "cannot say": the card's figure is used
        return None
    return int(with_image - without) if with_image > without else None


class TokenCounter:
    """The model's tokenizer when its weights are here; otherwise about four characters a token. Image
    tokens: the model's own processor on a `image_px` image when its files are here, else the card's
    `image_tokens` (its source stated), else a default."""

    def __init__(self, card: ModelCard, image_px: int = 512) -> None:
        self.encode: Callable[[str], int] | None = None
        found = locate(card)
        self._path = found.path if found is not None else None
        self._px = image_px
        if found is not None:
            try:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(str(found.path))
                self.encode = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
            except (OSError, ValueError, ImportError):
                self.encode = None
        self.method = "tokenizer" if self.encode else f"about {CHARS_PER_TOKEN} characters a token"
        self.image_tokens = card.image_tokens or DEFAULT_IMAGE_TOKENS
        self.images = 0  # images counted so far
        images = (f"{card.image_tokens} a image ({card.image_tokens_source or 'the card'})" if card.image_tokens else
                  f"{DEFAULT_IMAGE_TOKENS} a image (the card has no image_tokens)")
        self.image_method = images
        self._asked = False  # the processor is asked at the first image (text-only runs never load it)
        self._prefixes: set[str] = set()  # message prefixes a server of this model has already prefilled

    def _ask_processor(self) -> None:
        self._asked = True
        counted = processor_image_tokens(self._path, self._px) if self._path is not None else None
        if counted is not None:
            self.image_tokens = counted
            self.image_method = f"{counted} a image (the model's own processor, {self._px} px)"

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
        if any(m.image is not None for m in messages) and not self._asked:
            self._ask_processor()
        cost = [self._tokens(m.text) + MESSAGE_OVERHEAD + (self.image_tokens if m.image is not None else 0)
                for m in messages]
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


async def _probe(work: Callable[[CacheProbe], Awaitable[T]], caches: list[Store], identity: str) -> tuple[T | None, int]:
    """Run one task's protocol against the caches: its result when every call was cached, and the hits."""
    probe = CacheProbe(caches, identity)
    try:
        return await work(probe), probe.hits
    except CacheMiss:
        return None, probe.hits


@dataclass
class _Seen:
    """What the planner has found so far: the run's variants as items, every planned answer, the answers
    and restatements the caches hold, and how many restatements the padding probe makes at most."""

    items: list[Item]
    every: list[Answer]
    known: dict[AnswerKey, Answer] = field(default_factory=dict)
    padded: dict[AnswerKey, str] = field(default_factory=dict)
    padding_bound: int = 0


@dataclass
class _Study:
    config: RunConfig
    caches: list[Store]
    catalogue: Catalogue
    identities: dict[str, str]
    counters: dict[str, TokenCounter]
    answer_tokens: int  # an answer not yet generated, inside the prompts that carry it

    async def answers(self, model: str, rubric: Rubric | None, seen: _Seen) -> StageCount | None:
        """The answers of a model: every (strategy, variant, repeat), MA as its three calls."""
        c = self.config
        row, known = StageCount(model, "answers"), seen.known
        sampling, counter = steps.system_sampling(c), self.counters[model]
        for t in plan.answer_tasks(c, seen.items, model):
            n_steps = len(STEPS[t.strategy])
            row.requests += n_steps
            ans, hits = await _probe(lambda call: run_system(  # awaited at once: t is this task
                t.strategy, t.item, call, modality=c.testbed.modality, sign_type_mode=c.systems.sign_type,
                sampling=sampling, run_seed=c.run.seed, repeat=t.answer.repeat), self.caches, self.identities[model])
            row.cached += hits
            if ans is not None and ans.text is not None:
                sign = self.catalogue.sign(t.item.sign_code)
                known[t.answer] = Answer(t.answer, ans.text, ans.predicted_category, sign.code, sign.category)
            for i in range(hits, n_steps):  # the calls still to send; earlier outputs at their expected length
                request = build_step_request(t.strategy, i, t.item, modality=c.testbed.modality,
                                             sign_type_mode=c.systems.sign_type, sampling=sampling,
                                             previous=("",) * i)
                row.add(counter.count(request, pending=i * self.answer_tokens))
                row.completion_tokens += sampling.max_tokens
        return row

    async def padding(self, model: str, rubric: Rubric | None, seen: _Seen) -> StageCount | None:
        """Losing answers of this model restated: exact once all its answers are known, else at most the share."""
        c = self.config
        if not c.probes.padding:
            return None
        row, known, padded = StageCount(model, "padding"), seen.known, seen.padded
        share = steps.padding_share(c)
        mine = [a for a in seen.every if a.key.system_model == model]
        sample = plan.padding_sample([a.key for a in mine], known, share, c.run.seed)
        unknown = sum(a.key not in known for a in mine)
        row.requests = min(share, len(sample) + unknown)
        row.upper_bound = unknown > 0
        sampling = steps.padding_sampling(c)
        for a in sample[:row.requests]:
            text, hits = await _probe(lambda call: pad(a.text or "", call, sampling),
                                      self.caches, self.identities[model])
            row.cached += hits
            if text is not None and text.text is not None:
                padded[a.key] = text.text
        pending = row.requests - row.cached
        request = build_padding_request("", sampling)
        row.add(self.counters[model].count(request, pending=self.answer_tokens, times=pending))
        row.completion_tokens = pending * sampling.max_tokens
        seen.padding_bound += row.requests
        return row

    async def judged(self, judge: str, stage: str, tasks: Iterable[tuple[Answer, Any]], known: dict[AnswerKey, Answer],
                     run: Callable[[Answer, Any, CacheProbe], Awaitable[object]],
                     request: Callable[[Answer, Any], GenerationRequest], calls: int = 1) -> StageCount:
        """A judge step over answers: each task's calls answered from the caches when its answer is known."""
        row = StageCount(judge, stage)
        counter = self.counters[judge]
        for answer, extra in tasks:
            row.requests += calls
            hits = 0
            if answer.key in known:
                found = known[answer.key]
                _, hits = await _probe(lambda call: run(found, extra, call), self.caches, self.identities[judge])
                row.cached += hits
            if hits < calls:
                pending = 0 if answer.key in known else self.answer_tokens
                r = request(known.get(answer.key, answer), extra)
                row.add(counter.count(r, pending=pending, times=calls - hits))
                row.completion_tokens += (calls - hits) * r.sampling.max_tokens
        return row

    async def judges_job(self, judge: str, seen: _Seen) -> list[StageCount]:
        """A judge model's job, every judge variant's requests added up per stage."""
        merged: dict[str, StageCount] = {}
        for variant in self.config.judges.variants:
            rubric = variant_rubric(variant, self.config.judges.rubrics)
            counted = [await COUNTERS[stage.name](self, judge, rubric, seen) for stage in stages("judges")]
            for row in (r for r in counted if r is not None):
                into = merged.setdefault(row.stage, StageCount(judge, row.stage))
                into.requests += row.requests
                into.cached += row.cached
                into.prompt_tokens += row.prompt_tokens
                into.prefill_tokens += row.prefill_tokens
                into.images += row.images
                into.completion_tokens += row.completion_tokens
                into.upper_bound = into.upper_bound or row.upper_bound
        return list(merged.values())

    async def verdicts(self, judge: str, rubric: Rubric | None, seen: _Seen) -> StageCount | None:
        c = self.config
        sampling, convention, sign = steps.judge_sampling(c), c.judges.overall, self.catalogue.sign
        verdicts = [(t.answer, t.kind) for t in plan.judge_tasks(seen.every, judge, c.judges.kinds)]
        return await self.judged(
            judge, "verdicts", verdicts, seen.known,
            lambda a, kind, call: run_judge(kind, sign(a.sign_code), a.text or "", call, sampling, convention, rubric),
            lambda a, kind: build_judge_request(kind, sign(a.sign_code), a.text or "", sampling, convention, rubric))

    async def order_probe(self, judge: str, rubric: Rubric | None, seen: _Seen) -> StageCount | None:
        c = self.config
        if not c.probes.order:
            return None
        sampling, sign, known = steps.judge_sampling(c), self.catalogue.sign, seen.known
        row = StageCount(judge, "order probe")
        by_key = {a.key: a for a in seen.every}
        for ka, kb in plan.order_pairs([a.key for a in seen.every], c.probes.order_pairs, c.run.seed):
            a, b = by_key[ka], by_key[kb]
            row.requests += 2
            hits, ready = 0, a.key in known and b.key in known
            first, second = known.get(a.key, a), known.get(b.key, b)
            if ready:
                _, hits = await _probe(lambda call: run_order_probe(
                    sign(first.sign_code), first.text or "", second.text or "", call, sampling, rubric),
                    self.caches, self.identities[judge])
                row.cached += hits
            r = build_pairwise_request(sign(a.sign_code), first.text or "", second.text or "", sampling, rubric)
            pending = 0 if ready else 2 * self.answer_tokens
            row.add(self.counters[judge].count(r, pending=pending, times=2 - hits))
            row.completion_tokens += (2 - hits) * sampling.max_tokens
        return row

    async def padding_judged(self, judge: str, rubric: Rubric | None, seen: _Seen) -> StageCount | None:
        c = self.config
        if not c.probes.padding:
            return None
        sampling, convention, sign, padded = steps.judge_sampling(c), c.judges.overall, self.catalogue.sign, seen.padded
        restated = [(a, kind) for a in seen.every for kind in c.judges.kinds if a.key in padded]
        row = await self.judged(
            judge, "padding judged", restated, {k: seen.known[k] for k in padded},
            lambda a, kind, call: run_judge(kind, sign(a.sign_code), padded[a.key], call, sampling, convention,
                                            rubric),
            lambda a, kind: build_judge_request(kind, sign(a.sign_code), padded.get(a.key, ""), sampling,
                                                convention, rubric))
        unknown = seen.padding_bound - len(padded)  # restatements not yet made: each judged for every kind
        row.requests += unknown * len(c.judges.kinds)
        if seen.every:
            row.add(self.counters[judge].count(
                build_judge_request(QUALITY.name, sign(seen.every[0].sign_code), "", sampling, convention, rubric),
                pending=min(self.answer_tokens, c.probes.padding_max_tokens), times=unknown * len(c.judges.kinds)))
        row.completion_tokens += unknown * len(c.judges.kinds) * sampling.max_tokens
        row.upper_bound = True  # a restatement is judged only where this judge's verdict on the original is ok
        return row

    async def stability_passes(self, judge: str, rubric: Rubric | None, seen: _Seen) -> StageCount | None:
        c = self.config
        if c.judges.passes < 2:
            return None
        convention, sign = c.judges.overall, self.catalogue.sign
        verdicts = [(t.answer, t.kind) for t in plan.judge_tasks(seen.every, judge, c.judges.kinds)]
        passes = [(a, (kind, k)) for k in range(1, c.judges.passes + 1) for a, kind in verdicts]
        return await self.judged(
            judge, "stability passes", passes, seen.known,
            lambda a, x, call: run_judge(x[0], sign(a.sign_code), a.text or "", call,
                                         steps.pass_sampling(c, x[1]), convention, rubric),
            lambda a, x: build_judge_request(x[0], sign(a.sign_code), a.text or "",
                                             steps.pass_sampling(c, x[1]), convention, rubric))


# each stage of the study (study.py) counted by name; test_plan checks every stage has its counter
COUNTERS: dict[str, Callable[[_Study, str, Rubric | None, _Seen], Awaitable[StageCount | None]]] = {
    "answers": _Study.answers, "padding": _Study.padding, "verdicts": _Study.verdicts,
    "order probe": _Study.order_probe, "padding judged": _Study.padding_judged,
    "stability passes": _Study.stability_passes}


def _variants(config: RunConfig, out: Path, tmp: Path) -> tuple[Path, list[Variant]]:
    """The run directory's testbed when it has one, else the configuration's rendered into `tmp`."""
    folder = RunDir(out).testbed
    if (folder / MANIFEST_CSV).is_file():
        return folder, variant_rows(load_manifest(folder))
    return tmp, build_testbed(config, tmp)


def busy_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """Wall time covered by (start, end) intervals: the time a model was answering, however many at once."""
    total, end = 0.0, -math.inf
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def measured_pace(stores: list[Store], model: str) -> tuple[float, int, int] | None:
    """Seconds per request for a model in earlier sessions: the time it was busy (the union of its
    requests' [sent, answered] intervals, so other models' stages and loading do not count) over the
    requests it answered, with the requests and sessions it rests on."""
    seconds, requests, sessions = 0.0, 0, 0
    for store in stores:
        if not store.has_table("request_log"):
            continue
        by_session: dict[str, list[tuple[float, float]]] = {}
        for session, at, latency in store.db.execute(
                "SELECT session, at, latency_s FROM request_log WHERE model = ? AND ok = 1", (model,)):
            by_session.setdefault(session, []).append((at - (latency or 0.0), at))
        for spans in by_session.values():
            busy = busy_seconds(spans)
            if len(spans) >= MIN_MEASURED and busy > 0:
                seconds, requests, sessions = seconds + busy, requests + len(spans), sessions + 1
    return (seconds / requests, requests, sessions) if requests else None


def measured_completion(stores: list[Store], model: str) -> dict[str, tuple[float, int]]:
    """Mean completion tokens of the model's cached responses, per kind ("answers": free text and
    regex-constrained; "judge": JSON), with how many responses each rests on."""
    out: dict[str, tuple[float, int]] = {}
    for kind, where in (("judge", "constraint_kind = 'json'"),
                        ("answers", "(constraint_kind IS NULL OR constraint_kind != 'json')")):
        total, n = 0.0, 0
        for store in stores:
            if not store.has_table("cache", store.cache_schema):
                continue
            got = store.db.execute(f"SELECT SUM(completion_tokens), COUNT(*) FROM {store.cache_schema}.cache "
                                   f"WHERE model = ? AND {where}", (model,)).fetchone()
            total, n = total + float(got[0] or 0), n + int(got[1] or 0)
        if n >= MIN_MEASURED:
            out[kind] = (total / n, n)
    return out


def expected_answer_tokens(config: RunConfig, stores: list[Store]) -> int:
    """Tokens an answer not yet generated is expected to hold: the systems' cached mean, else the default."""
    total, n = 0.0, 0
    for model in config.systems.models:
        mean, count = measured_completion(stores, model).get("answers", (0.0, 0))
        total, n = total + mean * count, n + count
    expected = total / n if n else KIND_DEFAULTS["answers"]
    return max(1, min(round(expected), config.systems.max_tokens))


def expected_completion(rows: list[StageCount], measured: dict[str, tuple[float, int]]) -> tuple[int, str]:
    """Completion tokens the rows' requests still to send are expected to take, and from what."""
    total, bases = 0.0, set()
    for r in rows:
        if r.to_send <= 0:
            continue
        kind = "answers" if r.stage == "answers" else "padding" if r.stage == "padding" else "judge"
        mean_of = "answers" if kind in FREE_TEXT_STAGES else "judge"
        if mean_of in measured:
            mean, n = measured[mean_of]
            bases.add(f"{mean_of}: measured mean {mean:.0f} tokens over {n} cached responses")
        else:
            mean = KIND_DEFAULTS[kind]
            bases.add(f"{kind}: default {mean} tokens")
        bound = r.completion_tokens / r.to_send if r.completion_tokens else mean
        total += r.to_send * min(mean, bound)
    return round(total), "; ".join(sorted(bases)) or "nothing to send"


def _cost(config: RunConfig, card: ModelCard, rows: list[StageCount], counter: TokenCounter,
          logs: list[Store], caches: list[Store], gpu: GpuSpec, gpu_basis: str,
          cpu: DeviceGroup | None = None) -> ModelCost:
    """A model's time and memory; `cpu`: the CPU group a local server would get (no GPU visible)."""
    to_send = sum(r.to_send for r in rows)
    completion, completion_basis = expected_completion(rows, measured_completion(caches + logs, card.name))
    pace = measured_pace(logs, card.name)
    where = placement(card, config.engine)
    if to_send == 0:
        seconds, basis = 0.0, "nothing to send"
    elif pace is not None:
        seconds, basis = to_send * pace[0], (f"measured: {pace[0]:.2f} s a request over {pace[1]} requests in "
                                             f"{pace[2]} earlier session(s)")
    elif card.throughput_hint:
        seconds, basis = completion / card.throughput_hint, (f"card hint: {card.throughput_hint:g} completion "
                                                             f"tokens/s over the expected completion tokens")
    elif card.parameters_b is not None and where != "hosted":
        batch = gpu_server_concurrency(card, config.engine) if cpu is None else \
            endpoint_concurrency(card, config.engine, where, cpu)
        if cpu is not None and where == "local server":
            gpu, gpu_basis = cpu_spec(len(cpu.ids)), f"{len(cpu.ids)} CPU core(s) of group {cpu.label} (no GPU visible)"
        prompt, prefill = sum(r.prompt_tokens for r in rows), sum(r.prefill_tokens for r in rows)
        images = sum(r.images for r in rows)
        work = Work(to_send, prefill, completion, images, context_tokens=prompt / to_send + completion / to_send / 2)
        seconds = serving_seconds(card, gpu, work, batch)
        basis = (f"roofline on {gpu_basis}: {card.parameters_b:g} B parameters, {gpu.bandwidth_gbs:g} GB/s, "
                 f"{gpu.tflops:g} TFLOPs, batch {batch}; {prefill:,} of {prompt:,} prompt tokens to prefill "
                 f"(images included, cached prefixes once), {images:,} images to encode; compute and memory "
                 f"overlapped, KV-cache reads included")
    else:
        seconds, basis = None, "unknown: a hosted model whose card states neither its size nor a throughput_hint"
    elsewhere = not runs_on_devices(card, config.engine)  # memory is someone else's
    method = counter.method + (f"; images: {counter.image_method}" if counter.images else "")
    load = None if elsewhere or card.parameters_b is None or to_send == 0 else round(load_seconds(card))
    return ModelCost(card.name, config.roles()[card.name], None if elsewhere else round(needed_gb(card), 1),
                     method, seconds, basis, completion, completion_basis, load)


async def _estimate(config: RunConfig, out: Path, engines: EngineFactory, caches: list[Store],
                    logs: list[Store], variants: list[Variant], items: list[Item],
                    for_gpu: str | None = None) -> list[StageCount | ModelCost]:
    cards = {m: config.card(m) for m in config.all_models()}
    study = _Study(config, caches, default_catalogue(), {m: await engines.identity(cards[m]) for m in cards},
                   {m: TokenCounter(cards[m], config.testbed.size) for m in cards},
                   expected_answer_tokens(config, caches + logs))
    rows: dict[str, list[StageCount]] = {m: [] for m in cards}
    by_id = {v.variant_id: v for v in variants}
    every = [Answer(t.answer, "", None, by_id[t.item.variant_id].sign_code, by_id[t.item.variant_id].category)
             for m in config.systems.models for t in plan.answer_tasks(config, items, m)]
    seen = _Seen(items, every)
    for model in config.systems.models:
        counted = [await COUNTERS[stage.name](study, model, None, seen) for stage in stages("systems")]
        rows[model] += [r for r in counted if r is not None]
    for judge in config.judges.models:
        rows[judge] += await study.judges_job(judge, seen)
    flat: list[StageCount | ModelCost] = [r for m in cards for r in rows[m]]
    gpus = [] if for_gpu else visible_gpus()
    gpu, gpu_basis = gpu_spec(for_gpu or (gpus[0].name if gpus else None))
    if for_gpu:
        gpu_basis = f"an {gpu.name} (asked for)"
    cpu = None
    local = any(runs_on_devices(c, config.engine) for c in cards.values())
    if not gpus and not for_gpu and config.engine.backend == "vllm" and local:
        cpu = min(all_groups(config), key=lambda g: len(g.ids))  # the smallest group a model may get
        cpu = cpu if cpu.kind == "cpu" else None
    return flat + [_cost(config, cards[m], rows[m], study.counters[m], logs, caches, gpu, gpu_basis, cpu)
                   for m in cards]


def estimate(config: RunConfig, out: Path, config_name: str = "", measured: tuple[Path, ...] = (),
             engines: EngineFactory | None = None, for_gpu: str | None = None) -> Estimate:
    """The plan of a run of `config` into `out` (which may not exist yet); nothing is written anywhere.
    `for_gpu`: price the local servers on this GPU of the roofline's table (a plan made on another machine)
    rather than on what this machine has."""
    if for_gpu is not None and not any(g.name.lower() == for_gpu.lower() for g in GPUS):
        raise DualjudgeError(f"--gpu {for_gpu}: not in the roofline's table ({', '.join(g.name for g in GPUS)})")
    engines = engines or Engines(config.engine, seed=config.run.seed)
    shared = Path(config.engine.cache).expanduser() if config.engine.cache else None
    own = RunDir(out).store
    opened = [Store(p, readonly=True) for p in (own, shared) if p is not None and p.is_file()]
    logs = [s for s in opened if s.path == own] + \
        [Store(RunDir(d).store, readonly=True) for d in measured if RunDir(d).store.is_file()]
    try:
        with tempfile.TemporaryDirectory(prefix="dualjudge-plan-") as tmp:
            folder, variants = _variants(config, out, Path(tmp))
            items = testbed_items(config, folder, variants)
            flat = asyncio.run(_estimate(config, out, engines, opened, logs, variants, items, for_gpu))
    finally:
        for store in {id(s): s for s in opened + logs}.values():
            store.close()
    notes = ["counts assume every system call returns an answer; a failed answer is not judged",
             "completion tokens are bounds at max_tokens; prompts carry answers not yet generated at their expected "
             "length; each model's expected completion tokens and time say what they rest on"]
    if config.probes.padding:
        notes.append("padding counts are upper bounds until the answers are known: only losing answers are restated, "
                     "and a restatement is judged only where the judge's verdict on the original is ok")
    return Estimate(config_name, [r for r in flat if isinstance(r, StageCount)],
                    [m for m in flat if isinstance(m, ModelCost)], notes)
