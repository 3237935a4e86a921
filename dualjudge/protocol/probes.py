"""Probes of the judge: presentation order and padding.

Order probe: a pair of responses to the same variant is judged A-then-B and B-then-A; if the
verdict names the same *position* both times, position decided it (a flip). Padding probe: a
low-scored response is restated at greater length (about 150 words, no new claim) by its own
system model through a fixed prompt, re-judged, and the score shift and verdict flip recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualjudge.inference.types import Caller, GenerationRequest, Message, Sampling
from dualjudge.outcome import Status
from dualjudge.protocol.judges import DEFAULT_JUDGE_SAMPLING, Gold, gold_prompts, render_gold
from dualjudge.protocol.kinds import declared, judge_kind
from dualjudge.protocol.prompts import SIGN_PROMPTS, PromptSet
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.verdicts import Outcome, PairwiseVerdict, interpret, rubric_verdict

PADDING_SAMPLING = Sampling(temperature=0.0, max_tokens=512, seed=0)


def build_pairwise_request(
    sign: Gold, first: str, second: str, sampling: Sampling = DEFAULT_JUDGE_SAMPLING, rubric: Rubric | None = None
) -> GenerationRequest:
    values = {"response_a": first, "response_b": second}
    if rubric is not None:
        prompt = gold_prompts(sign).load("judge_pairwise_rubric")
        system, user = render_gold(prompt, sign, **values, clauses=rubric.block())
        return GenerationRequest(
            (Message("system", system), Message("user", user)),
            sampling,
            rubric_verdict("pairwise", rubric.ids).constraint(sampling.max_tokens),
            (prompt.sha256, rubric.sha256),
        )
    prompt = gold_prompts(sign).load("judge_pairwise")
    system, user = render_gold(prompt, sign, **values)
    return GenerationRequest(
        (Message("system", system), Message("user", user)),
        sampling,
        PairwiseVerdict.constraint(sampling.max_tokens),
        (prompt.sha256,),
    )


@dataclass(frozen=True)
class OrderResult:
    """Which response won in each order (1 or 2), None where the verdict failed; the pair's outcome
    (ok only when both orders gave a verdict; error when a call failed, else parse_failure)."""

    winner_ab: int | None
    winner_ba: int | None
    status: Status = "ok"
    detail: str | None = None

    @property
    def complete(self) -> bool:
        return self.winner_ab is not None and self.winner_ba is not None

    @property
    def flipped(self) -> bool | None:
        """True when the preferred response changed with the order (position decided the verdict)."""
        return None if not self.complete else self.winner_ab != self.winner_ba


def order_result(ab: Outcome, ba: Outcome) -> OrderResult:
    def winner(o: Outcome, swapped: bool) -> int | None:
        choice = getattr(o.verdict, "winner", None) if o.status == "ok" else None
        if choice is None:
            return None
        first = choice == "A"
        return (2 if first else 1) if swapped else (1 if first else 2)

    w_ab, w_ba = winner(ab, False), winner(ba, True)
    status: Status = (
        "ok" if w_ab is not None and w_ba is not None else "error" if "error" in (ab.status, ba.status) else "parse_failure"
    )
    return OrderResult(w_ab, w_ba, status, ab.detail or ba.detail)


async def run_order_probe(
    sign: Gold,
    response_1: str,
    response_2: str,
    call: Caller,
    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
    rubric: Rubric | None = None,
) -> OrderResult:
    model = rubric_verdict("pairwise", rubric.ids) if rubric is not None else PairwiseVerdict
    ab = interpret(model, await call(build_pairwise_request(sign, response_1, response_2, sampling, rubric)))
    ba = interpret(model, await call(build_pairwise_request(sign, response_2, response_1, sampling, rubric)))
    return order_result(ab, ba)


def build_padding_request(
    response: str, sampling: Sampling = PADDING_SAMPLING, prompts: PromptSet = SIGN_PROMPTS
) -> GenerationRequest:
    prompt = prompts.load("padding")
    system, user = prompts.render(prompt, response=response)
    return GenerationRequest((Message("system", system), Message("user", user)), sampling, None, (prompt.sha256,))


@dataclass(frozen=True)
class Padded:
    """A response restated at length by its own model (or the error that stopped it)."""

    text: str | None
    added_words: int | None
    error: str | None

    @property
    def status(self) -> Status:
        return "ok" if self.text is not None else "error"


async def pad(response: str, call: Caller, sampling: Sampling = PADDING_SAMPLING, prompts: PromptSet = SIGN_PROMPTS) -> Padded:
    result = await call(build_padding_request(response, sampling, prompts))
    if not result.ok or result.text is None:
        return Padded(None, None, result.error or "no text returned")
    return Padded(result.text, len(result.text.split()) - len(response.split()), None)


def padding_change(kind: str, before: float, after: float) -> tuple[float, bool]:
    """Score shift (padded minus original) and whether the verdict flipped, by the kind's decision: for the
    quality judge crossing the 'good' line (> 7), for the equivalence judge a changed decision."""
    return after - before, judge_kind(kind).flipped(before, after)


@dataclass(frozen=True)
class PaddingResult:
    """A judge's verdict on a padded response, against its verdict on the original (a value: overall,
    or equivalent as 0/1)."""

    kind: str
    original: float | None
    padded: Outcome
    added_words: int

    @property
    def padded_value(self) -> float | None:
        return judge_kind(self.kind).value_of(self.padded.verdict)

    @property
    def complete(self) -> bool:
        return self.original is not None and self.padded_value is not None

    @property
    def score_shift(self) -> float | None:
        """Padded minus original overall score (quality judge) or equivalence (0/1)."""
        original, padded = self.original, self.padded_value
        return None if original is None or padded is None else padding_change(self.kind, original, padded)[0]

    @property
    def flipped(self) -> bool | None:
        original, padded = self.original, self.padded_value
        return None if original is None or padded is None else padding_change(self.kind, original, padded)[1]


def padding_effect(original: Outcome, padded: Outcome, original_text: str, padded_text: str) -> PaddingResult:
    kind = next((k for k in declared() if hasattr(original.verdict, k.value)), None)
    if kind is None:
        raise ValueError("the original verdict is of no declared judge kind")
    return PaddingResult(kind.name, kind.value_of(original.verdict), padded, len(padded_text.split()) - len(original_text.split()))
