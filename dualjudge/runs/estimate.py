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
the card has none); an answer not yet generated counts at its max_tokens in the bounds. Expected
completion tokens: the mean the caches hold for the model and kind of request (answers, JSON
verdicts), else a stated per-kind default, never more than max_tokens. Time: seconds per request
measured in earlier sessions of this run directory (or of `--measured` ones) for the same model, else
the card's throughput_hint over the expected completion tokens, else a roofline of the card on the
visible GPU (roofline.py); each model says which.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dualjudge.config import RunConfig
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.engines import EngineFactory, Engines, gpu_server_concurrency, placement, runs_on_devices
from dualjudge.inference.preflight import needed_gb, visible_gpus
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
from dualjudge.runs.roofline import GpuSpec, gpu_spec, serving_seconds
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


@dataclass
class StageCount:
    model: str
    stage: str
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0  # of the requests still to send
    completion_tokens: int = 0  # of the requests still to send, at most (max_tokens each)
    upper_bound: bool = False  # the count depends on results and is at most this

    @property
    def to_send(self) -> int:
        return self.requests - self.cached

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

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config, "total_requests": self.total_requests, "cached": self.cached,
                "to_send": self.total_requests - self.cached, "seconds": self.seconds,
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

        processor = AutoProcessor.from_pretrained(str(path))
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

    def _ask_processor(self) -> None:
        self._asked = True
        counted = processor_image_tokens(self._path, self._px) if self._path is not None else None
        if counted is not None:
            self.image_tokens = counted
            self.image_method = f"{counted} a image (the model's own processor, {self._px} px)"

    def count(self, request: GenerationRequest, pending: int = 0) -> int:
        """Prompt tokens of a request (its images included), plus `pending` tokens of earlier outputs not yet known."""
        texts = [m.text for m in request.messages]
        n = sum(self.encode(t) for t in texts) if self.encode else math.ceil(sum(len(t) for t in texts) / CHARS_PER_TOKEN)
        images = sum(m.image is not None for m in request.messages)
        if images and not self._asked:
            self._ask_processor()
        self.images += images
        return n + MESSAGE_OVERHEAD * len(texts) + pending + images * self.image_tokens


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
            for i in range(hits, n_steps):  # the calls still to send; earlier outputs count at max_tokens
                request = build_step_request(t.strategy, i, t.item, modality=c.testbed.modality,
                                             sign_type_mode=c.systems.sign_type, sampling=sampling,
                                             previous=("",) * i)
                row.prompt_tokens += counter.count(request, pending=i * sampling.max_tokens)
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
        row.prompt_tokens = pending * self.counters[model].count(request, pending=c.systems.max_tokens)
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
                pending = 0 if answer.key in known else self.config.systems.max_tokens
                r = request(known.get(answer.key, answer), extra)
                row.prompt_tokens += (calls - hits) * counter.count(r, pending=pending)
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
            pending = 0 if ready else 2 * c.systems.max_tokens
            row.prompt_tokens += (2 - hits) * self.counters[judge].count(r, pending=pending)
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
        row.prompt_tokens += unknown * len(c.judges.kinds) * self.counters[judge].count(
            build_judge_request(QUALITY.name, sign(seen.every[0].sign_code), "", sampling, convention, rubric),
            pending=c.probes.padding_max_tokens) if seen.every else 0
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
          logs: list[Store], caches: list[Store], gpu: GpuSpec, gpu_basis: str) -> ModelCost:
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
        batch = gpu_server_concurrency(card, config.engine)
        prompt = sum(r.prompt_tokens for r in rows)
        seconds = serving_seconds(card, gpu, prompt, completion, to_send, batch)
        basis = (f"roofline on {gpu_basis}: {card.parameters_b:g} B parameters, {gpu.bandwidth_gbs:g} GB/s, "
                 f"{gpu.tflops:g} TFLOPs, batch {batch}; {prompt:,} prompt tokens (images included)")
    else:
        seconds, basis = None, "unknown: a hosted model whose card states neither its size nor a throughput_hint"
    elsewhere = not runs_on_devices(card, config.engine)  # memory is someone else's
    method = counter.method + (f"; images: {counter.image_method}" if counter.images else "")
    return ModelCost(card.name, config.roles()[card.name], None if elsewhere else round(needed_gb(card), 1),
                     method, seconds, basis, completion, completion_basis)


async def _estimate(config: RunConfig, out: Path, engines: EngineFactory, caches: list[Store],
                    logs: list[Store], variants: list[Variant], items: list[Item]) -> list[StageCount | ModelCost]:
    cards = {m: config.card(m) for m in config.all_models()}
    study = _Study(config, caches, default_catalogue(), {m: await engines.identity(cards[m]) for m in cards},
                   {m: TokenCounter(cards[m], config.testbed.size) for m in cards})
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
    gpus = visible_gpus()
    gpu, gpu_basis = gpu_spec(gpus[0].name if gpus else None)
    return flat + [_cost(config, cards[m], rows[m], study.counters[m], logs, caches, gpu, gpu_basis) for m in cards]


def estimate(config: RunConfig, out: Path, config_name: str = "", measured: tuple[Path, ...] = (),
             engines: EngineFactory | None = None) -> Estimate:
    """The plan of a run of `config` into `out` (which may not exist yet); nothing is written anywhere."""
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
            flat = asyncio.run(_estimate(config, out, engines, opened, logs, variants, items))
    finally:
        for store in {id(s): s for s in opened + logs}.values():
            store.close()
    notes = ["counts assume every system call returns an answer; a failed answer is not judged",
             "completion tokens are bounds at max_tokens; each model's expected completion tokens and time say "
             "what they rest on"]
    if config.probes.padding:
        notes.append("padding counts are upper bounds until the answers are known: only losing answers are restated, "
                     "and a restatement is judged only where the judge's verdict on the original is ok")
    return Estimate(config_name, [r for r in flat if isinstance(r, StageCount)],
                    [m for m in flat if isinstance(m, ModelCost)], notes)
