"""Smoke before the study: each model of a configuration started as the run would start it and asked one
constrained system request and one verdict request, on the device groups the run would use, side by
side: each group takes the next model it can hold (models served elsewhere need no group).

What the static preflight cannot see shows up here in minutes, per model: a missing chat template (HTTP
400 on every request), an image processor that fails under the installed transformers, a gated hub
repository, a server that cannot start on this device, an engine that ignores the constraint. Smoke
requests are live: they are neither answered from nor written to any cache.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.engines import EngineFactory, Engines
from dualjudge.inference.types import EngineDown, Sampling
from dualjudge.protocol.judges import run_judge
from dualjudge.protocol.kinds import PROTOCOL_KINDS
from dualjudge.protocol.systems import Item, run_system
from dualjudge.runs.jobs import device_groups, runs_here
from dualjudge.runs.testbed import testbed_items
from dualjudge.tasks.registry import DEFAULT as DEFAULT_TASK
from dualjudge.tasks.signs import build_sign_variants
from dualjudge.tasks.variants import build_task_variants
from dualjudge.variants.manifest import variant_rows

SMOKE_ANSWER = "A red circle with a white horizontal bar: no entry for vehicular traffic.\nSIGN_TYPE: no_entry"


@dataclass
class SmokeResult:
    model: str
    roles: list[str]
    status: Literal["ok", "fail"] = "ok"
    load_s: float | None = None
    group: str = "-"  # the device group it was started on ("-": served elsewhere)
    system: str = "-"  # "ok", or what went wrong; "-" for a model that only judges
    verdict: str = "-"  # "ok", or what went wrong; "-" for a model that only answers
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def smoke_item(config: RunConfig, folder: Path) -> Item:
    """One unoccluded variant of the configuration's first sign (or item), as its systems see it."""
    t = config.testbed
    if config.task.load().name != DEFAULT_TASK:
        frame = build_task_variants(
            config.task.load(),
            config.items()[:1],
            folder,
            modality=t.modality,
            size=t.size,
            seed=config.run.seed,
            visibilities=[1.0],
            modes=[t.modes[0]],
        )
        return testbed_items(config, folder, variant_rows(frame))[0]
    first = (t.codes() or tuple(i.id for i in config.items()))[0]  # signs = "all": the first selected
    frame = build_sign_variants(
        folder,
        size=t.size,
        seed=config.run.seed,
        codes=[first],
        visibilities=[1.0],
        modes=[t.modes[0]],
        images_dir=Path(t.images).expanduser() if t.images else None,
    )
    return testbed_items(config, folder, variant_rows(frame))[0]


def _outcome(status: str, detail: str | None) -> str:
    return "ok" if status == "ok" else f"{status}: {detail or 'no detail'}"


async def smoke_model(
    config: RunConfig,
    engines: EngineFactory,
    model: str,
    roles: list[str],
    item: Item,
    on_event: Callable[[str], None],
    group: DeviceGroup | None = None,
) -> SmokeResult:
    result = SmokeResult(model, roles, group=group.label if group else "-")
    card = config.card(model)
    sign = config.task.load().item(item.sign_code)
    started = time.perf_counter()
    try:
        async with engines.open(card, on_event, group) as engine:
            result.load_s = round(time.perf_counter() - started, 1)
            answer_text = SMOKE_ANSWER
            if "system" in roles:
                s = config.systems
                answer = await run_system(
                    "sa",
                    item,
                    engine.generate,
                    modality=config.testbed.modality,
                    sign_type_mode=s.sign_type,
                    run_seed=config.run.seed,
                    sampling=Sampling(temperature=0.0, max_tokens=s.max_tokens),
                )
                result.system = _outcome(answer.status, answer.detail)
                answer_text = answer.text or SMOKE_ANSWER
            if "judge" in roles:
                j = config.judges
                judged = await run_judge(
                    (j.pointwise or PROTOCOL_KINDS)[0],
                    sign,
                    answer_text,
                    engine.generate,
                    sampling=Sampling(temperature=0.0, max_tokens=j.max_tokens, seed=config.run.seed),
                    convention=j.overall,
                )
                result.verdict = _outcome(judged.status, judged.outcome.detail)
    except (DualjudgeError, EngineDown) as e:
        result.detail = " ".join(str(e).split())
    if result.detail or any(o not in ("ok", "-") for o in (result.system, result.verdict)):
        result.status = "fail"
    return result


def smoke(
    config: RunConfig, log_dir: Path, on_event: Callable[[str], None] = lambda _: None, engines: EngineFactory | None = None
) -> list[SmokeResult]:
    """Every model of the study, on the run's device groups side by side (each group starts the next model
    it holds once its last one stopped); models served elsewhere all at once. Results in the study's order."""
    engines = engines or Engines(config.engine, seed=config.run.seed, log_dir=log_dir)
    roles = config.roles()
    here = [m for m in roles if runs_here(config, m)]
    groups = device_groups(config) if here else []
    with tempfile.TemporaryDirectory(prefix="dualjudge-smoke-") as tmp:
        item = smoke_item(config, Path(tmp))
        results: dict[str, SmokeResult] = {}

        async def on(group: DeviceGroup, queue: list[str]) -> None:
            while True:
                model = next((m for m in queue if group.holds(config.card(m))), None)
                if model is None:
                    return
                queue.remove(model)
                results[model] = await smoke_model(config, engines, model, roles[model], item, on_event, group)

        async def elsewhere(model: str) -> None:
            results[model] = await smoke_model(config, engines, model, roles[model], item, on_event)

        async def all_models() -> None:
            queue = list(here)
            await asyncio.gather(*(on(g, queue) for g in groups), *(elsewhere(m) for m in roles if m not in here))

        asyncio.run(all_models())
        return [results[m] for m in roles if m in results]


def smoke_failures(results: list[SmokeResult]) -> str:
    """One line naming each model that failed its smoke test and why; empty when none did."""
    parts = []
    for r in results:
        if r.status == "fail":
            why = r.detail or "; ".join(
                f"{k} {v}" for k, v in (("system", r.system), ("verdict", r.verdict)) if v not in ("ok", "-")
            )
            parts.append(f"{r.model}: {why}")
    return "; ".join(parts)
