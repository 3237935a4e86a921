"""The two judges: a 0-10 quality judge and a strict binary equivalence judge.

A judge sees the gold caption and description and one response, and returns a verdict. Judge
requests are always JSON-schema constrained; their outcome is ok, parse_failure or error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from dualjudge.inference.types import Caller, GenerationRequest, GenerationResult, Message, Sampling
from dualjudge.outcome import Status
from dualjudge.protocol.prompts import load_prompt
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.seeds import derive_seed
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
    rubric_verdict,
)
from dualjudge.testbed.catalogue import Sign

JudgeKind = Literal["quality", "equivalence"]
JUDGE_KINDS: tuple[JudgeKind, ...] = get_args(JudgeKind)
VERDICTS: dict[str, type[_Verdict]] = {"quality": QualityVerdict, "equivalence": EquivalenceVerdict, "pairwise": PairwiseVerdict}
DEFAULT_JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=JUDGE_DEFAULT_MAX_TOKENS, seed=0)


def verdict_type(kind: str, convention: OverallConvention = "mean_of_subscores",
                 rubric: Rubric | None = None) -> type[_Verdict]:
    """The verdict schema of a judge: holistic (rubric None) or scoring the rubric's clauses first."""
    if rubric is not None:
        return rubric_verdict(kind, rubric.ids)
    if kind == "quality" and convention == "judge_given":
        return JudgedOverallVerdict
    return VERDICTS[kind]


def build_judge_request(kind: JudgeKind, sign: Sign, response: str, sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
                        convention: OverallConvention = "mean_of_subscores",
                        rubric: Rubric | None = None) -> GenerationRequest:
    """A judge request: the holistic prompt, or with a rubric the rubric prompt listing its clauses
    (the rubric's hash joins the prompt's in the cache key)."""
    values = {"caption": sign.caption, "description": sign.description, "response": response}
    if rubric is not None:
        prompt = load_prompt(f"judge_{kind}_rubric")
        system, user = prompt.render(**values, clauses=rubric.block())
        hashes: tuple[str, ...] = (prompt.sha256, rubric.sha256)
    else:
        prompt = load_prompt("judge_quality_overall" if kind == "quality" and convention == "judge_given"
                             else f"judge_{kind}")
        system, user = prompt.render(**values)
        hashes = (prompt.sha256,)
    return GenerationRequest((Message("system", system), Message("user", user)), sampling,
                             verdict_type(kind, convention, rubric).constraint(sampling.max_tokens), hashes)


@dataclass(frozen=True)
class Judged:
    """One judge call: what was asked, what came back, and how it reads (ok, parse_failure or error)."""

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
        """The verdict as a number: overall (quality) or 1/0 (equivalence); None when not ok."""
        return verdict_value(self.outcome)


def verdict_value(outcome: Outcome) -> float | None:
    """The verdict as a number: a quality verdict's overall, an equivalence verdict's 1/0 (holistic or rubric)."""
    v = outcome.verdict
    if v is None:
        return None
    if hasattr(v, "overall"):
        return float(getattr(v, "overall"))
    if hasattr(v, "equivalent"):
        return float(getattr(v, "equivalent"))
    return None


UNCONSTRAINED_RETRIES = 2  # a verdict from an engine that does not enforce the schema is asked again this often
RETRY_TEMPERATURE = 0.7  # ... sampled, with a seed of its own, so the retry can come out differently


async def run_judge(kind: JudgeKind, sign: Sign, response: str, call: Caller,
                    sampling: Sampling = DEFAULT_JUDGE_SAMPLING,
                    convention: OverallConvention = "mean_of_subscores", rubric: Rubric | None = None,
                    retries: int = 0) -> Judged:
    """One verdict. `retries`: for an engine that does not enforce the verdict's schema (a hosted API with
    response_format), a verdict that is truncated or off-schema is asked again up to this often, each
    time with a derived seed at RETRY_TEMPERATURE, before the parse failure is final (each try is its own
    cached request, so a rerun replays the same tries)."""
    model = verdict_type(kind, convention, rubric)
    request = build_judge_request(kind, sign, response, sampling, convention, rubric)
    result = await call(request)
    judged = Judged(request, result, interpret(model, result))
    for attempt in range(1, retries + 1):
        if judged.status != "parse_failure":
            break
        again = Sampling(temperature=max(sampling.temperature, RETRY_TEMPERATURE), max_tokens=sampling.max_tokens,
                         seed=derive_seed(sampling.seed or 0, "verdict retry", attempt), top_p=sampling.top_p)
        request = build_judge_request(kind, sign, response, again, convention, rubric)
        result = await call(request)
        judged = Judged(request, result, interpret(model, result))
    return judged
