"""The pairwise judge (judges.kinds with "pairwise"): every pair of the study's design (judges.pairs) in both orders,
a constrained A/B/tie verdict against the reference. Its pairs grow with the square of the system models: N models
give N(N-1)/2 pairs per prompt with `all`, and the plan counts them."""

from __future__ import annotations

from collections.abc import Awaitable

from dualjudge.config import RunConfig
from dualjudge.inference.types import Image
from dualjudge.protocol.comparison import Comparison, build_comparison_request, run_comparison
from dualjudge.protocol.judges import Gold
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.variants import variant_rubric
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import CacheProbe, Planner, Seen, StageCount, probe
from dualjudge.runs.stage import Stage
from dualjudge.runs.stages.recognition_probe import families
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import AnswerKey, ComparisonRow

ORDERS = ("a", "b")


def pairs(config: RunConfig, planned: list[AnswerKey], judge: str) -> list[tuple[AnswerKey, AnswerKey]]:
    if not config.judges.pairwise:
        return []
    return plan.comparison_pairs(planned, judge, families(config), config.judges.pairs, config.run.seed)


def comparison_step(ctx: Context, judge: str) -> Step[plan.ComparisonTask]:
    def tasks() -> list[plan.ComparisonTask]:
        wanted = pairs(ctx.config, ctx.planned(None), judge)
        if not wanted:
            return []
        done = ctx.store.done_keys(ComparisonRow)
        made = {a.key: a for a in ctx.answers(None) if a.text is not None}
        return [
            t
            for a, b in wanted
            if a in made and b in made
            for t in (plan.ComparisonTask(made[a], made[b], judge, first) for first in ORDERS)
            if t.key not in done
        ]

    async def work(t: plan.ComparisonTask, caller: CachingCaller) -> None:
        first, second = (t.a, t.b) if t.shown_first == "a" else (t.b, t.a)
        gold, image = ctx.task.item(t.a.sign_code), ctx.shown(t.a.key)  # both answers are to the same item
        res = await run_comparison(gold, first.text or "", second.text or "", caller, ctx.judge_sampling(), image)
        winner = (
            None
            if res.winner is None
            else "tie"
            if res.winner == "tie"
            else (t.shown_first if res.winner == "first" else ("b" if t.shown_first == "a" else "a"))
        )
        a, b = t.a.key, t.b.key
        ctx.store.record(
            ComparisonRow(
                variant_id=a.variant_id,
                repeat=a.repeat,
                strategy=a.strategy,
                judge_model=judge,
                system_a=a.system_model,
                system_b=b.system_model,
                shown_first=t.shown_first,
                status=res.status,
                winner=winner,
                error=res.detail,
            )
        )

    return Step(f"pairwise judge: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    c = planner.config
    counted_with = variant_rubric(c.judges.variants[0], c.judges.rubrics, planner.config.default_rubric())
    if not c.judges.pairwise or rubric != counted_with:  # one verdict per pair and order, whatever the variants
        return None
    sampling, item, known, image_of = steps.judge_sampling(c), planner.task.item, seen.known, steps.judge_images(c, seen.items)
    row = StageCount(judge, "pairwise")
    by_key = {a.key: a for a in seen.every}
    for ka, kb in pairs(c, [a.key for a in seen.every], judge):
        a, b = known.get(ka, by_key[ka]), known.get(kb, by_key[kb])
        ready = ka in known and kb in known
        for shown in ORDERS:
            first, second = (a, b) if shown == "a" else (b, a)
            row.requests += 1
            hits = 0
            if ready:
                gold, shown_texts, image = item(a.sign_code), (first.text or "", second.text or ""), image_of(ka)

                def judged(
                    call: CacheProbe, gold: Gold = gold, texts: tuple[str, str] = shown_texts, image: Image | None = image
                ) -> Awaitable[Comparison]:
                    return run_comparison(gold, texts[0], texts[1], call, sampling, image)

                _, hits = await probe(
                    judged,
                    planner.caches,
                    planner.identities[judge],
                    planner.observer(judge, "pairwise", ka),
                )
                row.cached += hits
            r = build_comparison_request(item(a.sign_code), first.text or "", second.text or "", sampling, image_of(ka))
            row.add(planner.counters[judge].count(r, pending=0 if ready else 2 * planner.answer_tokens, times=1 - min(hits, 1)))
            row.completion_tokens += (1 - min(hits, 1)) * sampling.max_tokens
    return row


def tokens(c: RunConfig, items: int) -> int:
    """At most: every pair of the widest design in both orders, per variant, repeat and strategy."""
    if not c.judges.pairwise:
        return 0
    n = len(c.systems.models)
    per_prompt = n * (n - 1) // 2 if c.judges.pairs in ("all", "own_vs_other") else min(int(c.judges.pairs), n * (n - 1) // 2)
    prompts = items * c.testbed.repeats * len(c.systems.strategies)
    return c.judges.max_tokens * 2 * per_prompt * prompts


STAGE = Stage(
    "pairwise",
    "judges",
    lambda ctx, model, items, of: comparison_step(ctx, model),
    count,
    tokens,
    rows=(ComparisonRow,),
)
