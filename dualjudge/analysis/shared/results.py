"""The analysis summary as types: what summary.json holds (docs/summary.md), validated once and
serialised once.

The analysis modules compute plain values; `Summary.model_validate` checks them against these types
(a key added or renamed without updating them is an error, not a silent change to summary.json),
the report reads them as attributes, and `Summary.to_json` writes summary.json (NaN and infinities
as null, so the file is strict JSON).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dualjudge.analysis.shared.choices import Outcome


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="null")


# -- the paper's tables -------------------------------------------------------------------------------
class SystemMeans(_Result):
    mean_overall: float | None
    equivalence_rate: float | None
    format_compliance: float | None
    n: int


class SignClusteredTest(_Result):
    delta_overall: float | None
    t: float | None
    p: float | None
    n_signs: int


class PairedTest(_Result):
    delta_overall: float | None
    t: float | None
    p: float | None
    n_cells: int
    sign_clustered: SignClusteredTest


class ErrorCount(_Result):
    count: int
    rate: float | None
    ci: list[float] | None = None


class Type2AtVisibility(_Result):
    n: int
    n_high: int  # answers judged "good" (the scale's high cut)
    count: int
    marginal_rate: float | None
    conditional_rate: float | None
    marginal_ci: list[float] | None = None
    conditional_ci: list[float] | None = None


class ConditionalMean(_Result):
    mean: float | None
    sd: float | None
    n: int


class WithinJudgeAgreement(_Result):
    kappa: float | None
    raw_agreement: float | None
    n: int


class JointCounts(_Result):
    """The two judges' verdicts together (the report's joint figure): answers per overall bin, split by
    the equivalence verdict."""

    bins: list[float]  # bin edges
    equivalent: list[int]
    not_equivalent: list[int]


class DegradationPoint(_Result):
    """Mean overall at one visibility, for one strategy and occlusion mode (the degradation figure)."""

    system: str
    mode: str
    visibility: float
    mean: float
    n: int
    se: float | None


class JudgeSummary(_Result):
    n_rows: int
    strategies: dict[str, SystemMeans]
    system_models: dict[str, SystemMeans]
    paired_tests: dict[str, PairedTest]
    point_biserial_r: float | None
    point_biserial_ci: list[float] | None
    point_biserial_n: int
    overall_given_equivalent: dict[str, ConditionalMean]  # "1": accepted, "0": rejected
    type1: ErrorCount
    type2: ErrorCount
    agreement_share: float | None  # rows in neither disagreement quadrant
    type2_by_visibility: dict[str, Type2AtVisibility]
    status_counts: dict[str, dict[str, int]]
    within_judge_agreement: WithinJudgeAgreement
    joint: JointCounts


# -- self-preference ------------------------------------------------------------------------------------
class Estimate(_Result):
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p: float


class Sensitivity(_Result):
    calibrated: Estimate | None
    answer_matched: Estimate | None
    did: Estimate | None
    did_reason: str | None
    disagree: list[str]


class TestedEstimate(Estimate):
    p_adjusted: float | None = None  # Benjamini-Yekutieli across judges and outcomes; none for a warned judge


class JudgeBelief(_Result):
    """The index decomposed (analysis/pointwise/belief.py): the judge's own answer held fixed, harmful and legitimate parts."""

    source: str | None  # where the judge's own answers came from: "model" (its own), "family" (its family's)
    items: int  # items with the judge's own label
    items_wrong: int | None  # ... of which its label misses the gold one (None: no gold labels)
    items_split: int  # items whose own answers split evenly between labels (each tied label counts as its own)
    verdicts: dict[str, int]  # the judge's verdicts carrying each term of the belief model
    controlled: TestedEstimate | None  # the own-family effect with agreement with the judge's own answer held fixed
    explained: Estimate | None  # the index minus the controlled estimate (same resamples): what agreement explains
    agreement: Estimate | None  # the judge's shift for answers that share its own label, quality held fixed
    harmful: TestedEstimate | None  # the own-family effect where the judge's own answer is wrong
    legitimate: TestedEstimate | None  # ... where it is right
    reason: str | None  # why `controlled` is not given
    harmful_reason: str | None = None
    legitimate_reason: str | None = None


