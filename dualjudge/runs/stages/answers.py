"""The answers stage: every (variant, repeat, strategy) of a system model, MA as its three calls."""

from __future__ import annotations

from dualjudge.config import RunConfig
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.systems import STEPS, Item, build_step_request, run_system
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount, probe
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import Answer, AnswerRow
from dualjudge.storage.store import dumps


def answer_step(ctx: Context, model: str, items: list[Item]) -> Step[plan.AnswerTask]:
    s = ctx.config.systems

    def tasks() -> list[plan.AnswerTask]:
        done = ctx.store.done_keys(AnswerRow)
        return [t for t in plan.answer_tasks(ctx.config, items, model) if t.key not in done]

    async def work(t: plan.AnswerTask, caller: CachingCaller) -> None:
        ans = await run_system(
            t.strategy,
            t.item,
            caller,
            modality=ctx.config.testbed.modality,
            sign_type_mode=s.sign_type,
            sampling=ctx.system_sampling(),
            run_seed=ctx.config.run.seed,
            repeat=t.answer.repeat,
        )
        ctx.store.record(
            AnswerRow(
                **t.answer.fields(),
                status=ans.status,
                text=ans.text,
                predicted_category=ans.predicted_category,
                format_ok=int(ans.format_ok),
                prompt_tokens=ans.prompt_tokens,
                completion_tokens=ans.completion_tokens,
                latency_s=ans.latency_s,
                calls=len(ans.calls),
                request_keys=dumps([c.request.key(caller.identity) for c in ans.calls]),
                error=ans.detail,
            )
        )

    return Step(f"systems: {model}", tasks, work)


async def count(planner: Planner, model: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    """The answers of a model: every (strategy, variant, repeat), MA as its three calls."""
    c = planner.config
    row, known = StageCount(model, "answers"), seen.known
    sampling, counter = steps.system_sampling(c), planner.counters[model]
    for t in plan.answer_tasks(c, seen.items, model):
        n_steps = len(STEPS[t.strategy])
        row.requests += n_steps
        ans, hits = await probe(
            lambda call: run_system(  # awaited at once: t is this task
                t.strategy,
                t.item,
                call,
                modality=c.testbed.modality,
                sign_type_mode=c.systems.sign_type,
                sampling=sampling,
                run_seed=c.run.seed,
                repeat=t.answer.repeat,
            ),
            planner.caches,
            planner.identities[model],
            planner.observer(model, "answers", t.answer),
        )
        row.cached += hits
        if ans is not None and ans.text is not None:
            gold = planner.task.item(t.item.sign_code)
            known[t.answer] = Answer(t.answer, ans.text, ans.predicted_category, gold.id, gold.label or "")
        for i in range(hits, n_steps):  # the calls still to send; earlier outputs at their expected length
            request = build_step_request(
                t.strategy,
                i,
                t.item,
                modality=c.testbed.modality,
                sign_type_mode=c.systems.sign_type,
                sampling=sampling,
                previous=("",) * i,
            )
            row.add(counter.count(request, pending=i * planner.answer_tokens))
            row.completion_tokens += sampling.max_tokens
    return row


def tokens(c: RunConfig, items: int) -> int:
    calls = sum(len(STEPS[st]) for st in c.systems.strategies)  # MA: its three calls
    return items * c.testbed.repeats * calls * c.systems.max_tokens


STAGE = Stage("answers", "systems", lambda ctx, model, items, of: answer_step(ctx, model, items), count, tokens, rows=(AnswerRow,))
