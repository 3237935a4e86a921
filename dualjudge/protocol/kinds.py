"""Judge kinds, declared once: what a kind of judge is asked, how its verdict reads, what the verdict
table records of it and which statistics read it.

A `JudgeKind` names its prompt files (`judge_<name>.toml`, and `judge_<name>_rubric.toml` when rubric
judges of the kind exist), its verdict schema (the constraint), its score fields (each a column of the
verdict table, read from a verdict), the score that carries its decision (`value`: what the stability
passes and the padding probe compare) and how a value decides (`decided`: "good" or "equivalent").
The store, the export, the analysis table, the report's failure counts and the explorer iterate over
`declared()`; only the statistics named in `statistics` are specific to a kind.

The two kinds of the dual-judge protocol are declared here. Another is declared with `declare` (its
prompt may live outside the project's prompts folder) and then runs through the whole pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dualjudge.errors import DualjudgeError
from dualjudge.protocol.prompts import SIGN_PROMPTS, Prompt, PromptSet, load_prompt
from dualjudge.protocol.verdicts import (
    GOOD,
    EquivalenceVerdict,
    JudgedOverallVerdict,
    OverallConvention,
    QualityVerdict,
    _Verdict,
)

ScoreType = Literal["integer", "number", "boolean"]


@dataclass(frozen=True)
class ScoreField:
    """One score of a verdict: a column of the verdict table (integer, number or boolean)."""

    name: str
    type: ScoreType

    def read(self, verdict: _Verdict) -> int | float | bool | None:
        value = getattr(verdict, self.name, None)
        if value is None:
            return None
        if self.type == "boolean":
            return bool(value)
        return int(value) if self.type == "integer" else float(value)


@dataclass(frozen=True)
class JudgeKind:
    """A kind of judge. `value` names the score field that says what the judge decided; `decided` turns
    it into the yes/no the probes count as a flip; `statistics` names the analyses that read the kind."""

    name: str
    verdict: type[_Verdict]
    scores: tuple[ScoreField, ...]
    value: str
    decided: Callable[[float], bool]
    statistics: tuple[str, ...] = ()
    prompts: Path | None = None  # the folder of its prompt files; None: the project's prompts/
    judge_given: type[_Verdict] | None = None  # the verdict when the judge gives its own overall score

    def __post_init__(self) -> None:
        if self.value not in {f.name for f in self.scores}:
            raise ValueError(f"judge kind {self.name}: value {self.value!r} is not one of its score fields")

    @property
    def status(self) -> str:
        """The verdict table's column for the outcome of this kind's verdicts."""
        return f"{self.name}_status"

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.scores)

    def verdict_type(self, convention: OverallConvention = "mean_of_subscores") -> type[_Verdict]:
        return self.judge_given if convention == "judge_given" and self.judge_given is not None else self.verdict

    def prompt(
        self, convention: OverallConvention = "mean_of_subscores", rubric: bool = False, prompts: PromptSet = SIGN_PROMPTS
    ) -> Prompt:
        """Its prompt: a task folder's own (its prompts folder, or the generic task prompts), else for uk-signs from
        the kind's own folder when it has one, else the project's prompts/. A kind whose prompt a task folder does
        not have is refused in one line: its own prompt is worded for the signs."""
        given = convention == "judge_given" and self.judge_given is not None
        name = f"judge_{self.name}_rubric" if rubric else f"judge_{self.name}_overall" if given else f"judge_{self.name}"
        if prompts.dirs and prompts.has(name):
            return prompts.load(name)
        if prompts.dirs and self.prompts is not None:
            raise DualjudgeError(
                f"judge kind {self.name}: the task has no prompt {name}.toml; write one in the task folder's prompts "
                f'folder (task.toml: prompts = "prompts"), worded for the task'
            )
        return load_prompt(name, self.prompts) if self.prompts is not None else prompts.load(name)

    def read(self, verdict: _Verdict | None) -> dict[str, int | float | bool | None]:
        """The verdict's score fields (all None when there is no verdict)."""
        return {f.name: None if verdict is None else f.read(verdict) for f in self.scores}

    def value_of(self, verdict: _Verdict | None) -> float | None:
        """The verdict's decision as a number (a boolean as 1/0); None without a verdict."""
        value = self.read(verdict)[self.value]
        return None if value is None else float(value)

    def flipped(self, before: float, after: float) -> bool:
        return self.decided(before) != self.decided(after)


_DECLARED: dict[str, JudgeKind] = {}


def declare(kind: JudgeKind) -> JudgeKind:
    """Add a judge kind to those every stage iterates over (declaring one twice replaces it)."""
    _DECLARED[kind.name] = kind
    return kind


def withdraw(name: str) -> None:
    """Remove a declared kind (tests that declare one of their own)."""
    _DECLARED.pop(name, None)


def declared() -> tuple[JudgeKind, ...]:
    """Every declared kind, the protocol's two first."""
    return tuple(_DECLARED.values())


def judge_kind(name: str) -> JudgeKind:
    try:
        return _DECLARED[name]
    except KeyError:
        raise DualjudgeError(f"unknown judge kind {name!r}; declared: {', '.join(_DECLARED)}") from None


QUALITY = declare(
    JudgeKind(
        "quality",
        QualityVerdict,
        (
            ScoreField("accuracy", "integer"),
            ScoreField("completeness", "integer"),
            ScoreField("relevance", "integer"),
            ScoreField("overall", "number"),
        ),
        value="overall",
        decided=lambda overall: overall > GOOD,
        judge_given=JudgedOverallVerdict,
        statistics=("self-preference (overall)", "agreement (overall)", "dual-judge Type I/II", "paper tables"),
    )
)
EQUIVALENCE = declare(
    JudgeKind(
        "equivalence",
        EquivalenceVerdict,
        (ScoreField("equivalent", "boolean"),),
        value="equivalent",
        decided=bool,
        statistics=("self-preference (equivalent)", "agreement (equivalent)", "dual-judge Type I/II", "paper tables"),
    )
)
PROTOCOL_KINDS: tuple[str, ...] = (QUALITY.name, EQUIVALENCE.name)
# the pairwise judge (protocol/comparison.py): two answers at once, so none of the per-answer machinery above; a
# study names it in judges.kinds beside (or instead of) the declared kinds
PAIRWISE = "pairwise"  # a study's judges unless it names others