class JudgeSelfPreference(_Result):
    judge: str
    family: str
    identified: bool
    reason: str | None
    estimate: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None
    p_adjusted: float | None
    self: Estimate | None = None
    family_other: Estimate | None = None
    n_own: dict[str, int] | None = None
    sensitivity: Sensitivity | None = None
    warnings: list[str] = []  # what may bias this judge's estimate, in words (empty when nothing applies)
    warned: bool = False  # it carries a warning: no adjusted p-value, the interval widened to its alternatives
    widened: bool = False  # the interval was widened: no p-value either (the bootstrap's belongs to the narrower one)
    belief: JudgeBelief | None = None  # the decomposition (None where the table has no labels)


class MissingCell(_Result):
    missing: int
    total: int
    rate: float


class Missing(_Result):
    by_judge_family: dict[str, dict[str, MissingCell]]
    warnings: list[str]


class Interaction(_Result):
    judges: list[str]
    families: list[str]
    residual: list[list[Estimate | None]]
    double_centred: list[list[Estimate | None]]


class PooledTerm(_Result):
    estimate: float
    se: float
    ci: list[float]
    p: float


class Pooled(_Result):
    formula: str
    n: int
    clusters: int
    interval: str
    same_family: PooledTerm
    self: PooledTerm | None = None


class CorrelatedPair(_Result):
    judges: list[str]
    excess: float  # residual correlation above what the model implies
    copied: bool  # near-identical verdicts


class OutcomeSelfPreference(_Result):
    estimable: bool
    reason: str | None
    judges: list[JudgeSelfPreference]
    warnings: list[str]
    missing: Missing | None = None
    n_signs: int | None = None
    interaction: Interaction | None = None
    pooled: Pooled | None = None
    pooled_reason: str | None = None
    correlated_pairs: list[CorrelatedPair] = []
    belief_reason: str | None = None  # why agreement with the judge's own answer cannot be held fixed (None: it is)
    belief_gold: bool | None = None  # gold labels known: the harmful and legitimate parts are told apart
    never_answered: list[str] = []  # judges that never answered as a system (nor their family): out of the decomposition


class SelfPreference(_Result):
    lineage: str
    method: str
    interval: str
    adjustment: str
    resamples: int
    seed: int
    overall: OutcomeSelfPreference | None = None
    equivalent: OutcomeSelfPreference | None = None

    def outcomes(self) -> dict[Outcome, OutcomeSelfPreference]:
        pairs: tuple[tuple[Outcome, OutcomeSelfPreference | None], ...] = (
            ("overall", self.overall),
            ("equivalent", self.equivalent),
        )
        return {name: o for name, o in pairs if o is not None}


# -- the calibrated system leaderboard (leaderboard.py) --------------------------------------------------
class LeaderRow(_Result):
    """A system's calibrated score, its rank with a rank interval, and how often it is first."""

    group: str
    estimate: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    rank: int | None
    rank_low: int
    rank_high: int
    p_best: float | None


class RankedMean(_Result):
    """A system in a plain ranking (the mean of the verdicts it counts)."""

    group: str
    estimate: float | None
    rank: int | None


class SystemDifference(_Result):
    higher: str
    lower: str
    difference: float
    se: float
    ci_low: float  # Bonferroni-adjusted across the pairs
    ci_high: float
    p: float
    p_adjusted: float


class RankingChange(_Result):
    """A pair a plain ranking puts in the other order from a calibrated difference that excludes zero."""

    higher: str  # ahead in the calibrated ranking
    lower: str
    ranking: str  # naive, self_excluded, or judge:NAME
    difference: float
    ci_low: float
    ci_high: float
    sentence: str
    settled: bool = True  # no refit (a judge or family left out, a doubtful effect held) reverses the pair


class LeaveOut(_Result):
    left_out: str
    ranking: list[str] | None
    top: str | None
    reason: str | None


class PanelSensitivity(_Result):
    leave_one_judge_out: list[LeaveOut]
    leave_one_family_out: list[LeaveOut]
    top_changes: int  # leave-outs whose top system differs from the full panel's
    leave_outs: int  # leave-outs that could be fitted


