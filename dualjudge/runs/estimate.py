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
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
from dualjudge.protocol.systems import Item
from dualjudge.protocol.variants import variant_rubric
from dualjudge.rundir import RunDir
from dualjudge.runs import plan
from dualjudge.runs.context import check_fingerprint, with_drawn_sample
from dualjudge.runs.counting import (
    ModelCost,
    Planner,
    Seen,
    StageCount,
    TokenCounter,
)
from dualjudge.runs.jobs import all_groups, cluster_placement
from dualjudge.runs.measured import (
    expected_answer_tokens,
    expected_completion,
    measured_completion,
    measured_pace,
)
from dualjudge.runs.placed import Placed, placement_of
from dualjudge.runs.roofline import GPUS, GpuSpec, Work, cpu_spec, gpu_spec, load_basis, load_seconds, serving_seconds
from dualjudge.runs.study import stages
from dualjudge.runs.testbed import build_testbed, testbed_items
from dualjudge.storage.rows import Answer
from dualjudge.storage.store import Store
from dualjudge.variants.manifest import MANIFEST_CSV, Variant, load_manifest, variant_rows


@dataclass
class Estimate:
    config: str
    rows: list[StageCount]
    models: list[ModelCost]
    notes: list[str] = field(default_factory=list)
    placed: Placed | None = None  # None: some model's time is unknown (a hosted model without size or hint)

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
        return {
            "config": self.config,
            "total_requests": self.total_requests,
            "cached": self.cached,
            "to_send": self.total_requests - self.cached,
            "seconds": self.seconds,
            "load_seconds": self.load_seconds,
            "rows": [r.as_dict() for r in self.rows],
            "models": [asdict(m) for m in self.models],
            "placed": asdict(self.placed) if self.placed else None,
            "notes": self.notes,
        }


async def judges_job(planner: Planner, judge: str, seen: Seen) -> list[StageCount]:
    """A judge model's job, every judge variant's requests added up per stage."""
    merged: dict[str, StageCount] = {}
    for variant in planner.config.judges.variants:
        rubric = variant_rubric(variant, planner.config.judges.rubrics, planner.config.default_rubric())
        counted = [await stage.count(planner, judge, rubric, seen) for stage in stages("judges")]
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


def _variants(config: RunConfig, out: Path, tmp: Path) -> tuple[Path, list[Variant]]:
    """The run directory's testbed when it has one, else the configuration's rendered into `tmp`."""
    folder = RunDir(out).testbed
    if (folder / MANIFEST_CSV).is_file():
        return folder, variant_rows(load_manifest(folder))
    return tmp, build_testbed(config, tmp)


