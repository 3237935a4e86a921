"""The self-recognition probe: each judge model's own answers against another family's, "which did you write?" in
both orders (and, with `recognition_single`, each answer alone). Asked once per judge, whatever its variants."""

from __future__ import annotations

from dualjudge.config import RunConfig
from dualjudge.protocol.recognition import build_pair_request, build_single_request, run_recognition
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.variants import variant_rubric
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount, probe
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import AnswerKey, RecognitionProbeRow


def families(config: RunConfig) -> dict[str, str]:
    """Each system and judge model's vendor family (its card's)."""
    return {m: config.card(m).family for m in dict.fromkeys([*config.systems.models, *config.judges.models])}


def pairs(config: RunConfig, planned: list[AnswerKey], judge: str) -> list[tuple[AnswerKey, AnswerKey]]:
    probes = config.probes
    if not probes.recognition:
        return []
    return plan.recognition_pairs(planned, judge, families(config), probes.recognition_pairs, config.run.seed)


def recognition_step(ctx: Context, judge: str) -> Step[plan.RecognitionTask]:
    single = ctx.config.probes.recognition_single

    def tasks() -> list[plan.RecognitionTask]:
        wanted = pairs(ctx.config, ctx.planned(None), judge)
        if not wanted:
            return []
        done = ctx.store.done_keys(RecognitionProbeRow)
        made = {a.key: a for a in ctx.answers(None) if a.text is not None}
        return [
            t
            for t in (plan.RecognitionTask(made[a], made[b], judge) for a, b in wanted if a in made and b in made)
            if t.key not in done
        ]

    async def work(t: plan.RecognitionTask, caller: CachingCaller) -> None:
        res = await run_recognition(
            ctx.task.item(t.own.sign_code), t.own.text or "", t.other.text or "", caller, ctx.judge_sampling(), single
        )

        def bit(v: bool | None) -> int | None:
            return None if v is None else int(v)

        a, b = t.own.key, t.other.key
        ctx.store.record(
            RecognitionProbeRow(
                variant_id=a.variant_id,
                repeat=a.repeat,
                judge_model=judge,
                own_strategy=a.strategy,
                other_model=b.system_model,
                other_strategy=b.strategy,
                status=res.status,
                own_first=bit(res.own_first),
                own_second=bit(res.own_second),
                claims_own=bit(res.claims_own),
                claims_other=bit(res.claims_other),
                error=res.detail,
            )
        )

    return Step(f"recognition probe: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    c = planner.config
    first = variant_rubric(c.judges.variants[0], c.judges.rubrics, planner.config.default_rubric())
    if not c.probes.recognition or rubric != first:  # asked once per judge: counted with its first variant
        return None
    sampling, item, known, single = steps.judge_sampling(c), planner.task.item, seen.known, c.probes.recognition_single
    row = StageCount(judge, "recognition probe")
    by_key = {a.key: a for a in seen.every}
    per_pair = 4 if single else 2
    for ka, kb in pairs(c, [a.key for a in seen.every], judge):
        own, other = known.get(ka, by_key[ka]), known.get(kb, by_key[kb])
        row.requests += per_pair
        hits, ready = 0, ka in known and kb in known
        if ready:
            _, hits = await probe(
                lambda call: run_recognition(item(own.sign_code), own.text or "", other.text or "", call, sampling, single),
                planner.caches,
                planner.identities[judge],
                planner.observer(judge, "recognition probe", ka),
            )
            row.cached += hits
        pending = 0 if ready else 2 * planner.answer_tokens
        r = build_pair_request(item(own.sign_code), own.text or "", other.text or "", sampling)
        row.add(planner.counters[judge].count(r, pending=pending, times=2 - min(hits, 2)))
        if single:
            r = build_single_request(item(own.sign_code), own.text or "", sampling)
            row.add(planner.counters[judge].count(r, pending=pending // 2, times=2 - max(0, hits - 2)))
        row.completion_tokens += (per_pair - hits) * sampling.max_tokens
    return row


def tokens(c: RunConfig, items: int) -> int:
    if not c.probes.recognition:
        return 0
    return c.judges.max_tokens * c.probes.recognition_pairs * (4 if c.probes.recognition_single else 2)


STAGE = Stage(
    "recognition probe",
    "judges",
    lambda ctx, model, items, of: recognition_step(ctx, model),
    count,
    tokens,
    rows=(RecognitionProbeRow,),
)
