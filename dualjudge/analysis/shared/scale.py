"""The quality judge's scale and its cuts: by default the paper's 0-10, "good" above 7 and "poor" below 5.

A Type II error is a "good" score on an answer the equivalence judge rejects; a Type I error a "poor"
score on one it accepts. Tables made elsewhere may use another maximum or other cuts, and whether a
cut itself counts (> 7 or >= 7) is part of the definition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from dualjudge.errors import DualjudgeError
from dualjudge.protocol.verdicts import GOOD


@dataclass(frozen=True)
class Scale:
    maximum: float = 10.0
    high: float = GOOD  # "good" above this (at or above, when high_inclusive)
    low: float = 5.0  # "poor" below this (at or below, when low_inclusive)
    high_inclusive: bool = False
    low_inclusive: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.maximum < float("inf"):
            raise DualjudgeError(f"--scale-max must be a positive number, got {self.maximum}")
        if not 0 <= self.low <= self.high <= self.maximum:
            raise DualjudgeError(
                f"the cuts must satisfy 0 <= --low ({self.low}) <= --high ({self.high}) <= --scale-max ({self.maximum})"
            )

    @classmethod
    def with_maximum(cls, maximum: float) -> Scale:
        """The paper's cuts (good > 7, poor < 5 of 10) carried to another maximum, proportionally."""
        if not 0 < maximum < float("inf"):
            raise DualjudgeError(f"--scale-max must be a positive number, got {maximum}")
        return cls(maximum, GOOD * maximum / 10, 5.0 * maximum / 10)

    def good(self, scores: pd.Series) -> pd.Series:
        return scores >= self.high if self.high_inclusive else scores > self.high

    def poor(self, scores: pd.Series) -> pd.Series:
        return scores <= self.low if self.low_inclusive else scores < self.low

    @property
    def high_label(self) -> str:
        return f"{'>=' if self.high_inclusive else '>'} {self.high:g}"

    @property
    def low_label(self) -> str:
        return f"{'<=' if self.low_inclusive else '<'} {self.low:g}"

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "good": self.high_label, "poor": self.low_label}


PAPER_SCALE = Scale()
