"""Judge verdicts: pydantic models whose JSON Schema is the generation constraint.

`reasoning` comes first in every schema, so under constrained decoding the model writes its
justification before it commits to scores or a decision. `overall` is computed here as the mean of
the three sub-scores and is never asked of the model.

The reasoning is bounded by the request's max_tokens: the schema allows at most
`max_tokens - (the longest rest of the verdict)` characters of printable ASCII without quotes or
backslashes, and each such character costs at most one token, so a constrained verdict always closes
before max_tokens. The pattern carries the bound (xgrammar ignores maxLength beside a pattern), as
repetitions of at most 100 characters each: xgrammar's compiler fails on a single `{0,n}` with n
above 128 inside a JSON string.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from dualjudge.inference.types import Constraint, GenerationResult
from dualjudge.outcome import Status

GOOD = 7.0  # an overall above this is a "good" answer (the paper's Type II line, the padding flip)
REASONING_MAX = 400  # characters, whatever the token budget
REASONING_MIN = 32  # a budget that leaves less reasoning than this is refused
SAFE_CHAR = r"[ !#-\[\]-~]"  # printable ASCII but '"' and '\': one token at most, never an escape
REPEAT_CHUNK = 100
JUDGE_DEFAULT_MAX_TOKENS = 384


def bounded_text_pattern(n: int) -> str:
    """A JSON-string pattern for 0..n safe characters, as a sequence of {0,<=100} repetitions."""
    chunks = [REPEAT_CHUNK] * (n // REPEAT_CHUNK) + ([n % REPEAT_CHUNK] if n % REPEAT_CHUNK else [])
    return "^" + "".join(f"{SAFE_CHAR}{{0,{k}}}" for k in chunks) + "$"


class _Verdict(BaseModel):
    # strict: "yes" is not a boolean and 7.5 is not a score; such output is a parse failure
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @classmethod
    def widest(cls) -> _Verdict:
        """The longest verdict with empty reasoning: what the budget must leave room for."""
        raise NotImplementedError

    @classmethod
    def reasoning_chars(cls, max_tokens: int) -> int:
        rest = len(json.dumps(cls.widest().model_dump(), separators=(", ", ": "))) + 1  # + end of sequence
        budget = min(REASONING_MAX, max_tokens - rest)
        if budget < REASONING_MIN:
            raise ValueError(
                f"max_tokens {max_tokens} leaves no room for a {cls.__name__}'s reasoning; use at least {rest + REASONING_MIN}"
            )
        return budget

    @classmethod
    def constraint(cls, max_tokens: int = JUDGE_DEFAULT_MAX_TOKENS) -> Constraint:
        return _constraint(cls, max_tokens)


@lru_cache(maxsize=256)
def _constraint(cls: type[_Verdict], max_tokens: int) -> Constraint:
    """A verdict schema's constraint, made once per (schema, max_tokens): every judge request carries it,
    and generating a JSON schema costs more than the rest of a request's client work."""
    schema = cls.model_json_schema()
    reasoning = schema["properties"]["reasoning"]
    reasoning.pop("maxLength", None)
    reasoning["pattern"] = bounded_text_pattern(cls.reasoning_chars(max_tokens))
    return Constraint.json_schema(schema)


Verdict = _Verdict  # the base of every verdict schema: a judge kind declared elsewhere subclasses it

OverallConvention = Literal["mean_of_subscores", "judge_given"]
OVERALL_CONVENTIONS: tuple[str, ...] = get_args(OverallConvention)


class QualityVerdict(_Verdict):
    """The quality judge's verdict; its overall is the mean of the three integer sub-scores (the
    default convention: an overall of 7.33 is then possible, and is "good")."""

    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    accuracy: int = Field(ge=0, le=10, description="Does the response identify the sign and its rule correctly?")
    completeness: int = Field(ge=0, le=10, description="Does it cover every element of the gold description?")
    relevance: int = Field(ge=0, le=10, description="Does it stay on what the sign requires of a road user?")

    @property
    def overall(self) -> float:
        return (self.accuracy + self.completeness + self.relevance) / 3

    @classmethod
    def widest(cls) -> QualityVerdict:
        return cls(reasoning="", accuracy=10, completeness=10, relevance=10)


class JudgedOverallVerdict(_Verdict):
    """The quality judge's verdict under the judge_given convention: the judge also gives its own integer
    overall score, which is used as is."""

    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    accuracy: int = Field(ge=0, le=10, description="Does the response identify the sign and its rule correctly?")
    completeness: int = Field(ge=0, le=10, description="Does it cover every element of the gold description?")
    relevance: int = Field(ge=0, le=10, description="Does it stay on what the sign requires of a road user?")
    overall: int = Field(ge=0, le=10, description="The overall grade, an integer.")

    @classmethod
    def widest(cls) -> JudgedOverallVerdict:
        return cls(reasoning="", accuracy=10, completeness=10, relevance=10, overall=10)


class EquivalenceVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    equivalent: bool = Field(description="True only if the response states the same rule as the gold description.")

    @classmethod
    def widest(cls) -> EquivalenceVerdict:
        return cls(reasoning="", equivalent=False)


class PairwiseVerdict(_Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    winner: Literal["A", "B"] = Field(description="The better response.")

    @classmethod
    def widest(cls) -> PairwiseVerdict:
        return cls(reasoning="", winner="A")


class _RubricVerdict(_Verdict):
    """A rubric judge's verdict: its clause scores (fields named after the rubric's clause ids) come
    after the reasoning and before the conclusion. The classes are built per rubric (`rubric_verdict`)."""

    CLAUSES: ClassVar[tuple[str, ...]] = ()  # the clause-score fields (pairwise: a_<id> and b_<id>)
    WIDEST: ClassVar[dict[str, object]] = {}

    def criteria(self) -> dict[str, object]:
        """The clause scores (pairwise: a_<id> and b_<id>)."""
        return {name: getattr(self, name) for name in self.CLAUSES}

    @classmethod
    def widest(cls) -> _Verdict:
        return cls.model_validate({"reasoning": "", **cls.WIDEST})


class _RubricQuality(_RubricVerdict):
    @property
    def overall(self) -> float:
        return float(getattr(self, "accuracy") + getattr(self, "completeness") + getattr(self, "relevance")) / 3


def _reasoning() -> tuple[type, object]:
    return str, Field(max_length=REASONING_MAX, description="Short justification, written first.")


def _axes() -> dict[str, tuple[Any, object]]:
    return {
        "accuracy": (int, Field(ge=0, le=10, description="Identification and rule, 0-10.")),
        "completeness": (int, Field(ge=0, le=10, description="Every element of the reference, 0-10.")),
        "relevance": (int, Field(ge=0, le=10, description="Stays on what the sign requires, 0-10.")),
    }


@lru_cache(maxsize=64)
def rubric_verdict(kind: str, clauses: tuple[str, ...]) -> type[_RubricVerdict]:
    """The verdict class of a rubric judge of `kind` ("quality", "equivalence", "pairwise") for these
    clause ids: each clause constrained in the schema, before the scores or the decision."""
    score: tuple[Any, object] = (int, Field(ge=0, le=2, description="0, 1 or 2 by the clause's bands."))
    matches: tuple[Any, object] = (bool, Field(description="True when the response matches the reference on this clause."))
    conclusion: dict[str, tuple[Any, object]]
    top: object  # a clause field's longest value
    if kind == "quality":
        base: type[_RubricVerdict] = _RubricQuality
        name, criteria, clause, top, conclusion = "RubricQualityVerdict", clauses, score, 2, _axes()
        widest: dict[str, object] = {"accuracy": 10, "completeness": 10, "relevance": 10}
    elif kind == "equivalence":
        base, name, criteria, clause, top = _RubricVerdict, "RubricEquivalenceVerdict", clauses, matches, False
        conclusion = {"equivalent": (bool, Field(description="True only if the response states the same rule."))}
        widest = {"equivalent": False}
    elif kind == "pairwise":
        base, name, clause, top = _RubricVerdict, "RubricPairwiseVerdict", score, 2
        criteria = tuple(f"{side}_{c}" for side in ("a", "b") for c in clauses)
        conclusion = {"winner": (Literal["A", "B"], Field(description="The better response."))}
        widest = {"winner": "A"}
    else:
        raise ValueError(f"unknown judge kind {kind!r}")
    fields = {"reasoning": _reasoning(), **{c: clause for c in criteria}, **conclusion}
    model = create_model(name, __base__=base, **fields)  # type: ignore[call-overload]  # fields built at run time
    model.CLAUSES = criteria
    model.WIDEST = {c: top for c in criteria} | widest  # the longest value of each field
    return model


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
    except (RecursionError, ValueError) as e:
        if not isinstance(e, json.JSONDecodeError):  # deep nesting or a huge number: never a verdict
            return Outcome("error", detail=f"the reply cannot be read as JSON ({type(e).__name__}); a rerun asks again")
        if result.finish_reason == "length":
            return Outcome(
                "parse_failure", detail=f"truncated: the verdict reached max_tokens before it closed ({e.msg} at char {e.pos})"
            )
        return Outcome("parse_failure", detail=f"not JSON (engine ignored the JSON constraint): {e.msg} at char {e.pos}")
    try:
        return Outcome("ok", verdict=model.model_validate(data))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "verdict"
        return Outcome("parse_failure", detail=f"schema violation at {where}: {err['msg']}")