def _cost(
    config: RunConfig,
    card: ModelCard,
    rows: list[StageCount],
    counter: TokenCounter,
    logs: list[Store],
    caches: list[Store],
    gpu: GpuSpec,
    gpu_basis: str,
    cpu: DeviceGroup | None = None,
) -> ModelCost:
    """A model's time and memory; `cpu`: the CPU group a local server would get (no GPU visible)."""
    to_send = sum(r.to_send for r in rows)
    completion, completion_basis = expected_completion(rows, measured_completion(caches + logs, card.name))
    pace = measured_pace(logs, card.name)
    where = placement(card, config.engine)
    if to_send == 0:
        seconds, basis = 0.0, "nothing to send"
    elif pace is not None:
        seconds, basis = (
            to_send * pace[0],
            (f"measured: {pace[0]:.2f} s a request over {pace[1]} requests in {pace[2]} earlier session(s)"),
        )
    elif card.throughput_hint:
        seconds, basis = (
            completion / card.throughput_hint,
            (f"card hint: {card.throughput_hint:g} completion tokens/s over the expected completion tokens"),
        )
    elif card.parameters_b is not None and where != "hosted":
        batch = (
            gpu_server_concurrency(card, config.engine) if cpu is None else endpoint_concurrency(card, config.engine, where, cpu)
        )
        if cpu is not None and where == "local server":
            cores = cpu.ray_cpus or len(cpu.ids)
            of = "of a Ray slot" if cpu.kind == "ray" else f"of group {cpu.label} (no GPU visible)"
            gpu, gpu_basis = cpu_spec(cores), f"{cores} CPU core(s) {of}"
        prompt, prefill = sum(r.prompt_tokens for r in rows), sum(r.prefill_tokens for r in rows)
        images = sum(r.images for r in rows)
        work = Work(to_send, prefill, completion, images, context_tokens=prompt / to_send + completion / to_send / 2)
        seconds = serving_seconds(card, gpu, work, batch)
        basis = (
            f"roofline on {gpu_basis}: {card.parameters_b:g} B parameters, {gpu.bandwidth_gbs:g} GB/s, "
            f"{gpu.tflops:g} TFLOPs, batch {batch}; {prefill:,} of {prompt:,} prompt tokens to prefill "
            f"(images included, cached prefixes once), {images:,} images to encode; compute and memory "
            f"overlapped, KV-cache reads included"
        )
    else:
        seconds, basis = None, "unknown: a hosted model whose card states neither its size nor a throughput_hint"
    elsewhere = not runs_on_devices(card, config.engine)  # memory is someone else's
    method = counter.method + (f"; images: {counter.image_method}" if counter.images else "")
    on_cpu = cpu is not None and where == "local server"
    load = None if elsewhere or card.parameters_b is None or to_send == 0 else round(load_seconds(card, cpu=on_cpu))
    return ModelCost(
        card.name,
        config.roles()[card.name],
        None if elsewhere else round(needed_gb(card), 1),
        method,
        seconds,
        basis,
        completion,
        completion_basis,
        load,
        load_basis(on_cpu) if load is not None else "",
    )


async def _estimate(
    config: RunConfig,
    out: Path,
    engines: EngineFactory,
    caches: list[Store],
    logs: list[Store],
    variants: list[Variant],
    items: list[Item],
    groups: list[DeviceGroup],
    for_gpu: str | None = None,
    identities: dict[str, str] | None = None,
) -> list[StageCount | ModelCost]:
    cards = {m: config.card(m) for m in config.all_models()}
    known = identities or {}
    study = Planner(
        config,
        caches,
        config.task.load(),
        {m: known.get(m) or await engines.identity(cards[m]) for m in cards},
        {m: TokenCounter(cards[m], config.testbed.size) for m in cards},
        expected_answer_tokens(config, caches + logs),
    )
    rows = await count_study(study, variants, items)
    flat: list[StageCount | ModelCost] = [r for m in cards for r in rows[m]]
    local = any(runs_on_devices(c, config.engine) for c in cards.values())
    priced = groups if local and config.engine.backend == "vllm" else []  # the groups a local vLLM server gets
    on_ray = [g for g in priced if g.kind == "ray"]
    gpus = [] if for_gpu or on_ray else visible_gpus()
    gpu, gpu_basis = gpu_spec(for_gpu or (gpus[0].name if gpus else None))
    if for_gpu:
        gpu_basis = f"an {gpu.name} (asked for)"
    cpu = None
    if on_ray and on_ray[0].ray_gpus:  # a GPU cluster: its GPUs' kind, as Ray reports it
        gpu, gpu_basis = gpu_spec(on_ray[0].accelerator)
        gpu_basis = gpu_basis.replace("the visible", "the Ray cluster's")
    elif on_ray or (priced and not gpus):
        cpu = min(priced, key=lambda g: g.ray_cpus or len(g.ids))  # the smallest group a model may get
        cpu = cpu if cpu.kind in ("cpu", "ray") else None
    return flat + [_cost(config, cards[m], rows[m], study.counters[m], logs, caches, gpu, gpu_basis, cpu) for m in cards]


