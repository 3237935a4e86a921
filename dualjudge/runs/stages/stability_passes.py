"""The stability passes: every verdict judged again `passes` times at pass_temperature."""

from __future__ import annotations

from dataclasses import dataclass

from dualjudge.config import RunConfig
from dualjudge.protocol.judges import build_judge_request, run_judge
from dualjudge.protocol.rubric import Rubric
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount
from dualjudge.runs.stage import Stage
from dualjudge.runs.stages.verdicts import tokens as verdict_tokens
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import JudgePassRow


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
        done = ctx.store.done_keys(JudgePassRow)
        judged = plan.judge_tasks(ctx.answers(None), judge, ctx.config.judges.pointwise, ctx.config.judges.variants)
        return [t for t in (PassTask(task, k) for k in range(1, passes + 1) for task in judged) if t.key not in done]

    async def work(t: PassTask, caller: CachingCaller) -> None:
        a = t.task.answer
        judged = await run_judge(
            t.task.kind,
            ctx.task.item(a.sign_code),
            a.text or "",
            caller,
            ctx.pass_sampling(t.pass_index),
            ctx.config.judges.overall,
            ctx.rubric(t.task.variant, a.sign_code),
            retries=ctx.verdict_retries(judge),
            image=ctx.shown(a.key),
        )
        ctx.store.record(
            JudgePassRow(
                **a.key.fields(),
                judge_model=judge,
                judge_variant=t.task.variant,
                kind=t.task.kind,
                pass_index=t.pass_index,
                status=judged.status,
                value=judged.value(),
                error=judged.outcome.detail,
            )
        )

    return Step(f"stability passes: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    c = planner.config
    if c.judges.passes < 2:
        return None
    convention, sign, shown = c.judges.overall, planner.task.item, steps.judge_images(c, seen.items)
    verdicts = [(t.answer, t.kind) for t in plan.judge_tasks(seen.every, judge, c.judges.pointwise)]
    passes = [(a, (kind, k)) for k in range(1, c.judges.passes + 1) for a, kind in verdicts]
    return await planner.judged(
        judge,
        "stability passes",
        passes,
        seen.known,
        lambda a, x, call: run_judge(
            x[0], sign(a.sign_code), a.text or "", call, steps.pass_sampling(c, x[1]), convention, rubric, image=shown(a.key)
        ),
        lambda a, x: build_judge_request(
            x[0], sign(a.sign_code), a.text or "", steps.pass_sampling(c, x[1]), convention, rubric, shown(a.key)
        ),
    )


def tokens(c: RunConfig, items: int) -> int:
    return verdict_tokens(c, items) * c.judges.passes if c.judges.passes >= 2 else 0


STAGE = Stage(
    "stability passes", "judges", lambda ctx, model, items, of: passes_step(ctx, model), count, tokens, rows=(JudgePassRow,)
)