class BoundRefit(_Result):
    """One refit with doubtful judges' own-family effects held (at 0 or at their naive gap)."""

    name: str
    ranking: list[str] | None
    top: str | None
    reason: str | None


class GroupBounds(_Result):
    """A group's score range over the held refits and its rank range over every refit."""

    group: str
    low: float | None  # on the scale: a refit past an end is shown at the end ...
    high: float | None
    rank_best: int
    rank_worst: int
    refit_low: float | None = None  # ... and the refit's own value is kept here (None: not clipped at that end)
    refit_high: float | None = None

    def score_range(self, digits: int = 2) -> str | None:
        """ "8.39 to 10.00 (clipped at the scale's end: the refit gives 10.14)", the words every surface prints."""
        if self.low is None or self.high is None:
            return None
        text = f"{self.low:.{digits}f} to {self.high:.{digits}f}"
        past = [f"{v:.{digits}f}" for v in (self.refit_low, self.refit_high) if v is not None]
        if past:
            text += f" (clipped at the scale's end: the refit gives {' and '.join(past)})"
        return text


class Bounds(_Result):
    """What the board can say when some judge's own-family effect is in doubt (analysis/pointwise/bounds.py)."""

    judges: dict[str, str]  # judge -> why its own-family effect is in doubt
    refits: list[BoundRefit]
    rows: list[GroupBounds]  # by best rank, then worst rank
    top_holds: bool  # every refit (held, full, leave-outs) puts the same group first
    top: str | None  # that group, when it holds
    holding: list[str]  # groups whose rank is the same in every refit
    clipped: list[str] = []  # groups whose score range a held refit took past an end of the scale (shown at the end)


class Leaderboard(_Result):
    outcome: str
    by: str  # system_model, system (strategy) or both
    unit: str  # points or probability
    unit_words: str | None
    estimable: bool
    reason: str | None
    n_signs: int | None
    rows: list[LeaderRow]  # best first
    differences: list[SystemDifference]
    naive: list[RankedMean]
    self_excluded: list[RankedMean]
    judges: dict[str, list[RankedMean]]
    common_items: list[RankedMean] = []  # the mean verdict on the items every group answered (analysis/board/items.py)
    common_items_n: int = 0  # how many items every group answered
    changes: list[RankingChange]  # every change; on a board of more than 60 groups each ranking's largest 50
    changes_total: int = 0  # how many changes there are in all (more than listed on a large board)
    sensitivity: PanelSensitivity | None
    bounds: Bounds | None = None  # when a judge's own-family effect is in doubt
    # the top holds in every refit and bound: a best group may be named and P(best) shown; else `unsettled`
    # says which refits put another group first (every rank interval then also covers the refits' ranks)
    settled: bool = True
    unsettled: list[str] = []
    blocks: list[BoardBlock] = []  # a disconnected table: each block's own board, none across them
    warnings: list[str]


class BoardBlock(_Result):
    """One connected block of a disconnected table (analysis/board/connectivity.py) and its own board."""

    name: str
    words: str
    judges: list[str]
    systems: list[str]
    board: Leaderboard


Leaderboard.model_rebuild()


class Systems(_Result):
    lineage: str
    method: str
    interval: str
    resamples: int
    seed: int
    overall: dict[str, Leaderboard] | None = None  # per grouping: system_model, system, both
    equivalent: dict[str, Leaderboard] | None = None

    def outcomes(self) -> dict[Outcome, dict[str, Leaderboard]]:
        pairs: tuple[tuple[Outcome, dict[str, Leaderboard] | None], ...] = (
            ("overall", self.overall),
            ("equivalent", self.equivalent),
        )
        return {name: o for name, o in pairs if o is not None}


class Simulation(_Result):
    """What the simulator planted in a simulated table (planted.json beside it)."""

    description: str
    made_by: str
    scenario: str
    seed: int
    planted: dict[str, dict[str, float]]
    truth_self_preference: dict[str, dict[str, float | None]]  # outcome -> judge -> own-family effect
    truth_systems: dict[str, dict[str, dict[str, float]]]  # outcome -> grouping -> group -> score


