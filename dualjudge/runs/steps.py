"""The steps of the study's stages: which tasks are left, and what each task asks through the protocol.
Which stages there are, in which job and order, is study.py's list (answers, padding; verdicts, order
probe, padding judged, stability passes).

A step is generic in its task type. Its `tasks()` is computed when the step starts (so it sees the
rows the previous steps wrote) and leaves out work already in a final state. The protocol asks and
reads the model (protocol/systems.py, judges.py, probes.py); a step only turns the result into a row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from dualjudge.config import RunConfig
from dualjudge.inference.cards import RemoteWeights
from dualjudge.inference.dialects import dialect
from dualjudge.inference.types import Sampling
from dualjudge.protocol.judges import UNCONSTRAINED_RETRIES, run_judge
from dualjudge.protocol.kinds import judge_kind
from dualjudge.protocol.probes import PaddingResult, pad, run_order_probe
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.seeds import derive_seed
from dualjudge.protocol.systems import Item, run_system
from dualjudge.protocol.variants import variant_rubric
from dualjudge.protocol.verdicts import _RubricVerdict
from dualjudge.runs import plan
from dualjudge.runs.caller import CachingCaller
from dualjudge.storage.rows import (
    Answer,
    AnswerKey,
    AnswerRow,
    JudgePassRow,
    OrderProbeRow,
    PaddingProbeRow,
    PaddingTextRow,
    VerdictRow,
)
from dualjudge.storage.store import Store, dumps
from dualjudge.testbed.catalogue import Catalogue

T = TypeVar("T")


@dataclass(frozen=True)
class Step(Generic[T]):
    """One step of a model's stage: its tasks (computed when the step starts) and the work per task."""

    name: str
    tasks: Callable[[], list[T]]
    work: Callable[[T, CachingCaller], Awaitable[None]]


@dataclass(frozen=True)
class Context:
    """What the steps share: the configuration, the store, the catalogue and the run's answers."""

    config: RunConfig
    store: Store
    catalogue: Catalogue
    answers: Callable[[str | None], list[Answer]]  # the run's answers (of one system model, or all)
    planned: Callable[[str | None], list[AnswerKey]]  # the answers the design asks for (of one model, or all)

    def verdict_retries(self, judge: str) -> int:
        """How often a failed verdict is asked again: only for an engine that does not enforce the verdict
        schema (a hosted API that takes it as response_format), never where the schema is a constraint."""
        w = self.config.card(judge).weights
        enforced = not isinstance(w, RemoteWeights) or dialect(w.structured_outputs).enforces_schema
        return 0 if enforced else UNCONSTRAINED_RETRIES

    def rubric(self, variant: str) -> Rubric | None:
        """The rubric a judge variant scores with (None: holistic)."""
        return variant_rubric(variant, self.config.judges.rubrics)

    def system_sampling(self) -> Sampling:
        return system_sampling(self.config)

    def judge_sampling(self) -> Sampling:
        return judge_sampling(self.config)

    def pass_sampling(self, pass_index: int) -> Sampling:
        return pass_sampling(self.config, pass_index)

    def padding_sampling(self) -> Sampling:
        return padding_sampling(self.config)


def system_sampling(config: RunConfig) -> Sampling:
    s = config.systems
    return Sampling(temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p)


def judge_sampling(config: RunConfig) -> Sampling:
    j = config.judges
    return Sampling(temperature=j.temperature, max_tokens=j.max_tokens, seed=config.run.seed)


def pass_sampling(config: RunConfig, pass_index: int) -> Sampling:
    j = config.judges
    return Sampling(temperature=j.pass_temperature, max_tokens=j.max_tokens,
                    seed=derive_seed(config.run.seed, "judge pass", pass_index))


def padding_sampling(config: RunConfig) -> Sampling:
    return Sampling(temperature=0.0, max_tokens=config.probes.padding_max_tokens, seed=config.run.seed)


