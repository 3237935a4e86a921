"""The study, described once: its stages in order, the job that runs each (a model's systems job or its
judges job), the step the runner executes for it, and the completion tokens it asks at most.

    systems job of a model:  answers (every variant x repeat x strategy), padding (its losing answers restated)
    judges job of a model:   verdicts (every answer, each judge kind; run on the answers so far while other
                             systems jobs still run), order probe, padding judged, stability passes

The runner executes the stages of each job in this order (runner.py); the schedule's job lengths and
the placement simulation add up their tokens (`job_tokens`); the planner (`dualjudge plan`,
estimate.py) counts each stage's requests with its counter of the same name (a test checks that
every stage has one). A new stage is an entry here, its step in steps.py and its counter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dualjudge.config import RunConfig
from dualjudge.protocol.systems import STEPS, Item
from dualjudge.runs import steps

JobKind = Literal["systems", "judges"]
StepOf = Callable[[steps.Context, str, list[Item], "frozenset[str] | None"], steps.Step[Any]]


@dataclass(frozen=True)
class Stage:
    """One stage: its name (as progress and the plan show it), its job, its step for one model (the
    items: the run's variants; `of`: the system models whose answers are ready, None for all), and the
    completion tokens one model asks in it at max_tokens, for `items` variants."""

    name: str
    job: JobKind
    step: StepOf
    tokens: Callable[[RunConfig, int], int]
    as_answers_arrive: bool = False  # runs on the answers so far, again as each systems job ends


def _answers(c: RunConfig, items: int) -> int:
    calls = sum(len(STEPS[st]) for st in c.systems.strategies)  # MA: its three calls
    return items * c.testbed.repeats * calls * c.systems.max_tokens


def _padding(c: RunConfig, items: int) -> int:
    return steps.padding_share(c) * c.probes.padding_max_tokens if c.probes.padding else 0


def _all_answers(c: RunConfig, items: int) -> int:
    return items * c.testbed.repeats * len(c.systems.strategies) * len(c.systems.models)


def _verdicts(c: RunConfig, items: int) -> int:
    return c.judges.max_tokens * len(c.judges.variants) * _all_answers(c, items) * len(c.judges.kinds)


def _order(c: RunConfig, items: int) -> int:
    return c.judges.max_tokens * len(c.judges.variants) * c.probes.order_pairs * 2 if c.probes.order else 0


def _padding_judged(c: RunConfig, items: int) -> int:
    p = c.probes
    return c.judges.max_tokens * len(c.judges.variants) * p.padding_samples * len(c.judges.kinds) if p.padding else 0


def _passes(c: RunConfig, items: int) -> int:
    return _verdicts(c, items) * c.judges.passes if c.judges.passes >= 2 else 0


STUDY: tuple[Stage, ...] = (
    Stage("answers", "systems", lambda ctx, model, items, of: steps.answer_step(ctx, model, items), _answers),
    Stage("padding", "systems", lambda ctx, model, items, of: steps.padding_step(ctx, model), _padding),
    Stage("verdicts", "judges", lambda ctx, model, items, of: steps.judge_step(ctx, model, of=of), _verdicts,
          as_answers_arrive=True),
    Stage("order probe", "judges", lambda ctx, model, items, of: steps.order_step(ctx, model), _order),
    Stage("padding judged", "judges", lambda ctx, model, items, of: steps.rejudge_step(ctx, model), _padding_judged),
    Stage("stability passes", "judges", lambda ctx, model, items, of: steps.passes_step(ctx, model), _passes),
)


def stages(job: JobKind) -> tuple[Stage, ...]:
    return tuple(s for s in STUDY if s.job == job)


def job_tokens(config: RunConfig, items: int, job: JobKind) -> int:
    """The completion tokens one model's job asks at most: its stages' tokens added up."""
    return sum(s.tokens(config, items) for s in stages(job))
