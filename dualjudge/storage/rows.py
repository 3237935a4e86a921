"""The run store's rows and keys, as types: one dataclass per table, and the answer key they share.

An answer is identified by (variant_id, repeat, system_model, strategy): `AnswerKey`. A verdict adds
the judge model, the judge variant (holistic, rubric, ...) and the kind; an order-probe pair adds the
judge, its variant and the two answers' models and strategies. Each row class names its table and
its key columns; the store maps rows to tables with them (store.py), so a table's key is declared
here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from dualjudge.outcome import Status


@dataclass(frozen=True)
class AnswerKey:
    variant_id: str
    repeat: int
    system_model: str
    strategy: str

    def fields(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def astuple(self) -> tuple[Any, ...]:
        return (self.variant_id, self.repeat, self.system_model, self.strategy)


ANSWER_KEY = tuple(f.name for f in dataclasses.fields(AnswerKey))


@dataclass(frozen=True, kw_only=True)
class Row:
    """A row of one of the store's work tables. `attempts`: sessions that tried this work."""

    TABLE: ClassVar[str]
    KEY: ClassVar[tuple[str, ...]]

    status: Status
    attempts: int = 1
    error: str | None = None

    def values(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.KEY)

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Any:
        return cls(**{name: record[name] for name in cls.columns()})


@dataclass(frozen=True, kw_only=True)
class _OfAnswer(Row):
    """A row about one answer: its key's columns come first."""

    KEY: ClassVar[tuple[str, ...]] = ANSWER_KEY

    variant_id: str
    repeat: int
    system_model: str
    strategy: str

    @property
    def answer_key(self) -> AnswerKey:
        return AnswerKey(self.variant_id, self.repeat, self.system_model, self.strategy)


@dataclass(frozen=True, kw_only=True)
class _OfJudgedAnswer(_OfAnswer):
    """A row about one answer as one judge model saw it, in one judge variant, with one kind of judge."""

    KEY: ClassVar[tuple[str, ...]] = (*ANSWER_KEY, "judge_model", "judge_variant", "kind")

    judge_model: str
    judge_variant: str
    kind: str


@dataclass(frozen=True, kw_only=True)
class AnswerRow(_OfAnswer):
    TABLE: ClassVar[str] = "answers"

    text: str | None
    predicted_category: str | None
    format_ok: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    calls: int
    request_keys: str  # JSON list of the cache keys of the answer's calls


@dataclass(frozen=True, kw_only=True)
class VerdictRow(_OfJudgedAnswer):
    TABLE: ClassVar[str] = "verdicts"

    scores: str | None = None  # JSON: the verdict's score fields, as its judge kind declares them (protocol/kinds.py)
    reasoning: str | None = None
    criteria: str | None = None  # JSON: a rubric judge's clause scores
    completion_tokens: int = 0
    request_key: str | None = None

    def score_values(self) -> dict[str, Any]:
        """The verdict's score fields (empty when it failed)."""
        return dict(json.loads(self.scores)) if self.scores else {}

    def score(self, name: str) -> Any:
        """One score field of the verdict (None when it failed or its kind has no such field)."""
        return self.score_values().get(name)


@dataclass(frozen=True, kw_only=True)
class OrderProbeRow(Row):
    TABLE: ClassVar[str] = "order_probe"
    KEY: ClassVar[tuple[str, ...]] = (
        "variant_id",
        "repeat",
        "judge_model",
        "judge_variant",
        "first_model",
        "first_strategy",
        "second_model",
        "second_strategy",
    )

    variant_id: str
    repeat: int
    judge_model: str
    judge_variant: str
    first_model: str
    first_strategy: str
    second_model: str
    second_strategy: str
    winner_ab: int | None
    winner_ba: int | None
    flipped: int | None


@dataclass(frozen=True, kw_only=True)
class RecognitionProbeRow(Row):
    """The self-recognition probe: the judge model's own answer to a variant and repeat against another family's,
    asked in both orders (and each alone, when the single form is on). 1 = it named (claimed) the answer, 0 = not."""

    TABLE: ClassVar[str] = "recognition_probe"
    KEY: ClassVar[tuple[str, ...]] = ("variant_id", "repeat", "judge_model", "own_strategy", "other_model", "other_strategy")

    variant_id: str
    repeat: int
    judge_model: str
    own_strategy: str
    other_model: str
    other_strategy: str
    own_first: int | None  # its own answer shown first (as A): it named A
    own_second: int | None  # its own answer shown second (as B): it named B
    claims_own: int | None = None  # shown alone, it said it wrote its own answer
    claims_other: int | None = None  # shown alone, it said it wrote the other answer


@dataclass(frozen=True, kw_only=True)
class ComparisonRow(Row):
    """The pairwise judge: two system models' answers to one variant, repeat and strategy, shown in one order
    (`shown_first`: "a" or "b"); `winner` "a", "b" or "tie" (None without a verdict). a sorts before b by model,
    except in the own-versus-other design, where a is the judge's own family's."""

    TABLE: ClassVar[str] = "comparisons"
    KEY: ClassVar[tuple[str, ...]] = ("variant_id", "repeat", "strategy", "judge_model", "system_a", "system_b", "shown_first")

    variant_id: str
    repeat: int
    strategy: str
    judge_model: str
    system_a: str
    system_b: str
    shown_first: str
    winner: str | None


@dataclass(frozen=True, kw_only=True)
class PaddingTextRow(_OfAnswer):
    TABLE: ClassVar[str] = "padding_texts"

    text: str | None
    added_words: int | None


@dataclass(frozen=True, kw_only=True)
class PaddingProbeRow(_OfJudgedAnswer):
    TABLE: ClassVar[str] = "padding_probe"

    original: float | None
    padded: float | None
    shift: float | None
    flipped: int | None


@dataclass(frozen=True, kw_only=True)
class JudgePassRow(_OfJudgedAnswer):
    """One more pass of a verdict (the stability check): pass 1..k, sampled with its own seed."""

    TABLE: ClassVar[str] = "judge_passes"
    KEY: ClassVar[tuple[str, ...]] = (*ANSWER_KEY, "judge_model", "judge_variant", "kind", "pass_index")

    pass_index: int
    value: float | None = None  # the kind's decision as a number (overall; equivalent as 1/0)


ROW_TYPES: tuple[type[Row], ...] = (
    AnswerRow,
    VerdictRow,
    OrderProbeRow,
    PaddingTextRow,
    PaddingProbeRow,
    JudgePassRow,
    RecognitionProbeRow,
    ComparisonRow,
)


@dataclass(frozen=True)
class Answer:
    """A system's answer as the judges see it: its key, text and parsed category, and its variant's
    sign and gold category."""

    key: AnswerKey
    text: str | None
    predicted_category: str | None
    sign_code: str
    category: str


class JobRecord(BaseModel):
    """One job of one session (a model's systems or judges job on a device group), as the store keeps
    it from its start (meta `jobs`) and manifest.json lists it; `ended_at` None: still running, or cut off."""

    model_config = ConfigDict(extra="ignore")

    model: str
    stage: str
    group: str | None
    started_at: float
    ended_at: float | None = None
    session: str
    loaded: bool | None = None  # False: answered from the cache, or ran on in its systems job's load
    replica: bool = False  # one more server of a job whose first server runs on another group
    requests: int | None = None  # a replica's: the requests it answered for the job
    failed: str | None = None  # why the job stopped before its work was done (its model could not serve)
