"""The verdicts stage: every answer judged by a judge model, for each judge kind and variant; it runs on
the answers so far while other systems jobs still run, and again as each ends."""

from __future__ import annotations

from dualjudge.config import RunConfig
from dualjudge.protocol.judges import build_judge_request, run_judge
from dualjudge.protocol.kinds import judge_kind
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.verdicts import _RubricVerdict
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import VerdictRow
from dualjudge.storage.store import dumps


def judge_step(ctx: Context, judge: str, of: frozenset[str] | None = None) -> Step[plan.JudgeTask]:
    """Judge every answer (or only the answers of the system models in `of`, those already made)."""
    j = ctx.config.judges

    def tasks() -> list[plan.JudgeTask]:
        done = ctx.store.done_keys(VerdictRow)
        answers = [a for a in ctx.answers(None) if of is None or a.key.system_model in of]
        return [t for t in plan.judge_tasks(answers, judge, j.pointwise, j.variants) if t.key not in done]

    async def work(t: plan.JudgeTask, caller: CachingCaller) -> None:
        sign = ctx.task.item(t.answer.sign_code)
        judged = await run_judge(
            t.kind,
            sign,
            t.answer.text or "",
            caller,
            ctx.judge_sampling(),
            j.overall,
            ctx.rubric(t.variant, t.answer.sign_code),
            retries=ctx.verdict_retries(judge),
            image=ctx.shown(t.answer.key),
        )
        v = judged.verdict
        criteria = dumps(v.criteria()) if isinstance(v, _RubricVerdict) else None
        ctx.store.record(
            VerdictRow(
                **t.answer.key.fields(),
                judge_model=judge,
                judge_variant=t.variant,
                kind=t.kind,
                status=judged.status,
                scores=None if v is None else dumps(judge_kind(t.kind).read(v)),
                reasoning=getattr(v, "reasoning", None),
                criteria=criteria,
                completion_tokens=judged.result.completion_tokens,
                request_key=judged.request.key(caller.identity),
                error=judged.outcome.detail,
            )
        )

    return Step(f"judges: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    c = planner.config
    sampling, convention, sign = steps.judge_sampling(c), c.judges.overall, planner.task.item
    shown = steps.judge_images(c, seen.items)
    verdicts = [(t.answer, t.kind) for t in plan.judge_tasks(seen.every, judge, c.judges.pointwise)]
    return await planner.judged(
        judge,
        "verdicts",
        verdicts,
        seen.known,
        lambda a, kind, call: run_judge(
            kind, sign(a.sign_code), a.text or "", call, sampling, convention, rubric, image=shown(a.key)
        ),
        lambda a, kind: build_judge_request(kind, sign(a.sign_code), a.text or "", sampling, convention, rubric, shown(a.key)),
    )


def all_answers(c: RunConfig, items: int) -> int:
    return items * c.testbed.repeats * len(c.systems.strategies) * len(c.systems.models)


def tokens(c: RunConfig, items: int) -> int:
    return c.judges.max_tokens * len(c.judges.variants) * all_answers(c, items) * len(c.judges.pointwise)


STAGE = Stage(
    "verdicts",
    "judges",
    lambda ctx, model, items, of: judge_step(ctx, model, of=of),
    count,
    tokens,
    rows=(VerdictRow,),
    as_answers_arrive=True,
)
