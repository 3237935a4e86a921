"""The pairwise judge: two answers to the same item, judged against the reference as the task's other judges see it,
asked in both orders; a constrained verdict, its reasoning first and then `winner`: "A", "B" or "tie".

Unlike the order probe (a position test on a sample, no tie), it is a judge kind of the study (`kinds =
["pairwise"]`): every pair of its design (runs/plan.comparison_pairs) in both orders, exported as the pairwise table
(docs/verdict-table.md) and analysed by analysis/pairwise/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from dualjudge.inference.types import Caller, GenerationRequest, Image, Message, Sampling
from dualjudge.outcome import Status
from dualjudge.protocol.judges import Gold, gold_prompts, render_gold
from dualjudge.protocol.kinds import PAIRWISE
from dualjudge.protocol.verdicts import REASONING_MAX, _Verdict, interpret

__all__ = ["PAIRWISE", "Comparison", "ComparisonVerdict", "build_comparison_request", "run_comparison"]
PROMPT = "judge_compare"


class ComparisonVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    winner: Literal["A", "B", "tie"] = Field(description="The better response, or tie when neither is better.")

    @classmethod
    def widest(cls) -> ComparisonVerdict:
        return cls(reasoning="", winner="tie")


def build_comparison_request(
    gold: Gold, first: str, second: str, sampling: Sampling, image: Image | None = None
) -> GenerationRequest:
    """The pairwise judge's request: `first` shown as response A, `second` as B (`image`: the item's, judges.see_image)."""
    prompt = gold_prompts(gold).load(PROMPT)
    system, user = render_gold(prompt, gold, response_a=first, response_b=second)
    return GenerationRequest(
        (Message("system", system), Message("user", user, image)),
        sampling,
        ComparisonVerdict.constraint(sampling.max_tokens),
        (prompt.sha256,),
    )


@dataclass(frozen=True)
class Comparison:
    """Which of the two shown answers won ("first", "second", "tie"; None without a verdict)."""

    winner: Literal["first", "second", "tie"] | None
    status: Status
    detail: str | None = None


async def run_comparison(
    gold: Gold, first: str, second: str, call: Caller, sampling: Sampling, image: Image | None = None
) -> Comparison:
    outcome = interpret(ComparisonVerdict, await call(build_comparison_request(gold, first, second, sampling, image)))
    choice = getattr(outcome.verdict, "winner", None) if outcome.status == "ok" else None
    winner: Literal["first", "second", "tie"] | None = (
        None if choice is None else "first" if choice == "A" else "second" if choice == "B" else "tie"
    )
    return Comparison(winner, outcome.status, outcome.detail)