def padding_share(config: RunConfig) -> int:
    """How many answers of each system model the padding probe restates (padding_samples split evenly)."""
    return -(-config.probes.padding_samples // len(config.systems.models))


# -- systems ------------------------------------------------------------------------------------------
def answer_step(ctx: Context, model: str, items: list[Item]) -> Step[plan.AnswerTask]:
    s = ctx.config.systems

    def tasks() -> list[plan.AnswerTask]:
        done = ctx.store.done_keys(AnswerRow.TABLE)
        return [t for t in plan.answer_tasks(ctx.config, items, model) if t.key not in done]

    async def work(t: plan.AnswerTask, caller: CachingCaller) -> None:
        ans = await run_system(t.strategy, t.item, caller, modality=ctx.config.testbed.modality,
                               sign_type_mode=s.sign_type, sampling=ctx.system_sampling(),
                               run_seed=ctx.config.run.seed, repeat=t.answer.repeat)
        ctx.store.record(AnswerRow(
            **t.answer.fields(), status=ans.status, text=ans.text, predicted_category=ans.predicted_category,
            format_ok=int(ans.format_ok), prompt_tokens=ans.prompt_tokens, completion_tokens=ans.completion_tokens,
            latency_s=ans.latency_s, calls=len(ans.calls),
            request_keys=dumps([c.request.key(caller.identity) for c in ans.calls]), error=ans.detail))

    return Step(f"systems: {model}", tasks, work)


def padding_step(ctx: Context, model: str) -> Step[Answer]:
    """Restate losing answers (wrong or missing SIGN_TYPE) of this model, while it is loaded."""
    p = ctx.config.probes

    def tasks() -> list[Answer]:
        if not p.padding:
            return []
        done = ctx.store.done_keys(PaddingTextRow.TABLE)
        made = {a.key: a for a in ctx.answers(model)}
        return [a for a in plan.padding_sample(ctx.planned(model), made, padding_share(ctx.config), ctx.config.run.seed)
                if a.key.astuple() not in done]

    async def work(a: Answer, caller: CachingCaller) -> None:
        padded = await pad(a.text or "", caller, ctx.padding_sampling())
        ctx.store.record(PaddingTextRow(**a.key.fields(), status=padded.status, text=padded.text,
                                        added_words=padded.added_words, error=padded.error))

    return Step(f"padding: {model}", tasks, work)


# -- judges -------------------------------------------------------------------------------------------
def judge_step(ctx: Context, judge: str, of: frozenset[str] | None = None) -> Step[plan.JudgeTask]:
    """Judge every answer (or only the answers of the system models in `of`, those already made)."""
    j = ctx.config.judges

    def tasks() -> list[plan.JudgeTask]:
        done = ctx.store.done_keys(VerdictRow.TABLE)
        answers = [a for a in ctx.answers(None) if of is None or a.key.system_model in of]
        return [t for t in plan.judge_tasks(answers, judge, j.kinds, j.variants) if t.key not in done]

    async def work(t: plan.JudgeTask, caller: CachingCaller) -> None:
        sign = ctx.catalogue.sign(t.answer.sign_code)
        judged = await run_judge(t.kind, sign, t.answer.text or "", caller, ctx.judge_sampling(), j.overall,
                                 ctx.rubric(t.variant), retries=ctx.verdict_retries(judge))
        v = judged.verdict
        criteria = dumps(v.criteria()) if isinstance(v, _RubricVerdict) else None
        ctx.store.record(VerdictRow(
            **t.answer.key.fields(), judge_model=judge, judge_variant=t.variant, kind=t.kind, status=judged.status,
            scores=None if v is None else dumps(judge_kind(t.kind).read(v)), reasoning=getattr(v, "reasoning", None),
            criteria=criteria, completion_tokens=judged.result.completion_tokens,
            request_key=judged.request.key(caller.identity), error=judged.outcome.detail))

    return Step(f"judges: {judge}", tasks, work)


def order_step(ctx: Context, judge: str) -> Step[plan.OrderTask]:
    probes = ctx.config.probes

    def tasks() -> list[plan.OrderTask]:
        if not probes.order:
            return []
        done = ctx.store.done_keys(OrderProbeRow.TABLE)
        made = {a.key: a for a in ctx.answers(None) if a.text is not None}
        pairs = [(made[a], made[b]) for a, b in plan.order_pairs(ctx.planned(None), probes.order_pairs,
                                                                 ctx.config.run.seed) if a in made and b in made]
        return [t for t in (plan.OrderTask(a, b, judge, variant) for variant in ctx.config.judges.variants
                            for a, b in pairs) if t.key not in done]

    async def work(t: plan.OrderTask, caller: CachingCaller) -> None:
        res = await run_order_probe(ctx.catalogue.sign(t.first.sign_code), t.first.text or "", t.second.text or "",
                                    caller, ctx.judge_sampling(), ctx.rubric(t.variant))
        a, b = t.first.key, t.second.key
        ctx.store.record(OrderProbeRow(
            variant_id=a.variant_id, repeat=a.repeat, judge_model=judge, judge_variant=t.variant,
            first_model=a.system_model,
            first_strategy=a.strategy, second_model=b.system_model, second_strategy=b.strategy, status=res.status,
            winner_ab=res.winner_ab, winner_ba=res.winner_ba,
            flipped=None if res.flipped is None else int(res.flipped), error=res.detail))

    return Step(f"order probe: {judge}", tasks, work)


@dataclass(frozen=True)
class PassTask:
    task: plan.JudgeTask
    pass_index: int

    @property
    def key(self) -> tuple[object, ...]:
        return (*self.task.key, self.pass_index)


def passes_step(ctx: Context, judge: str) -> Step[PassTask]:
    """The stability check: every verdict judged again `passes` times, each pass sampled at
    pass_temperature under its own seed (pass 1..k; the verdict itself is not one of them)."""
    passes = ctx.config.judges.passes

    def tasks() -> list[PassTask]:
        if passes < 2:
            return []
        done = ctx.store.done_keys(JudgePassRow.TABLE)
        judged = plan.judge_tasks(ctx.answers(None), judge, ctx.config.judges.kinds, ctx.config.judges.variants)
        return [t for t in (PassTask(task, k) for k in range(1, passes + 1) for task in judged) if t.key not in done]

    async def work(t: PassTask, caller: CachingCaller) -> None:
        a = t.task.answer
        judged = await run_judge(t.task.kind, ctx.catalogue.sign(a.sign_code), a.text or "", caller,
                                 ctx.pass_sampling(t.pass_index), ctx.config.judges.overall, ctx.rubric(t.task.variant))
        ctx.store.record(JudgePassRow(
            **a.key.fields(), judge_model=judge, judge_variant=t.task.variant, kind=t.task.kind,
            pass_index=t.pass_index, status=judged.status, value=judged.value(), error=judged.outcome.detail))

    return Step(f"stability passes: {judge}", tasks, work)


@dataclass(frozen=True)
class RejudgeTask:
    padded: PaddingTextRow
    original: VerdictRow  # this judge's verdict on the original answer, in the same variant and kind
    sign_code: str


def rejudge_step(ctx: Context, judge: str) -> Step[RejudgeTask]:
    """Re-judge the padded answers, after this judge's own verdicts on the originals exist."""

    def tasks() -> list[RejudgeTask]:
        if not ctx.config.probes.padding:
            return []
        signs = {a.key: a.sign_code for a in ctx.answers(None)}
        originals = {(*r.key()[:4], r.judge_variant, r.kind): r
                     for r in ctx.store.read(VerdictRow, status="ok", judge_model=judge)}
        done = ctx.store.done_keys(PaddingProbeRow.TABLE)
        out = []
        for variant in ctx.config.judges.variants:
            for padded in ctx.store.read(PaddingTextRow, status="ok"):
                key = padded.answer_key
                for kind in ctx.config.judges.kinds:
                    original = originals.get((*key.astuple(), variant, kind))
                    if original is not None and key in signs and (*key.astuple(), judge, variant, kind) not in done:
                        out.append(RejudgeTask(padded, original, signs[key]))
        return out

    async def work(t: RejudgeTask, caller: CachingCaller) -> None:
        kind = t.original.kind
        before = t.original.score(judge_kind(kind).value)
        judged = await run_judge(kind, ctx.catalogue.sign(t.sign_code), t.padded.text or "", caller,
                                 ctx.judge_sampling(), ctx.config.judges.overall, ctx.rubric(t.original.judge_variant),
                                 retries=ctx.verdict_retries(judge))
        res = PaddingResult(kind, None if before is None else float(before), judged.outcome, t.padded.added_words or 0)
        ctx.store.record(PaddingProbeRow(
            variant_id=t.padded.variant_id, repeat=t.padded.repeat, system_model=t.padded.system_model,
            strategy=t.padded.strategy, judge_model=judge, judge_variant=t.original.judge_variant, kind=kind,
            status=judged.status, original=res.original,
            padded=res.padded_value, shift=res.score_shift, flipped=None if res.flipped is None else int(res.flipped),
            error=judged.outcome.detail))

    return Step(f"padding judged: {judge}", tasks, work)