# -- agreement and probes -----------------------------------------------------------------------------
class Alpha(_Result):
    level: str
    units: int
    alpha: float | None = None
    reason: str | None = None  # why alpha is not given (None when it is)


class PairAgreement(_Result):
    kappa_equivalent: float | None
    raw_agreement: float | None
    n: int


class Agreement(_Result):
    judges: list[str]
    reason: str | None = None
    alpha_overall: Alpha | None = None
    alpha_equivalent: Alpha | None = None
    pairwise: dict[str, PairAgreement] = {}


class Rate(_Result):
    estimate: float | None
    ci: list[float] | None
    n: int
    reason: str | None = None


class OrderProbe(_Result):
    overall: Rate
    per_judge: dict[str, Rate]
    not_ok: int


class ShiftAndFlips(_Result):
    shift: Rate
    flip_rate: Rate


class PaddingKind(ShiftAndFlips):
    per_judge: dict[str, ShiftAndFlips]


class PaddingProbe(_Result):
    kinds: dict[str, PaddingKind]
    not_ok: int


class RecognitionJudge(_Result):
    pairs: int  # own-versus-other pairs with a verdict in both orders
    others: list[str]  # the other families' models its own answers were set against
    accuracy: Rate  # position-corrected recognition: the mean over pairs of (own named when first + when second) / 2
    first_position: Rate  # the share of verdicts naming the answer shown first
    one_position: bool  # it named the same position in every pair: its 0.5 is no recognition at all
    single: Rate | None = None  # "did you write this?": balanced accuracy over its own and the other answer


class RecognitionCorrelation(_Result):
    outcome: str  # the self-preference outcome correlated with (the headline's)
    judges: list[str]
    spearman: float | None
    pearson: float | None
    reason: str | None


class RecognitionProbe(_Result):
    definition: str
    per_judge: dict[str, RecognitionJudge]
    not_ok: int
    failed_by_judge: dict[str, int] = {}
    correlation: RecognitionCorrelation | None = None


class Probes(_Result):
    order: OrderProbe | None = None
    padding: PaddingProbe | None = None
    recognition: RecognitionProbe | None = None


class Accuracy(_Result):
    accuracy: float
    correct: int
    n: int


class AuditJudge(_Result):
    good: int
    good_but_wrong: int


class Audit(_Result):
    cut: str
    per_judge: dict[str, AuditJudge]
    ranking_by_score: list[str]
    ranking_by_identification: list[str]
    kendall_tau: float | None


class Identification(_Result):
    by_system: dict[str, Accuracy]
    by_system_model: dict[str, Accuracy]
    audit: Audit


class MissingRate(_Result):
    missing: int
    asked: int
    rate: float | None


class KindMissingness(_Result):
    overall: MissingRate
    by_visibility: dict[str, MissingRate]
    by_system_family: dict[str, MissingRate]


class JudgeMissingness(_Result):
    quality: KindMissingness
    equivalence: KindMissingness
    one_judge_failed: int


class Missingness(_Result):
    per_judge: dict[str, JudgeMissingness]
    answers: int
    never_scored: int
    failed_system_calls: int | None = None


class PairRisk(_Result):
    winner: str | None
    mean_difference: float
    signs: int
    p_wrong_winner: float
    signs_for_90pct: int | None


class DecisionRisk(_Result):
    pairs: dict[str, PairRisk]
    reason: str | None = None


class ScaleUsed(_Result):
    maximum: float
    high: float
    low: float
    high_inclusive: bool
    low_inclusive: bool
    good: str
    poor: str


class Stability(_Result):
    passes: int
    answers: int  # with every pass ok
    incomplete: int
    exact_agreement: float | None = None
    flip_rate: float | None = None
    icc1: float | None = None


class HumanCorrelation(_Result):
    pearson: float | None
    spearman: float | None
    kendall: float | None = None
    n: int
    pearson_p: float | None = None
    spearman_p: float | None = None
    kendall_p: float | None = None


class HumanEquivalence(_Result):
    kappa: float | None
    raw_agreement: float | None
    n: int
    majority_baseline_agreement: float | None = None
    judge_yes_human_no: int
    judge_no_human_yes: int


class HumanDisagreement(_Result):
    judge_higher: int
    judge_lower: int
    mean_judge_minus_human: float | None


