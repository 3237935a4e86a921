"""What the pairwise analysis returns (summary.json's `pairwise`, or the whole of it for a pairwise table)."""

from __future__ import annotations

from typing import Literal

from dualjudge.analysis.results import Estimate, JudgeBelief, LeaderRow, RankedMean, SystemDifference, TestedEstimate, _Result


class Explained(_Result):
    """The judge's raw own-choice rate above one half, in parts (rates, 0-1): what the systems' strengths give
    (quality), what its first-slot preference adds, what its own-family term adds, and what the model leaves."""

    quality: float
    position: float
    own: float
    unexplained: float


class PairwiseJudge(_Result):
    judge: str
    family: str
    comparisons: int  # answered comparisons
    missing: int  # comparisons without a verdict
    tie_share: float | None
    first_share: float | None  # the share of its decisive verdicts given to the answer shown first
    order_consistency: float | None  # of the pairs it judged in both orders, the share whose two verdicts agree
    pairs_both_orders: int
    own_comparisons: int  # comparisons with its own family's answer on exactly one side
    raw_own_rate: Estimate | None  # the literature's number (definition in PairwiseAnalysis.definitions)
    raw_from: Literal["verdicts", "probabilities"]
    position: Estimate | None  # first-slot preference, logit
    decisiveness: Estimate | None  # relative to the judges' geometric mean (1)
    tie: float | None  # Davidson's nu (0: never ties)
    own_logit: TestedEstimate | None  # the own-family term, logit
    own_points: Estimate | None  # what the term adds to the own-choice rate (0-1), the model's other terms as fitted
    explained: Explained | None
    plain_own_logit: Estimate | None  # the own term in a model with one decisiveness for every judge
    position_only: bool = False
    reason: str | None = None  # why the own term is not given
    position_reason: str | None = None
    decisiveness_reason: str | None = None
    warnings: list[str] = []
    belief: JudgeBelief | None = None


class Test(_Result):
    """A likelihood-ratio test of two nested fits (chi-square reference)."""

    lr: float
    df: int
    p: float


class Transitivity(_Result):
    """Bradley-Terry against the saturated model (each judge, each pair its own preference): does one strength per
    system (with the judges' terms) fit?"""

    test: Test | None
    reason: str | None  # why it was not tested
    fits: bool | None  # p >= 0.05


class PairwiseBoard(_Result):
    unit_words: str
    n_clusters: int
    rows: list[LeaderRow]  # best first
    differences: list[SystemDifference]
    naive: list[RankedMean]  # the share of its comparisons each system won (ties half), judges pooled
    warnings: list[str] = []


class SideBySide(_Result):
    """A judge that judged both ways: its pointwise index and its pairwise own term."""

    judge: str
    pointwise_outcome: str
    pointwise: Estimate | None  # the calibrated index (points of the outcome)
    pairwise_logit: Estimate | None
    pairwise_points: Estimate | None


class PairwiseAnalysis(_Result):
    paradigm: Literal["pairwise"] = "pairwise"
    table: str | None = None
    n_rows: int
    n_answered: int
    systems: list[str]
    families: dict[str, str]  # system -> family
    judges: list[PairwiseJudge]
    clusters: int
    resamples: int
    seed: int
    interval: str
    definitions: dict[str, str]
    decisiveness_test: Test | None  # per-judge decisiveness against one for all
    transitivity: Transitivity
    board: PairwiseBoard | None
    unidentified: list[str]  # a term the design cannot identify, one line each
    warnings: list[str]
    belief_reason: str | None = None  # why the decomposition is not given
    belief_gold: bool = False
    side_by_side: list[SideBySide] = []
    analysis_seconds: float | None = None

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)
