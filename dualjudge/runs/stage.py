"""A stage of the study: its name (as progress and the plan show it), the job that runs it, its step for
one model, its count for the plan and its completion-token bound. Each stage is one module under
runs/stages/ that defines its `STAGE`; runs/study.py lists them in order."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from dualjudge.config import RunConfig
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.systems import Item
from dualjudge.runs import steps
from dualjudge.runs.counting import Planner, Seen, StageCount
from dualjudge.storage.rows import Row

JobKind = Literal["systems", "judges"]
StepOf = Callable[[steps.Context, str, list[Item], "frozenset[str] | None"], steps.Step[Any]]
CountOf = Callable[[Planner, str, "Rubric | None", Seen], Awaitable["StageCount | None"]]


@dataclass(frozen=True)
class Stage:
    """`step(ctx, model, items, of)`: the runner's step for one model (items: the run's variants; `of`:
    the system models whose answers are ready, None for all). `count(planner, model, rubric, seen)`: the
    plan's count of the same requests, answered from the caches where they can be (None: the stage is
    off). `tokens(config, items)`: the completion tokens one model asks in it at max_tokens. `rows`:
    the row types it records (their tables are made from them when a run directory lacks them)."""

    name: str
    job: JobKind
    step: StepOf
    count: CountOf
    tokens: Callable[[RunConfig, int], int]
    rows: tuple[type[Row], ...] = ()
    as_answers_arrive: bool = False  # runs on the answers so far, again as each systems job ends
