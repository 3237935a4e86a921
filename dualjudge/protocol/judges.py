"""The two judges: a 0-10 quality judge and a strict binary equivalence judge.

A judge sees the gold caption and description and one response, and returns a verdict. Judge
requests are always JSON-schema constrained; their outcome is ok, parse_failure or error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from dualjudge.inference.types import Caller, GenerationRequest, GenerationResult, Message, Sampling
from dualjudge.protocol.prompts import load_prompt
from dualjudge.protocol.verdicts import (
    JUDGE_DEFAULT_MAX_TOKENS,
    EquivalenceVerdict,
    JudgedOverallVerdict,
    Outcome,
    OverallConvention,
    PairwiseVerdict,
    QualityVerdict,
    _Verdict,
    interpret,
)
from dualjudge.testbed.catalogue import Sign

JudgeKind = Literal["quality", "equivalence"]
JUDGE_KINDS: tuple[JudgeKind, ...] = get_args(JudgeKind)
VERDICTS = {"quality": QualityVerdict, "equivalence": EquivalenceVerdict, "pairwise": PairwiseVerdict}
DEFAULT_JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=JUDGE_DEFAULT_MAX_TOKENS, seed=0)


def verdict_type(kind: str, convention: OverallConvention = "mean_of_subscores") -> type[_Verdict]:
    if kind == "quality" and convention == "judge_given":
        return JudgedOverallVerdict
    return VERDICTS[kind]


def build_judge_request(kind: JudgeKind, sign: Sign, response: str, sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
                        convention: OverallConvention = "mean_of_subscores") -> GenerationRequest:
    name = "judge_quality_overall" if kind == "quality" and convention == "judge_given" else f"judge_{kind}"
    prompt = load_prompt(name)
    system, user = prompt.render(caption=sign.caption, description=sign.description, response=response)
    return GenerationRequest((Message("system", system), Message("user", user)), sampling,
                             verdict_type(kind, convention).constraint(sampling.max_tokens), (prompt.sha256,))


@dataclass(frozen=True)
class Judged:
    """One judge call: what was asked, what came back, and how it reads (ok, parse_failure or error)."""

    request: GenerationRequest
    result: GenerationResult
    outcome: Outcome

    @property
    def status(self) -> str:
        return self.outcome.status

    @property
    def verdict(self) -> _Verdict | None:
        return self.outcome.verdict

    def value(self) -> float | None:
        """The verdict as a number: overall (quality) or 1/0 (equivalence); None when not ok."""
        return verdict_value(self.outcome)


def verdict_value(outcome: Outcome) -> float | None:
    v = outcome.verdict
    if isinstance(v, (QualityVerdict, JudgedOverallVerdict)):
        return float(v.overall)
    if isinstance(v, EquivalenceVerdict):
        return float(v.equivalent)
    return None


async def run_judge(kind: JudgeKind, sign: Sign, response: str, call: Caller,
                    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
                    convention: OverallConvention = "mean_of_subscores") -> Judged:
    request = build_judge_request(kind, sign, response, sampling, convention)
    result = await call(request)
    return Judged(request, result, interpret(verdict_type(kind, convention), result))
