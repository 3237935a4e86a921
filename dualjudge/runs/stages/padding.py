"""The padding stage: a system model's losing answers (wrong or missing label) restated at length,
while it is loaded; the padding probe's inputs."""

from __future__ import annotations

from dualjudge.config import RunConfig
from dualjudge.protocol.probes import build_padding_request, pad
from dualjudge.protocol.rubric import Rubric
from dualjudge.runs import plan, steps
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount, probe
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step, padding_share
from dualjudge.storage.rows import Answer, PaddingTextRow


def padding_step(ctx: Context, model: str) -> Step[Answer]:
    """Restate losing answers (wrong or missing SIGN_TYPE) of this model, while it is loaded."""
    p = ctx.config.probes

    def tasks() -> list[Answer]:
        if not p.padding:
            return []
        done = ctx.store.done_keys(PaddingTextRow)
        made = {a.key: a for a in ctx.answers(model)}
        return [
            a
            for a in plan.padding_sample(ctx.planned(model), made, padding_share(ctx.config), ctx.config.run.seed)
            if a.key.astuple() not in done
        ]

    async def work(a: Answer, caller: CachingCaller) -> None:
        padded = await pad(a.text or "", caller, ctx.padding_sampling(), ctx.task.prompts)
        ctx.store.record(
            PaddingTextRow(
                **a.key.fields(), status=padded.status, text=padded.text, added_words=padded.added_words, error=padded.error
            )
        )

    return Step(f"padding: {model}", tasks, work)


async def count(planner: Planner, model: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    """Losing answers of this model restated: exact once all its answers are known, else at most the share."""
    c = planner.config
    if not c.probes.padding:
        return None
    row, known, padded = StageCount(model, "padding"), seen.known, seen.padded
    share = steps.padding_share(c)
    mine = [a for a in seen.every if a.key.system_model == model]
    sample = plan.padding_sample([a.key for a in mine], known, share, c.run.seed)
    unknown = sum(a.key not in known for a in mine)
    row.requests = min(share, len(sample) + unknown)
    row.upper_bound = unknown > 0
    sampling = steps.padding_sampling(c)
    for a in sample[: row.requests]:
        text, hits = await probe(
            lambda call: pad(a.text or "", call, sampling, planner.task.prompts),
            planner.caches,
            planner.identities[model],
            planner.observer(model, "padding", a.key),
        )
        row.cached += hits
        if text is not None and text.text is not None:
            padded[a.key] = text.text
    pending = row.requests - row.cached
    request = build_padding_request("", sampling, planner.task.prompts)
    row.add(planner.counters[model].count(request, pending=planner.answer_tokens, times=pending))
    row.completion_tokens = pending * sampling.max_tokens
    seen.padding_bound += row.requests
    return row


def tokens(c: RunConfig, items: int) -> int:
    return steps.padding_share(c) * c.probes.padding_max_tokens if c.probes.padding else 0


STAGE = Stage("padding", "systems", lambda ctx, model, items, of: padding_step(ctx, model), count, tokens, rows=(PaddingTextRow,))
