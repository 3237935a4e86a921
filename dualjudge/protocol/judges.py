"""Judges: a 0-10 quality judge and a strict binary equivalence judge (and any kind declared in
protocol/kinds.py), asked and read the same way.

A judge sees the gold caption and description and one response, and returns a verdict. Judge
requests are always JSON-schema constrained; their outcome is ok, parse_failure or error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dualjudge.inference.types import Caller, GenerationRequest, GenerationResult, Image, Message, Sampling
from dualjudge.outcome import Status
from dualjudge.protocol.kinds import declared, judge_kind
from dualjudge.protocol.prompts import SIGN_PROMPTS, Prompt, PromptSet
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.seeds import derive_seed
from dualjudge.protocol.verdicts import (
    JUDGE_DEFAULT_MAX_TOKENS,
    Outcome,
    OverallConvention,
    _Verdict,
    interpret,
    rubric_verdict,
)

DEFAULT_JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=JUDGE_DEFAULT_MAX_TOKENS, seed=0)


class Gold(Protocol):
    """What a judge decides against: a sign of the catalogue, or any task's item (tasks/task.py)."""

    @property
    def caption(self) -> str: ...

    @property
    def description(self) -> str: ...


def gold_prompts(gold: Gold) -> PromptSet:
    """The prompts of the gold's task (a catalogue sign: the project's prompts)."""
    prompts = getattr(gold, "prompts", SIGN_PROMPTS)
    return prompts if isinstance(prompts, PromptSet) else SIGN_PROMPTS


def render_gold(prompt: Prompt, gold: Gold, **values: str) -> tuple[str, str]:
    """A judge prompt filled with the gold (caption, description, and both as one `reference` block) and, where the
    task shows it, the item the candidate answered (`item_text`: a block of its own, empty where it is not shown)."""
    reference = (
        f"Reference caption: {gold.caption}\nReference: {gold.description}" if gold.caption else f"Reference: {gold.description}"
    )
    shown = getattr(gold, "shown_to_judges", None)
    item_text = f"Item the candidate answered:\n<<<\n{shown}\n>>>\n\n" if shown else ""
    return gold_prompts(gold).render(
        prompt, caption=gold.caption, description=gold.description, reference=reference, item_text=item_text, **values
    )


def verdict_type(kind: str, convention: OverallConvention = "mean_of_subscores", rubric: Rubric | None = None) -> type[_Verdict]:
    """The verdict schema of a judge: holistic (rubric None) or scoring the rubric's clauses first."""
    if rubric is not None:
        return rubric_verdict(kind, rubric.ids)
    return judge_kind(kind).verdict_type(convention)


def judge_kinds() -> tuple[str, ...]:
    """The names of the declared judge kinds (a study's default)."""
    return tuple(k.name for k in declared())


def build_judge_request(
    kind: str,
    sign: Gold,
    response: str,
    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
    convention: OverallConvention = "mean_of_subscores",
    rubric: Rubric | None = None,
    image: Image | None = None,
) -> GenerationRequest:
    """A judge request: the holistic prompt, or with a rubric the rubric prompt listing its clauses
    (the rubric's hash joins the prompt's in the cache key); `image`: the item's image, shown to the judge before
    its prompt (judges.see_image)."""
    prompt = judge_kind(kind).prompt(convention, rubric=rubric is not None, prompts=gold_prompts(sign))
    if rubric is not None:
        system, user = render_gold(prompt, sign, response=response, clauses=rubric.block())
        hashes: tuple[str, ...] = (prompt.sha256, rubric.sha256)
    else:
        system, user = render_gold(prompt, sign, response=response)
        hashes = (prompt.sha256,)
    return GenerationRequest(
        (Message("system", system), Message("user", user, image)),
        sampling,
        verdict_type(kind, convention, rubric).constraint(sampling.max_tokens),
        hashes,
    )


@dataclass(frozen=True)
class Judged:
    """One judge call: what was asked, what came back, and how it reads (ok, parse_failure or error)."""

    kind: str
    request: GenerationRequest
    result: GenerationResult
    outcome: Outcome

    @property
    def status(self) -> Status:
        return self.outcome.status

    @property
    def verdict(self) -> _Verdict | None:
        return self.outcome.verdict

    def value(self) -> float | None:
        """The verdict's decision as a number (its kind's value: overall, equivalent as 1/0); None when not ok."""
        return judge_kind(self.kind).value_of(self.verdict)


UNCONSTRAINED_RETRIES = 2  # a verdict from an engine that does not enforce the schema is asked again this often
RETRY_TEMPERATURE = 0.7  # ... sampled, with a seed of its own, so the retry can come out differently


async def run_judge(
    kind: str,
    sign: Gold,
    response: str,
    call: Caller,
    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
    convention: OverallConvention = "mean_of_subscores",
    rubric: Rubric | None = None,
    retries: int = 0,
    image: Image | None = None,
) -> Judged:
    """One verdict. `retries`: for an engine that does not enforce the verdict's schema (a hosted API with
    response_format), a verdict that is truncated or off-schema is asked again up to this often, each
    time with a derived seed at RETRY_TEMPERATURE, before the parse failure is final (each try is its own
    cached request, so a rerun replays the same tries)."""
    model = verdict_type(kind, convention, rubric)
    request = build_judge_request(kind, sign, response, sampling, convention, rubric, image)
    result = await call(request)
    judged = Judged(kind, request, result, interpret(model, result))
    for attempt in range(1, retries + 1):
        if judged.status != "parse_failure":
            break
        again = Sampling(
            temperature=max(sampling.temperature, RETRY_TEMPERATURE),
            max_tokens=sampling.max_tokens,
            seed=derive_seed(sampling.seed or 0, "verdict retry", attempt),
            top_p=sampling.top_p,
        )
        request = build_judge_request(kind, sign, response, again, convention, rubric, image)
        result = await call(request)
        judged = Judged(kind, request, result, interpret(model, result))
    return judged
