"""The resumable, model-by-model runner.

    systems stage:  for each system model: answer every (variant, repeat, strategy) not yet done
    judges stage:   for each judge model: judge every answer not yet judged (+ the order probe)
    padding probe:  system models restate low-scored answers; judges re-judge them

Before a model is loaded, a cache-only pass answers whatever the response cache already holds; the
model is loaded only if work remains. Rerunning on the same directory does only the missing work.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import get_card
from dualjudge.inference.engines import EngineFactory, Engines
from dualjudge.inference.types import Image, Sampling
from dualjudge.protocol.judges import VERDICTS, build_judge_request
from dualjudge.protocol.probes import build_padding_request, build_pairwise_request, order_result, padding_change
from dualjudge.protocol.systems import Item, run_system
from dualjudge.protocol.verdicts import EquivalenceVerdict, PairwiseVerdict, QualityVerdict, interpret
from dualjudge.runs import plan
from dualjudge.runs.caller import CacheMiss, CachingCaller
from dualjudge.runs.progress import Progress, QuietProgress, run_in_order
from dualjudge.runs.store import WORK_TABLES, Store, dumps
from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.variants import build_variants, load_manifest

STORE_FILE = "results.sqlite"


@dataclass(frozen=True)
class Step:
    """One step of a model's stage: its tasks (computed when the step starts) and the work per task."""

    name: str
    tasks: Callable[[], list[Any]]
    work: Callable[[Any, CachingCaller], Awaitable[None]]


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

    # -- testbed -------------------------------------------------------------------------------
    def testbed(self) -> list[dict[str, Any]]:
        t = self.config.testbed
        folder = self.out / "testbed"
        frame = build_variants(folder, size=t.size, seed=self.config.run.seed, codes=t.codes(),
                               visibilities=t.visibilities, modes=t.modes,
                               images_dir=Path(t.images).expanduser() if t.images else None)
        return frame.to_dict("records")

    def items(self, variants: list[dict[str, Any]]) -> list[Item]:
        out = []
        for v in variants:
            image = None
            if self.config.testbed.modality == "image":
                image = Image.from_png((self.out / "testbed" / v["image_path"]).read_bytes())
            out.append(Item(v["variant_id"], str(v["sign_code"]), v["scene_text"], image))
        return out

    # -- orchestration -------------------------------------------------------------------------
    async def run(self) -> RunReport:
        variants = self.testbed()
        self.variants = {v["variant_id"]: v for v in variants}
        items = self.items(variants)
        for model in self.config.systems.models:
            await self._stage(model, [self._answer_step(model, items), self._padding_step(model)])
        answers = self._answers()
        for judge in self.config.judges.models:
            await self._stage(judge, [self._judge_step(judge, answers), self._rejudge_step(judge)])
        for table in WORK_TABLES:
            kinds = self.store.error_kinds(table)
            if kinds:
                self.report.failures[table] = kinds
        self.report.verdict_failures = self.store.error_kinds_by("verdicts", "judge_model")
        return self.report

    def _answers(self, model: str | None = None) -> list[dict[str, Any]]:
        rows = [dict(r) for r in self.store.rows("answers")]
        wanted = set(self.config.systems.models) if model is None else {model}
        out = []
        for r in rows:
            v = self.variants.get(r["variant_id"])
            if v is not None and r["system_model"] in wanted:
                out.append({**r, "sign_code": str(v["sign_code"]), "category": v["category"]})
        return out

    async def _stage(self, model: str, steps: list[Step]) -> None:
        """Run a model's steps in order, each answered from the cache first; the model is loaded
        (once, at the first step with work left) only if the cache cannot answer everything."""
        card = get_card(model)
        identity = await self.engines.identity(card)
        cached = CachingCaller(self.store, model, identity, self.session)
        async with AsyncExitStack() as stack:
            caller: CachingCaller | None = None
            for step in steps:
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

    async def _run_remaining(self, step: Step, tasks: list[Any], caller: CachingCaller) -> None:
        start = caller.usage.completion_tokens

        async def one(t: Any) -> int:
            await step.work(t, caller)
            return caller.usage.completion_tokens - start

        self.progress.stage(step.name, len(tasks))
        try:
            await run_in_order(tasks, one, self.config.engine.concurrency, self.progress)
        finally:
            self.progress.end_stage()

    # -- systems -------------------------------------------------------------------------------
    def _answer_step(self, model: str, items: list[Item]) -> Step:
        s = self.config.systems
        sampling = Sampling(temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p)

        def tasks() -> list[Any]:
            done = self.store.done_keys("answers")
            return [t for t in plan.answer_tasks(self.config, items, model) if t.key not in done]

        async def work(t: plan.AnswerTask, caller: CachingCaller) -> None:
            ans = await run_system(t.strategy, t.item, caller, modality=self.config.testbed.modality,
                                   sign_type_mode=s.sign_type, sampling=sampling, run_seed=self.config.run.seed,
                                   repeat=t.repeat)
            self.store.record("answers", {
                "variant_id": t.item.variant_id, "repeat": t.repeat, "system_model": model, "strategy": t.strategy,
                "status": ans.status, "text": ans.text, "predicted_category": ans.predicted_category,
                "format_ok": int(ans.format_ok), "prompt_tokens": ans.prompt_tokens,
                "completion_tokens": ans.completion_tokens, "latency_s": ans.latency_s, "calls": len(ans.calls),
                "request_keys": dumps([c.request.key(caller.identity) for c in ans.calls]), "attempts": 1,
                "error": ans.detail})

        return Step(f"systems: {model}", tasks, work)

    def _padding_step(self, model: str) -> Step:
        """Restate losing answers (wrong or missing SIGN_TYPE) of this model, while it is loaded."""
        p = self.config.probes
        pad_sampling = Sampling(temperature=0.0, max_tokens=p.padding_max_tokens, seed=self.config.run.seed)

        def tasks() -> list[Any]:
            if not p.padding:
                return []
            share = -(-p.padding_samples // len(self.config.systems.models))
            done = self.store.done_keys("padding_texts")
            sample = plan.padding_sample(self._answers(model), share, self.config.run.seed)
            return [a for a in sample if (a["variant_id"], a["repeat"], a["system_model"], a["strategy"]) not in done]

        async def work(a: dict[str, Any], caller: CachingCaller) -> None:
            result = await caller(build_padding_request(a["text"], pad_sampling))
            self.store.record("padding_texts", {
                "variant_id": a["variant_id"], "repeat": a["repeat"], "system_model": a["system_model"],
                "strategy": a["strategy"], "status": "ok" if result.ok else "error", "text": result.text,
                "added_words": len((result.text or "").split()) - len(a["text"].split()) if result.ok else None,
                "attempts": 1, "error": result.error})

        return Step(f"padding: {model}", tasks, work)

    # -- judges --------------------------------------------------------------------------------
    def _judge_sampling(self) -> Sampling:
        j = self.config.judges
        return Sampling(temperature=j.temperature, max_tokens=j.max_tokens, seed=self.config.run.seed)

    def _judge_step(self, judge: str, answers: list[dict[str, Any]]) -> Step:
        j = self.config.judges
        sampling = self._judge_sampling()

        def tasks() -> list[Any]:
            done = self.store.done_keys("verdicts")
            out: list[Any] = [t for t in plan.judge_tasks(answers, judge, j.kinds) if t.key not in done]
            if self.config.probes.order:
                done_order = self.store.done_keys("order_probe")
                for a, b in plan.order_pairs(answers, self.config.probes.order_pairs, self.config.run.seed):
                    task = plan.OrderTask(a["variant_id"], a["repeat"], a["sign_code"], judge,
                                          (a["system_model"], a["strategy"], a["text"]),
                                          (b["system_model"], b["strategy"], b["text"]))
                    if task.key not in done_order:
                        out.append(task)
            return out

        async def work(t: Any, caller: CachingCaller) -> None:
            sign = self.catalogue.sign(t.sign_code)
            if isinstance(t, plan.OrderTask):
                ab = interpret(PairwiseVerdict, await caller(build_pairwise_request(sign, t.first[2], t.second[2], sampling)))
                ba = interpret(PairwiseVerdict, await caller(build_pairwise_request(sign, t.second[2], t.first[2], sampling)))
                res = order_result(ab, ba)
                status = "ok" if res.complete else ("error" if "error" in (ab.status, ba.status) else "parse_failure")
                self.store.record("order_probe", {
                    "variant_id": t.variant_id, "repeat": t.repeat, "judge_model": judge, "first_model": t.first[0],
                    "first_strategy": t.first[1], "second_model": t.second[0], "second_strategy": t.second[1],
                    "status": status, "winner_ab": res.winner_ab, "winner_ba": res.winner_ba,
                    "flipped": None if res.flipped is None else int(res.flipped), "attempts": 1,
                    "error": ab.detail or ba.detail})
                return
            request = build_judge_request(t.kind, sign, t.text, sampling)
            result = await caller(request)
            outcome = interpret(VERDICTS[t.kind], result)
            v = outcome.verdict
            row = {"variant_id": t.answer_key[0], "repeat": t.answer_key[1], "system_model": t.answer_key[2],
                   "strategy": t.answer_key[3], "judge_model": judge, "kind": t.kind, "status": outcome.status,
                   "accuracy": None, "completeness": None, "relevance": None, "overall": None, "equivalent": None,
                   "reasoning": getattr(v, "reasoning", None), "completion_tokens": result.completion_tokens,
                   "request_key": request.key(caller.identity), "attempts": 1, "error": outcome.detail}
            if isinstance(v, QualityVerdict):
                row.update(accuracy=v.accuracy, completeness=v.completeness, relevance=v.relevance, overall=v.overall)
            elif isinstance(v, EquivalenceVerdict):
                row.update(equivalent=int(v.equivalent))
            self.store.record("verdicts", row)

        return Step(f"judges: {judge}", tasks, work)

    def _rejudge_step(self, judge: str) -> Step:
        """Re-judge the padded answers, after this judge's own verdicts on the originals exist."""
        j = self.config.judges
        sampling = self._judge_sampling()
        state: dict[str, Any] = {}

        def tasks() -> list[Any]:
            if not self.config.probes.padding:
                return []
            state["padded"] = {(r["variant_id"], r["repeat"], r["system_model"], r["strategy"]): r["text"]
                               for r in self.store.rows("padding_texts", "WHERE status = 'ok'")}
            state["originals"] = {(r["variant_id"], r["repeat"], r["system_model"], r["strategy"], r["kind"]): r
                                  for r in self.store.rows("verdicts", "WHERE status = 'ok' AND judge_model = ?",
                                                           (judge,))}
            done = self.store.done_keys("padding_probe")
            return [(key, kind) for key in state["padded"] for kind in j.kinds
                    if (*key, kind) in state["originals"] and (*key, judge, kind) not in done]

        async def work(task: tuple[tuple[Any, ...], str], caller: CachingCaller) -> None:
            key, kind = task
            sign = self.catalogue.sign(str(self.variants[key[0]]["sign_code"]))
            outcome = interpret(VERDICTS[kind], await caller(build_judge_request(kind, sign, state["padded"][key],
                                                                                  sampling)))
            orig = state["originals"][(*key, kind)]
            before = orig["overall"] if kind == "quality" else orig["equivalent"]
            after = None
            if isinstance(outcome.verdict, QualityVerdict):
                after = outcome.verdict.overall
            elif isinstance(outcome.verdict, EquivalenceVerdict):
                after = float(outcome.verdict.equivalent)
            shift, flipped = padding_change(kind, before, after) if after is not None else (None, None)
            self.store.record("padding_probe", {
                "variant_id": key[0], "repeat": key[1], "system_model": key[2], "strategy": key[3],
                "judge_model": judge, "kind": kind, "status": outcome.status, "original": before, "padded": after,
                "shift": shift, "flipped": None if flipped is None else int(flipped), "attempts": 1,
                "error": outcome.detail})

        return Step(f"padding judged: {judge}", tasks, work)


def load_run_store(out: Path) -> Store:
    """A run's store opened read-only (status, export): nothing in it is ever changed."""
    if not (out / STORE_FILE).exists():
        raise DualjudgeError(f"{out}: no {STORE_FILE}; is this a run directory?")
    return Store(out / STORE_FILE, readonly=True)


def load_variants(out: Path) -> dict[str, dict[str, Any]]:
    return {r["variant_id"]: r for r in load_manifest(out / "testbed").to_dict("records")}
