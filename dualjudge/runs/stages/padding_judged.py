"""The padding probe judged: each restated answer judged again where the judge's verdict on the
original is ok (verbosity bias)."""

from __future__ import annotations

from dataclasses import dataclass

from dualjudge.config import RunConfig
from dualjudge.protocol.judges import build_judge_request, run_judge
from dualjudge.protocol.kinds import QUALITY, judge_kind
from dualjudge.protocol.probes import PaddingResult
from dualjudge.protocol.rubric import Rubric
from dualjudge.runs import steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import PaddingProbeRow, PaddingTextRow, VerdictRow


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
        originals = {(*r.key()[:4], r.judge_variant, r.kind): r for r in ctx.store.read(VerdictRow, status="ok", judge_model=judge)}
        done = ctx.store.done_keys(PaddingProbeRow)
        out = []
        for variant in ctx.config.judges.variants:
            for padded in ctx.store.read(PaddingTextRow, status="ok"):
                key = padded.answer_key
                for kind in ctx.config.judges.pointwise:
                    original = originals.get((*key.astuple(), variant, kind))
                    if original is not None and key in signs and (*key.astuple(), judge, variant, kind) not in done:
                        out.append(RejudgeTask(padded, original, signs[key]))
        return out

    async def work(t: RejudgeTask, caller: CachingCaller) -> None:
        kind = t.original.kind
        before = t.original.score(judge_kind(kind).value)
        judged = await run_judge(
            kind,
            ctx.task.item(t.sign_code),
            t.padded.text or "",
            caller,
            ctx.judge_sampling(),
            ctx.config.judges.overall,
            ctx.rubric(t.original.judge_variant, t.sign_code),
            retries=ctx.verdict_retries(judge),
            image=ctx.shown(t.padded.answer_key),
        )
        res = PaddingResult(kind, None if before is None else float(before), judged.outcome, t.padded.added_words or 0)
        ctx.store.record(
            PaddingProbeRow(
                variant_id=t.padded.variant_id,
                repeat=t.padded.repeat,
                system_model=t.padded.system_model,
                strategy=t.padded.strategy,
                judge_model=judge,
                judge_variant=t.original.judge_variant,
                kind=kind,
                status=judged.status,
                original=res.original,
                padded=res.padded_value,
                shift=res.score_shift,
                flipped=None if res.flipped is None else int(res.flipped),
                error=judged.outcome.detail,
            )
        )

    return Step(f"padding judged: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    c = planner.config
    if not c.probes.padding:
        return None
    sampling, convention, sign, padded = steps.judge_sampling(c), c.judges.overall, planner.task.item, seen.padded
    shown = steps.judge_images(c, seen.items)
    restated = [(a, kind) for a in seen.every for kind in c.judges.pointwise if a.key in padded]
    row = await planner.judged(
        judge,
        "padding judged",
        restated,
        {k: seen.known[k] for k in padded},
        lambda a, kind, call: run_judge(
            kind, sign(a.sign_code), padded[a.key], call, sampling, convention, rubric, image=shown(a.key)
        ),
        lambda a, kind: build_judge_request(
            kind, sign(a.sign_code), padded.get(a.key, ""), sampling, convention, rubric, shown(a.key)
        ),
    )
    unknown = seen.padding_bound - len(padded)  # restatements not yet made: each judged for every kind
    row.requests += unknown * len(c.judges.pointwise)
    if seen.every:
        row.add(
            planner.counters[judge].count(
                build_judge_request(
                    QUALITY.name, sign(seen.every[0].sign_code), "", sampling, convention, rubric, shown(seen.every[0].key)
                ),
                pending=min(planner.answer_tokens, c.probes.padding_max_tokens),
                times=unknown * len(c.judges.pointwise),
            )
        )
    row.completion_tokens += unknown * len(c.judges.pointwise) * sampling.max_tokens
    row.upper_bound = True  # a restatement is judged only where this judge's verdict on the original is ok
    return row


def tokens(c: RunConfig, items: int) -> int:
    p = c.probes
    return c.judges.max_tokens * len(c.judges.variants) * p.padding_samples * len(c.judges.pointwise) if p.padding else 0


STAGE = Stage(
    "padding judged", "judges", lambda ctx, model, items, of: rejudge_step(ctx, model), count, tokens, rows=(PaddingProbeRow,)
)