async def count_study(study: Planner, variants: list[Variant], items: list[Item]) -> dict[str, list[StageCount]]:
    """Every stage of every model's jobs counted, in the runner's order (systems jobs, then judges jobs):
    the requests the runner would build, answered from the planner's caches where they can be."""
    config = study.config
    rows: dict[str, list[StageCount]] = {m: [] for m in config.all_models()}
    by_id = {v.variant_id: v for v in variants}
    every = [
        Answer(t.answer, "", None, by_id[t.item.variant_id].sign_code, by_id[t.item.variant_id].category)
        for m in config.systems.models
        for t in plan.answer_tasks(config, items, m)
    ]
    seen = Seen(items, every)
    for model in config.systems.models:
        counted = [await stage.count(study, model, None, seen) for stage in stages("systems")]
        rows[model] += [r for r in counted if r is not None]
    for judge in config.judges.models:
        rows[judge] += await judges_job(study, judge, seen)
    return rows


def estimate(
    config: RunConfig,
    out: Path,
    config_name: str = "",
    measured: tuple[Path, ...] = (),
    engines: EngineFactory | None = None,
    for_gpu: str | None = None,
    identities: dict[str, str] | None = None,
) -> Estimate:
    """The plan of a run of `config` into `out` (which may not exist yet); nothing is written anywhere.
    `for_gpu`: price the local servers on this GPU of the roofline's table (a plan made on another machine)
    rather than on what this machine has. `identities`: each model's request identity as the run recorded it (its
    manifest), which its cache is keyed by; a model not named gets this machine's."""
    if for_gpu is not None and not any(g.name.lower() == for_gpu.lower() for g in GPUS):
        raise DualjudgeError(f"--gpu {for_gpu}: not in the roofline's table ({', '.join(g.name for g in GPUS)})")
    engines = engines or Engines(config.engine, seed=config.run.seed)
    shared = Path(config.engine.cache).expanduser() if config.engine.cache else None
    own = RunDir(out).store
    opened = [Store(p, readonly=True) for p in (own, shared) if p is not None and p.is_file()]
    logs = [s for s in opened if s.path == own] + [
        Store(RunDir(d).store, readonly=True) for d in measured if RunDir(d).store.is_file()
    ]
    try:
        if own.is_file():  # a run folder: what `run` would refuse there, plan refuses too; a sampled run's own sample
            config = with_drawn_sample(config, opened[0])
            check_fingerprint(config, out, opened[0])
        with tempfile.TemporaryDirectory(prefix="dualjudge-plan-") as tmp:
            folder, variants = _variants(config, out, Path(tmp))
            items = testbed_items(config, folder, variants)
            groups = [] if for_gpu else all_groups(config)  # this machine's, or the Ray cluster's slots
            flat = asyncio.run(_estimate(config, out, engines, opened, logs, variants, items, groups, for_gpu, identities or {}))
    finally:
        for store in {id(s): s for s in opened + logs}.values():
            store.close()
    notes = [
        "counts assume every system call returns an answer; a failed answer is not judged",
        "completion tokens are bounds at max_tokens; prompts carry answers not yet generated at their expected "
        "length; each model's expected completion tokens and time say what they rest on",
    ]
    if config.judges.pairwise:
        n = len(config.systems.models)
        notes.append(
            f"the pairwise judge's pairs grow with the square of the system models: {n} models make {n * (n - 1) // 2} "
            f'pairs per prompt with judges.pairs = "all", each asked in both orders by every judge'
        )
    if config.probes.padding:
        notes.append(
            "padding counts are upper bounds until the answers are known: only losing answers are restated, "
            "and a restatement is judged only where the judge's verdict on the original is ok"
        )
    rows = [r for r in flat if isinstance(r, StageCount)]
    models = [m for m in flat if isinstance(m, ModelCost)]
    on_cluster = None if for_gpu else cluster_placement(config, groups)
    if on_cluster:
        notes.insert(0, on_cluster)
    placed = None if for_gpu else placement_of(config, rows, models, groups, len(variants))
    return Estimate(config_name, rows, models, notes, placed)
