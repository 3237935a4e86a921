"""The study, described once: its stages in order, each a module under runs/stages/ (its step, its
count for the plan, its token bound).

    systems job of a model:  answers (every variant x repeat x strategy), padding (its losing answers restated)
    judges job of a model:   verdicts (every answer, each judge kind; run on the answers so far while other
                             systems jobs still run), pairwise (the pairwise judge's pairs), order probe,
                             recognition probe, padding judged, stability passes

The runner executes the stages of each job in this order (runner.py); the schedule's job lengths and
the placement simulation add up their tokens (`job_tokens`); the planner (`dualjudge plan`, estimate.py)
adds up their counts. A new stage is one module under runs/stages/ and one line here.
"""

from __future__ import annotations

from dualjudge.config import RunConfig
from dualjudge.runs.stage import JobKind, Stage
from dualjudge.runs.stages import (
    answers,
    comparisons,
    order_probe,
    padding,
    padding_judged,
    recognition_probe,
    stability_passes,
    verdicts,
)

STUDY: tuple[Stage, ...] = (
    answers.STAGE,
    padding.STAGE,
    verdicts.STAGE,
    comparisons.STAGE,
    order_probe.STAGE,
    recognition_probe.STAGE,
    padding_judged.STAGE,
    stability_passes.STAGE,
)


def stages(job: JobKind) -> tuple[Stage, ...]:
    return tuple(s for s in STUDY if s.job == job)


def job_tokens(config: RunConfig, items: int, job: JobKind) -> int:
    """The completion tokens one model's job asks at most: its stages' tokens added up."""
    return sum(s.tokens(config, items) for s in stages(job))
