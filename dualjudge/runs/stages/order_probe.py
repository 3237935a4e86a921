"""The order probe: pairs of answers judged in both orders (position bias)."""

from __future__ import annotations

from dualjudge.config import RunConfig
from dualjudge.protocol.probes import build_pairwise_request, run_order_probe
from dualjudge.protocol.rubric import Rubric
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount, probe
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import OrderProbeRow


def order_step(ctx: Context, judge: str) -> Step[plan.OrderTask]:
    probes = ctx.config.probes

    def tasks() -> list[plan.OrderTask]:
        if not probes.order:
            return []
        done = ctx.store.done_keys(OrderProbeRow)
        made = {a.key: a for a in ctx.answers(None) if a.text is not None}
        pairs = [
            (made[a], made[b])
            for a, b in plan.order_pairs(ctx.planned(None), probes.order_pairs, ctx.config.run.seed)
            if a in made and b in made
        ]
        return [
            t
            for t in (plan.OrderTask(a, b, judge, variant) for variant in ctx.config.judges.variants for a, b in pairs)
            if t.key not in done
        ]

    async def work(t: plan.OrderTask, caller: CachingCaller) -> None:
        res = await run_order_probe(
            ctx.task.item(t.first.sign_code),
            t.first.text or "",
            t.second.text or "",
            caller,
            ctx.judge_sampling(),
            ctx.rubric(t.variant, t.first.sign_code),
        )
        a, b = t.first.key, t.second.key
        ctx.store.record(
            OrderProbeRow(
                variant_id=a.variant_id,
                repeat=a.repeat,
                judge_model=judge,
                judge_variant=t.variant,
                first_model=a.system_model,
                first_strategy=a.strategy,
                second_model=b.system_model,
                second_strategy=b.strategy,
                status=res.status,
                winner_ab=res.winner_ab,
                winner_ba=res.winner_ba,
                flipped=None if res.flipped is None else int(res.flipped),
                error=res.detail,
            )
        )

    return Step(f"order probe: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    c = planner.config
    if not c.probes.order:
        return None
    sampling, sign, known = steps.judge_sampling(c), planner.task.item, seen.known
    row = StageCount(judge, "order probe")
    by_key = {a.key: a for a in seen.every}
    for ka, kb in plan.order_pairs([a.key for a in seen.every], c.probes.order_pairs, c.run.seed):
        a, b = by_key[ka], by_key[kb]
        row.requests += 2
        hits, ready = 0, a.key in known and b.key in known
        first, second = known.get(a.key, a), known.get(b.key, b)
        if ready:
            _, hits = await probe(
                lambda call: run_order_probe(sign(first.sign_code), first.text or "", second.text or "", call, sampling, rubric),
                planner.caches,
                planner.identities[judge],
                planner.observer(judge, "order probe", a.key),
            )
            row.cached += hits
        r = build_pairwise_request(sign(a.sign_code), first.text or "", second.text or "", sampling, rubric)
        pending = 0 if ready else 2 * planner.answer_tokens
        row.add(planner.counters[judge].count(r, pending=pending, times=2 - hits))
        row.completion_tokens += (2 - hits) * sampling.max_tokens
    return row


def tokens(c: RunConfig, items: int) -> int:
    return c.judges.max_tokens * len(c.judges.variants) * c.probes.order_pairs * 2 if c.probes.order else 0


STAGE = Stage("order probe", "judges", lambda ctx, model, items, of: order_step(ctx, model), count, tokens, rows=(OrderProbeRow,))
