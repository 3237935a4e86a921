"""The resumable, model-by-model runner.

    systems stage:  for each system model: answer every (variant, repeat, strategy) not yet done,
                    then restate its losing answers at length (the padding probe's inputs)
    judges stage:   for each judge model: judge every answer not yet judged, the order probe, and
                    re-judge the padded answers; the last system model, when it also judges, does
                    so first, in the same load

Before a model is loaded, a cache-only pass answers whatever the response cache already holds; the
model is loaded only if work remains. Rerunning on the same directory does only the missing work.
The steps themselves are in steps.py; the run directory's files in rundir.py.
"""

from __future__ import annotations

import secrets
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.engines import EngineFactory, Engines
from dualjudge.runs import steps
from dualjudge.runs.caller import CacheMiss, CachingCaller
from dualjudge.runs.progress import Progress, QuietProgress, run_in_order
from dualjudge.runs.rows import Answer, AnswerRow
from dualjudge.runs.rundir import STORE_FILE, TESTBED, build_testbed, testbed_items
from dualjudge.runs.steps import Step
from dualjudge.runs.store import WORK_TABLES, Store
from dualjudge.testbed.catalogue import default_catalogue


@dataclass
class RunReport:
    out: Path
    sessions_requests: int = 0
    cache_hits: int = 0
    models_loaded: list[str] = field(default_factory=list)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    verdict_failures: dict[str, dict[str, int]] = field(default_factory=dict)  # per judge model, by kind


class Runner:
    def __init__(self, config: RunConfig, out: Path, progress: Progress | None = None,
                 engines: EngineFactory | None = None) -> None:
        self.config = config
        self.out = out
        self.progress = progress or QuietProgress()
        self.engines = engines or Engines(config.engine, seed=config.run.seed, log_dir=out / "logs")
        self.session = secrets.token_hex(6)
        self.report = RunReport(out)
        self.catalogue = default_catalogue()
        out.mkdir(parents=True, exist_ok=True)
        cache = Path(config.engine.cache).expanduser() if config.engine.cache else None
        self.store = Store(out / STORE_FILE, cache)
        self._check_fingerprint()

    def _check_fingerprint(self) -> None:
        fp = self.config.fingerprint()
        stored = self.store.get_meta("config_fingerprint")
        if stored is None:
            self.store.set_meta("config_fingerprint", fp)
            self.store.set_meta("config", self.config.model_dump_json())
        elif stored != fp:
            raise DualjudgeError(f"{self.out} holds a run of a different configuration; use another --out "
                                 f"(responses are reused through the cache)")

    # -- orchestration -------------------------------------------------------------------------
    def prepare(self) -> list[Any]:
        """The run's testbed (built or checked) and its items; the runner then knows each variant's sign."""
        variants = build_testbed(self.config, self.out / TESTBED)
        self.variants = {v["variant_id"]: v for v in variants}
        return testbed_items(self.config, self.out / TESTBED, variants)

    async def run(self) -> RunReport:
        items = self.prepare()
        ctx = steps.Context(self.config, self.store, self.catalogue, self.answers)
        systems, judges = self.config.systems.models, self.config.judges.models
        # the last system model, when it also judges, judges first while still loaded: every answer (and
        # every padded answer) exists once its own systems steps are done, so one load serves both
        last = systems[-1] if systems[-1] in judges else None
        for model in systems:
            stage = [steps.answer_step(ctx, model, items), steps.padding_step(ctx, model)]
            await self.stage(model, stage + (self._judge_steps(ctx, model) if model == last else []))
        for judge in judges:
            if judge != last:
                await self.stage(judge, self._judge_steps(ctx, judge))
        for table in WORK_TABLES:
            kinds = self.store.error_kinds(table)
            if kinds:
                self.report.failures[table] = kinds
        self.report.verdict_failures = self.store.error_kinds_by("verdicts", "judge_model")
        return self.report

    @staticmethod
    def _judge_steps(ctx: steps.Context, judge: str) -> list[Step[Any]]:
        return [steps.judge_step(ctx, judge), steps.order_step(ctx, judge), steps.rejudge_step(ctx, judge),
                steps.passes_step(ctx, judge)]

    def answers(self, model: str | None = None) -> list[Answer]:
        """This run's answers (of one system model, or of all), with their variant's sign and category."""
        wanted = set(self.config.systems.models) if model is None else {model}
        out = []
        for r in self.store.read(AnswerRow):
            v = self.variants.get(r.variant_id)
            if v is not None and r.system_model in wanted:
                out.append(Answer(r.answer_key, r.text, r.predicted_category, str(v["sign_code"]), v["category"]))
        return out

    async def stage(self, model: str, stage: list[Step[Any]]) -> None:
        """Run a model's steps in order, each answered from the cache first; the model is loaded
        (once, at the first step with work left) only if the cache cannot answer everything."""
        card = self.config.card(model)
        identity = await self.engines.identity(card)
        cached = CachingCaller(self.store, model, identity, self.session)
        async with AsyncExitStack() as stack:
            caller: CachingCaller | None = None
            for step in stage:
                tasks = step.tasks()
                if not tasks:
                    continue
                remaining = []
                self.progress.stage(f"{step.name} (from cache)", len(tasks), from_cache=True)
                for t in tasks:
                    try:
                        await step.work(t, cached)
                        self.progress.advance()
                    except CacheMiss:
                        remaining.append(t)
                self.progress.end_stage()
                if not remaining:
                    continue
                if caller is None:
                    engine = await stack.enter_async_context(self.engines.open(card, self.progress.note))
                    self.report.models_loaded.append(model)
                    caller = CachingCaller(self.store, model, identity, self.session, engine)
                await self._run_remaining(step, remaining, caller)
            if caller is not None:
                self.report.sessions_requests += caller.usage.requests
                self.report.cache_hits += caller.usage.cache_hits
        self.report.cache_hits += cached.usage.cache_hits

    async def _run_remaining(self, step: Step[Any], tasks: list[Any], caller: CachingCaller) -> None:
        start = caller.usage.completion_tokens

        async def one(t: Any) -> int:
            await step.work(t, caller)
            return caller.usage.completion_tokens - start

        self.progress.stage(step.name, len(tasks))
        try:
            await run_in_order(tasks, one, self.config.engine.concurrency, self.progress)
        finally:
            self.progress.end_stage()