class HumanJudge(_Result):
    overall: HumanCorrelation
    accuracy: HumanCorrelation
    completeness: HumanCorrelation
    relevance: HumanCorrelation
    equivalence: HumanEquivalence
    overall_disagreement: HumanDisagreement


class HumanCheck(_Result):
    n_samples: int
    annotators: list[str]
    judges: dict[str, HumanJudge]  # the reference judge variant's
    by_variant: dict[str, dict[str, HumanJudge]] = {}  # every judge variant's, when the table has several


# -- judge designs compared (analysis/pointwise/designs.py) ------------------------------------------------------
class Paired(_Result):
    """A mean, rate or difference with its sign-cluster t interval (absent when it cannot be formed)."""

    estimate: float
    se: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    n: int | None = None
    signs: int | None = None


class DesignAlpha(_Result):
    alpha: float | None
    interval: Paired | None


class DesignSelfPreference(_Result):
    ref: float | None = None
    other: float | None = None
    difference: Paired | None = None
    reason: str | None = None


class DesignRow(_Result):
    """One judge under one variant, from that variant's own summary."""

    judge: str
    variant: str
    order_flip: Rate | None = None
    padding_flip: dict[str, Rate] = {}  # per judge kind
    self_preference: Paired | None = None  # the calibrated index (overall)
    human_r_overall: float | None = None  # Pearson r of the judge's overall with the human overall
    human_kappa_equivalent: float | None = None


class DesignDifference(_Result):
    """A variant minus the reference variant, for one judge, paired on what both judged."""

    judge: str
    variant: str
    overall: Paired | None = None
    equivalent: Paired | None = None
    order_flip: Paired | None = None
    padding_flip: Paired | None = None
    self_preference: DesignSelfPreference | None = None


class DesignComparison(_Result):
    reference: str
    variants: list[str]
    paired: str
    rows: list[DesignRow]
    alpha: dict[str, dict[str, DesignAlpha]]  # per variant: overall, equivalent
    alpha_differences: dict[str, dict[str, Paired | int | None]]  # per variant: overall, equivalent, answers
    differences: list[DesignDifference]


# -- rubric clarification (analysis/pointwise/clarification.py, studies/clarify.py) ----------------------------------
class ClauseRank(_Result):
    clause: str
    disagreement: float | None  # the ranking statistic (see `statistic`)
    alpha: float | None  # Krippendorff's alpha (interval) of the clause, beside it
    answers: int
    rank: int


class EditorAttempt(_Result):
    arm: str
    attempt: int
    seed: int
    request_key: str
    finish_reason: str | None
    problems: list[str]
    used: bool


class Editor(_Result):
    model: str
    attempts: list[EditorAttempt]
    tries: int


class ClarificationRecord(_Result):
    """What `dualjudge rubric clarify` did (clarification.json)."""

    settings: dict[str, Any]
    split: dict[str, Any]  # dev, test (sign codes), stratified_by
    statistic: str
    ranking: list[ClauseRank]
    selected: list[str]
    control: list[str]
    editor: Editor
    arms: list[str]  # the rubrics that were made and judged: original, clarified, control
    variants: dict[str, str]  # arm -> judge variant
    rubrics: dict[str, str]  # arm -> rubric file
    rubric_sha256: dict[str, str]
    status: str


class Clarification(_Result):
    """The experiment's result on the test split."""

    record: ClarificationRecord
    arms: list[str]  # the arms with verdicts on the test split
    alpha: dict[str, dict[str, DesignAlpha]]  # per arm: overall, equivalent
    differences: dict[str, dict[str, Paired | int | None]]  # "clarified - original": overall, equivalent, answers, signs
    self_preference: dict[str, dict[str, DesignSelfPreference]]  # per contrast, per judge
    human: dict[str, dict[str, dict[str, float | int | None]]]  # per arm, per judge: r_overall, n, kappa_equivalent


