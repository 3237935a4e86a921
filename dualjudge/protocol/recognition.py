"""The self-recognition probe (Panickssery et al. 2024): can a judge tell its own answer from another family's?

Pairwise: the judge model sees two answers to the same item, one its own (its answer as a system) and one from a
model of another family, and says which one it wrote, a constrained choice; the pair is asked in both orders, so
a judge that always names one position is right half the time. Single (optional): the judge sees each of the two
answers alone and says whether it wrote it. The answers' order and wording are all it has: no reference is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from dualjudge.inference.types import Caller, GenerationRequest, Message, Sampling
from dualjudge.outcome import Status
from dualjudge.protocol.judges import Gold, gold_prompts
from dualjudge.protocol.verdicts import REASONING_MAX, Outcome, _Verdict, interpret

PAIR_PROMPT = "recognition_pair"
SINGLE_PROMPT = "recognition_single"


class RecognitionVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    written: Literal["A", "B"] = Field(description="The answer the judge says it wrote.")

    @classmethod
    def widest(cls) -> RecognitionVerdict:
        return cls(reasoning="", written="A")


class AuthorshipVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    wrote_it: bool = Field(description="Whether the judge says it wrote the answer.")

    @classmethod
    def widest(cls) -> AuthorshipVerdict:
        return cls(reasoning="", wrote_it=False)


def build_pair_request(gold: Gold, first: str, second: str, sampling: Sampling) -> GenerationRequest:
    prompts = gold_prompts(gold)
    prompt = prompts.load(PAIR_PROMPT)
    system, user = prompts.render(prompt, response_a=first, response_b=second)
    return GenerationRequest(
        (Message("system", system), Message("user", user)),
        sampling,
        RecognitionVerdict.constraint(sampling.max_tokens),
        (prompt.sha256,),
    )


def build_single_request(gold: Gold, response: str, sampling: Sampling) -> GenerationRequest:
    prompts = gold_prompts(gold)
    prompt = prompts.load(SINGLE_PROMPT)
    system, user = prompts.render(prompt, response=response)
    return GenerationRequest(
        (Message("system", system), Message("user", user)),
        sampling,
        AuthorshipVerdict.constraint(sampling.max_tokens),
        (prompt.sha256,),
    )


@dataclass(frozen=True)
class Recognition:
    """One own-versus-other pair as the judge saw it: whether it named its own answer with its own shown first and
    shown second (None where that verdict failed), and with `single`, whether it claimed each answer alone. The
    outcome is ok only when both orders (and both single questions, when asked) gave a verdict."""

    own_first: bool | None
    own_second: bool | None
    claims_own: bool | None = None
    claims_other: bool | None = None
    status: Status = "ok"
    detail: str | None = None


def _outcome(outcomes: list[Outcome]) -> tuple[Status, str | None]:
    if all(o.status == "ok" for o in outcomes):
        return "ok", None
    status: Status = "error" if any(o.status == "error" for o in outcomes) else "parse_failure"
    return status, next((o.detail for o in outcomes if o.detail), None)


async def run_recognition(gold: Gold, own: str, other: str, call: Caller, sampling: Sampling, single: bool) -> Recognition:
    """Ask the pair in both orders (own first, then own second) and, with `single`, each answer alone."""
    first = interpret(RecognitionVerdict, await call(build_pair_request(gold, own, other, sampling)))
    second = interpret(RecognitionVerdict, await call(build_pair_request(gold, other, own, sampling)))
    outcomes = [first, second]

    def named(o: Outcome, own_at: Literal["A", "B"]) -> bool | None:
        return None if o.status != "ok" else getattr(o.verdict, "written", None) == own_at

    claims: list[bool | None] = [None, None]
    if single:
        alone = [interpret(AuthorshipVerdict, await call(build_single_request(gold, text, sampling))) for text in (own, other)]
        outcomes += alone
        claims = [None if o.status != "ok" else bool(getattr(o.verdict, "wrote_it", False)) for o in alone]
    status, detail = _outcome(outcomes)
    return Recognition(named(first, "A"), named(second, "B"), claims[0], claims[1], status, detail)
