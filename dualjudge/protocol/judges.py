"""The two judges: a 0-10 quality judge and a strict binary equivalence judge.

A judge sees the gold caption and description and one response, and returns a verdict. Judge
requests are always JSON-schema constrained; their outcome is ok, parse_failure or error.
"""

from __future__ import annotations

from typing import Literal

from dualjudge.inference.types import Caller, GenerationRequest, Message, Sampling
from dualjudge.protocol.prompts import load_prompt
from dualjudge.protocol.verdicts import (
    JUDGE_DEFAULT_MAX_TOKENS,
    EquivalenceVerdict,
    Outcome,
    PairwiseVerdict,
    QualityVerdict,
    interpret,
)
from dualjudge.testbed.catalogue import Sign

JudgeKind = Literal["quality", "equivalence"]
JUDGE_KINDS: tuple[JudgeKind, ...] = ("quality", "equivalence")
VERDICTS = {"quality": QualityVerdict, "equivalence": EquivalenceVerdict, "pairwise": PairwiseVerdict}
DEFAULT_JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=JUDGE_DEFAULT_MAX_TOKENS, seed=0)


def build_judge_request(kind: JudgeKind, sign: Sign, response: str,
                        sampling: Sampling = DEFAULT_JUDGE_SAMPLING) -> GenerationRequest:
    prompt = load_prompt(f"judge_{kind}")
    system, user = prompt.render(caption=sign.caption, description=sign.description, response=response)
    return GenerationRequest((Message("system", system), Message("user", user)), sampling,
                             VERDICTS[kind].constraint(sampling.max_tokens), (prompt.sha256,))


async def run_judge(kind: JudgeKind, sign: Sign, response: str, call: Caller,
                    sampling: Sampling = DEFAULT_JUDGE_SAMPLING) -> Outcome:
    result = await call(build_judge_request(kind, sign, response, sampling))
    return interpret(VERDICTS[kind], result)
