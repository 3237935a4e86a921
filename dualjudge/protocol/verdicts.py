"""Judge verdicts: pydantic models whose JSON Schema is the generation constraint.

`reasoning` comes first in every schema, so under constrained decoding the model writes its
justification before it commits to scores or a decision. `overall` is computed here as the mean of
the three sub-scores and is never asked of the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dualjudge.inference.types import Constraint, GenerationResult

REASONING_MAX = 400  # characters: bounded so a constrained verdict always fits its token budget


class _Verdict(BaseModel):
    # strict: "yes" is not a boolean and 7.5 is not a score; such output is a parse failure
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @classmethod
    def constraint(cls) -> Constraint:
        return Constraint.json_schema(cls.model_json_schema())


class QualityVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    accuracy: int = Field(ge=0, le=10, description="Does the response identify the sign and its rule correctly?")
    completeness: int = Field(ge=0, le=10, description="Does it cover every element of the gold description?")
    relevance: int = Field(ge=0, le=10, description="Does it stay on what the sign requires of a road user?")

    @property
    def overall(self) -> float:
        return (self.accuracy + self.completeness + self.relevance) / 3


class EquivalenceVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    equivalent: bool = Field(description="True only if the response states the same rule as the gold description.")


class PairwiseVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    winner: Literal["A", "B"] = Field(description="The better response.")


Status = Literal["ok", "parse_failure", "error"]


@dataclass(frozen=True)
class Outcome:
    """A judge call's outcome: ok with a verdict, parse_failure, or error. Never a default score."""

    status: Status
    verdict: _Verdict | None = None
    detail: str | None = None  # why it failed, or None


def interpret(model: type[_Verdict], result: GenerationResult) -> Outcome:
    if not result.ok:
        return Outcome("error", detail=result.error or "no text returned")
    try:
        data = json.loads(result.text or "", strict=False)  # tolerate raw control characters in strings
    except json.JSONDecodeError as e:
        why = "output truncated at max_tokens" if result.finish_reason == "length" else "engine ignored the JSON constraint"
        return Outcome("parse_failure", detail=f"not JSON ({why}): {e.msg} at char {e.pos}")
    try:
        return Outcome("ok", verdict=model.model_validate(data))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "verdict"
        return Outcome("parse_failure", detail=f"schema violation at {where}: {err['msg']}")
