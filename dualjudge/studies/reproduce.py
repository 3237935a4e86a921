"""`dualjudge reproduce RUN_DIR`: send a seeded sample of a finished run's requests again and compare.

The requests are rebuilt, not stored: the planner's traversal (the runner's own request builders, seeds and
keys over the run's testbed and the answers its store holds) meets every request the store answered, under
the identity each model's requests were cached with (the manifest records it). A seeded sample of them,
spread over the models in turn, is sent again with the cache bypassed, each model started as the run started
it (its card, flags, grammar backend, server seed, and batch invariance as resolved on this machine), at a
concurrency other than the run's, so that each request lands in another batch. Each reply is compared with
the stored one byte for byte, and by its parsed values: a verdict's fields other than its reasoning, an
answer's final line. What the run's manifest and this machine differ in (versions, hardware, batch
invariance, identities, code) is said beside. Nothing is written into the run's directory: its store is read
only, the servers' logs go to a temporary folder (or `logs`).
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.engines import EngineFactory, Engines, endpoint_concurrency, placement
from dualjudge.inference.types import GenerationRequest, GenerationResult
from dualjudge.report.links import explorer_link
from dualjudge.rundir import RunDir
from dualjudge.runs.counting import Observed, Planner, TokenCounter
from dualjudge.runs.estimate import count_study
from dualjudge.runs.jobs import device_groups, runs_here
from dualjudge.runs.study import STUDY
from dualjudge.runs.testbed import testbed_items
from dualjudge.storage.store import Store, load_run_store
from dualjudge.studies.job import model_identities, run_regeneration, stored_config
from dualjudge.studies.manifest import Manifest, git_commit, hardware, read_manifest, versions
from dualjudge.variants.manifest import variants_by_id

DEFAULT_SAMPLE = 50


@dataclass(frozen=True)
class Compared:
    """One request sent again: whether its reply is the stored one, byte for byte and in its parsed values."""

    model: str
    stage: str
    kind: str  # "verdict" (a JSON verdict) or "answer" (a system's text, a restatement)
    variant_id: str
    system_model: str
    strategy: str
    identical: bool
    values_changed: bool  # its parsed values differ (a verdict's fields, an answer's final line)
    stored: str
    again: str | None  # None: the request failed this time (error)
    error: str | None
    link: str  # the explorer, filtered to the answer behind it


@dataclass
class Reproduction:
    run: Path
    requests: int  # requests the store answered, in all
    sample: int
    seed: int
    concurrency: int
    run_concurrency: dict[str, int]
    regeneration: str  # this machine's line on batch invariance
    compared: list[Compared] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)  # what the manifest and this machine differ in
    left_out: list[str] = field(default_factory=list)  # models not sent again, and why

    def share(self, kind: str) -> tuple[int, int]:
        """(byte-identical, sent) for one kind of request."""
        rows = [c for c in self.compared if c.kind == kind]
        return sum(c.identical for c in rows), len(rows)

    @property
    def changed(self) -> list[Compared]:
        return [c for c in self.compared if not c.identical]

    @property
    def matched(self) -> bool:
        return bool(self.compared) and not self.changed

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["run"] = str(self.run)
        out["answers_identical"], out["answers_sent"] = self.share("answer")
        out["verdicts_identical"], out["verdicts_sent"] = self.share("verdict")
        out["values_changed"] = sum(c.values_changed for c in self.compared)
        out["matched"] = self.matched
        return out


def parsed_values(kind: str, text: str | None) -> object:
    """What a reply says once parsed: a verdict's fields but its reasoning; an answer's final line."""
    if text is None:
        return None
    if kind == "verdict":
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if "reasoning" not in k}
        return data
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""


def sample_requests(observed: list[Observed], n: int, seed: int, identities: dict[str, str]) -> list[Observed]:
    """`n` of the observed requests, drawn with `seed`: round the models, and within each model round its stages
    (answers, verdicts, each probe), each shuffled, so every model and every kind of request it made is sent some
    before any is sent twice; the same draw for the same store, seed and n."""
    by_stage: dict[str, dict[str, dict[str, Observed]]] = {}
    for o in observed:  # a request met twice is sent once
        by_stage.setdefault(o.model, {}).setdefault(o.stage, {})[o.request.key(identities[o.model])] = o
    rng = random.Random(seed)
    models: list[list[list[Observed]]] = []
    for model in sorted(by_stage):
        stages = []
        for stage in sorted(by_stage[model]):
            keys = sorted(by_stage[model][stage])
            rng.shuffle(keys)
            stages.append([by_stage[model][stage][k] for k in keys])
        models.append(stages)
    picked: list[Observed] = []
    turn = [0] * len(models)  # each model's next stage
    while len(picked) < n and any(any(q) for q in models):
        for m, stages in enumerate(models):
            left = [q for q in stages if q]
            if not left or len(picked) >= n:
                continue
            queue = left[turn[m] % len(left)]
            turn[m] += 1
            picked.append(queue.pop(0))
    return picked


def _differences(manifest: Manifest | None, here_identities: dict[str, str], regeneration_on: bool) -> list[str]:
    if manifest is None:
        return ["the run has no manifest.json: versions and hardware cannot be compared"]
    out = []
    here = versions()
    for name in sorted(set(manifest.versions) | set(here)):
        then, now = manifest.versions.get(name), here.get(name)
        if then != now:
            out.append(f"{name}: run {then or 'absent'}, here {now or 'absent'}")
    then_hw, now_hw = manifest.hardware, hardware()
    for key in ("cpu", "gpus", "cpu_count", "machine"):
        if then_hw.get(key) != now_hw.get(key):
            out.append(f"hardware {key}: run {then_hw.get(key)}, here {now_hw.get(key)}")
    run_on = (manifest.regeneration or {}).get("batch_invariant")
    if run_on is None:
        out.append("batch invariance: the run's manifest does not say (a run from before it was recorded)")
    elif bool(run_on) != regeneration_on:
        out.append(f"batch invariance: run {'on' if run_on else 'off'}, here {'on' if regeneration_on else 'off'}")
    for model, record in sorted(manifest.models.items()):
        if record.identity is not None and here_identities.get(model) not in (None, record.identity):
            out.append(f"{model}'s identity: run {record.identity}, here {here_identities[model]}")
    if manifest.git_commit != git_commit():
        out.append(f"code: run {manifest.git_commit}, here {git_commit()}")
    return out


def reproduce(
    run_dir: Path,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    concurrency: int | None = None,
    logs: Path | None = None,
    note: Callable[[str], None] = lambda _: None,
    engines: EngineFactory | None = None,
) -> Reproduction:
    """Send a seeded sample of the run's stored requests again, uncached, and compare (module docstring).
    `engines`: what answers them (default: the run's models started here, as the run started them)."""
    if sample < 1:
        raise DualjudgeError(f"--sample {sample}: give at least 1")
    store = load_run_store(run_dir)
    shared: Store | None = None
    try:
        config = stored_config(store, run_dir, needs_key=True)
        if config.engine.cache:  # the run kept its replies in a shared cache file (engine.cache), not in its store
            path = Path(config.engine.cache).expanduser()
            if not path.is_file():
                raise DualjudgeError(
                    f"{run_dir}: the run kept its replies in the shared cache {path} (engine.cache), which is not there; "
                    f"put it back where it was to reproduce the run"
                )
            shared = Store(path, readonly=True)
        caches = [store] + ([shared] if shared is not None else [])
        manifest = read_manifest(run_dir)
        with tempfile.TemporaryDirectory(prefix="dualjudge-reproduce-") as tmp:
            return asyncio.run(
                _reproduce(run_dir, config, caches, manifest, sample, seed, concurrency, logs or Path(tmp), note, engines)
            )
    finally:
        store.close()
        if shared is not None:
            shared.close()


async def _reproduce(
    run_dir: Path,
    config: RunConfig,
    caches: list[Store],
    manifest: Manifest | None,
    sample: int,
    seed: int,
    concurrency: int | None,
    logs: Path,
    note: Callable[[str], None],
    given: EngineFactory | None,
) -> Reproduction:
    local = any(runs_here(config, m) for m in config.all_models())
    groups = device_groups(config)
    run_concurrency = {
        m: endpoint_concurrency(
            config.card(m), config.engine, placement(config.card(m), config.engine), groups[0] if groups else None
        )
        for m in config.all_models()
    }
    chosen = concurrency or (1 if any(c != 1 for c in run_concurrency.values()) else 4)
    settings = config.engine.model_copy(update={"concurrency": chosen})
    regen = run_regeneration(config)  # as the run's servers start here (one line where it cannot be had)
    engines = given or Engines(settings, seed=config.run.seed, log_dir=logs, local=local)
    here = await model_identities(engines, config)
    recorded = {m: r.identity for m, r in (manifest.models.items() if manifest else ()) if r.identity}
    identities = {m: recorded.get(m, here[m]) for m in config.all_models()}  # the run's own, where recorded

    observed: list[Observed] = []
    folder = RunDir(run_dir).testbed
    variants = list(variants_by_id(folder).values())
    items = testbed_items(config, folder, variants)
    planner = Planner(
        config,
        caches,
        config.task.load(),
        identities,
        {m: TokenCounter(config.card(m), config.testbed.size) for m in config.all_models()},
        0,
        collect=observed.append,
    )
    await count_study(planner, variants, items)
    result = Reproduction(
        run_dir,
        len({(o.model, o.request.key(identities[o.model])) for o in observed}),
        sample,
        seed,
        chosen,
        run_concurrency,
        regen.line,
    )
    result.differences = _differences(manifest, here, regen.batch_invariant)
    if not observed:
        raise DualjudgeError(f"{run_dir}: its store answers none of the run's requests here (nothing to send again)")
    picked = sample_requests(observed, sample, seed, identities)
    made = {o.stage for o in observed}
    for stage in (s.name for s in STUDY if s.tokens(config, len(items)) > 0):  # the kinds of request the study makes
        if stage not in made:
            result.left_out.append(f"{stage}: none of its requests is in the run's cache here, so none is sent again")
        elif stage not in {o.stage for o in picked}:
            result.left_out.append(f"{stage}: not in this sample of {sample} (a larger --sample takes it in)")
    sign_of = {v.variant_id: v.sign_code for v in variants}
    for model in sorted({o.model for o in picked}):
        card = config.card(model)
        if card.hosted:
            result.left_out.append(f"{model}: hosted, not reproducible offline")
            continue
        mine = [o for o in picked if o.model == model]
        group = next((g for g in groups if g.holds(card)), None) if runs_here(config, model) else None
        async with engines.open(card.model_copy(update={"concurrency": chosen}), note, group) as engine:
            again = await asyncio.gather(*(engine.generate(o.request) for o in mine))
        result.compared += [_compare(o, r, sign_of, run_dir) for o, r in zip(mine, again)]
    return result


def _compare(o: Observed, again: GenerationResult, sign_of: dict[str, str], run_dir: Path) -> Compared:
    kind = "verdict" if _is_verdict(o.request) else "answer"
    stored = o.cached.text or ""
    text = again.text if again.ok else None
    state: dict[str, object] = {
        "model": o.answer.system_model,
        "strategy": o.answer.strategy,
        "sign": sign_of.get(o.answer.variant_id),
    }
    if kind == "verdict":
        state["judge"] = o.model
    return Compared(
        o.model,
        o.stage,
        kind,
        o.answer.variant_id,
        o.answer.system_model,
        o.answer.strategy,
        identical=text == stored,
        values_changed=text is not None and parsed_values(kind, text) != parsed_values(kind, stored),
        stored=stored,
        again=text,
        error=again.error,
        link=str(run_dir / explorer_link(**state)),
    )


def _is_verdict(request: GenerationRequest) -> bool:
    return request.constraint is not None and request.constraint.kind == "json"