class StudyDesign(_Result):
    """What the table holds: the models with their families, the strategies, the answers and what they
    were about, and the verdicts that failed, per judge kind."""

    system_models: dict[str, str]  # model -> family
    judge_models: dict[str, str]  # model -> family
    strategies: list[str]
    answers: int
    signs: int | None  # None: the table has no sign column (each item is its own cluster)
    items: int
    visibilities: int | None = None  # visibility levels (0: no visibility column; None: a summary from before)
    failed_verdicts: dict[str, int]  # per judge kind: parse failures and errors


class Requests(_Result):
    sent: int
    failed: int
    sessions: int


class Cut(_Result):
    """A system model's answers against its max_tokens (storage/truncation.py)."""

    answers: int
    cut: int  # answers one of whose calls stopped at max_tokens
    max_tokens: int
    suffices: int | None  # the max_tokens that lets 95% of its calls finish (None: not known, over 5% were cut)


class Bootstrap(_Result):
    resamples: int
    seed: int
    cluster: str
    ci: dict[str, str]


class TaskWords(_Result):
    """The task a run studied, in the words its report uses (task.json beside the table)."""

    name: str
    noun: str  # what an item is called ("picture", "situation")
    unit: str  # the bootstrap's cluster, in words: "sign", "group", or the noun when each item is its own
    label: str | None  # the answers' final line (SIGN_TYPE, VERDICT), or None
    domain: str
    answer: str | None = None  # the final line's value as a regular expression (a number): scored by exact match


# -- pairwise judges (analysis/pairwise/) ------------------------------------------------------------------
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


class LikelihoodRatio(_Result):
    """A likelihood-ratio test of two nested fits (chi-square reference)."""

    lr: float
    df: int
    p: float


class Transitivity(_Result):
    """Bradley-Terry against the saturated model (each judge, each pair its own preference): does one strength per
    system (with the judges' terms) fit?"""

    test: LikelihoodRatio | None
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
    decisiveness_test: LikelihoodRatio | None  # per-judge decisiveness against one for all
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


class Summary(_Result):
    notes: list[str]  # what the table lacked and what the analysis did instead
    absent_columns: list[str] = []  # the optional columns the table did not have (docs/verdict-table.md)
    overall_convention: str  # mean_of_subscores (the paper's) or judge_given
    scale: ScaleUsed
    n_rows: int
    runs: list[str]
    design: StudyDesign
    degradation: list[DegradationPoint]  # all judges pooled
    strategies: dict[str, SystemMeans]  # raw means, all judges pooled
    system_models: dict[str, SystemMeans]
    systems: Systems  # the calibrated leaderboard
    paired_tests: dict[str, PairedTest]
    judges: dict[str, JudgeSummary]
    self_preference: SelfPreference
    agreement: Agreement
    bootstrap: Bootstrap
    identification: Identification | None = None
    missingness: Missingness
    decision_risk: DecisionRisk
    probes: Probes | None = None
    stability: dict[str, dict[str, Stability]] | None = None  # per judge, per kind
    human: HumanCheck | None = None  # from `dualjudge human import` (human_check.json beside the table)
    table: str | None = None
    analysis_seconds: float | None = None
    requests: Requests | None = None  # from the run's manifest beside the table: requests sent to models
    truncation: dict[str, Cut] | None = None  # from the run's manifest: per system model, answers cut at max_tokens
    judge_variant: str = "holistic"  # the judge design this summary is of
    variants: dict[str, Summary] = {}  # the other judge variants' summaries, when the table has several
    designs: DesignComparison | None = None  # the variants side by side, paired differences
    clarification: Clarification | None = None  # the rubric clarification experiment (studies/clarify.py)
    simulation: Simulation | None = None  # a simulated table: what was planted (planted.json beside it)
    task: TaskWords | None = None  # a task other than uk-signs (task.json beside the table)
    statistics: dict[str, dict[str, Any]] = {}  # the statistics declared in analysis/shared/statistics.py, by name
    pairwise: PairwiseAnalysis | None = None  # the pairwise judges' analysis (a run's pairwise.parquet beside the table)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @property
    def by_visibility(self) -> bool:
        """Whether the design has visibility levels to report by (occluded variants: uk-signs, an image task); a
        design of one level, or none, has no section, table or figure by visibility."""
        if self.design.visibilities is not None:
            return self.design.visibilities > 1
        return any(len(js.type2_by_visibility) > 1 for js in self.judges.values())
