"""What the steps of the study's stages share: the Step shape, the run's Context and the samplings. Each
stage's own step (which tasks are left, what each asks through the protocol) is in its module under
runs/stages/; which stages there are, in which job and order, is study.py's list.

A step is generic in its task type. Its `tasks()` is computed when the step starts (so it sees the
rows the previous steps wrote) and leaves out work already in a final state. The protocol asks and
reads the model (protocol/systems.py, judges.py, probes.py); a step only turns the result into a row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from dualjudge.config import RunConfig
from dualjudge.inference.engines import enforces_schema
from dualjudge.inference.types import Image, Sampling
from dualjudge.protocol.judges import UNCONSTRAINED_RETRIES
from dualjudge.protocol.rubric import Rubric
from dualjudge.protocol.seeds import derive_seed
from dualjudge.protocol.systems import Item
from dualjudge.protocol.variants import RUBRIC, variant_rubric
from dualjudge.runs.caller import CachingCaller
from dualjudge.storage.rows import (
    Answer,
    AnswerKey,
)
from dualjudge.storage.store import Store
from dualjudge.tasks.registry import default_rubric
from dualjudge.tasks.task import Task

T = TypeVar("T")


@dataclass(frozen=True)
class Step(Generic[T]):
    """One step of a model's stage: its tasks (computed when the step starts) and the work per task."""

    name: str
    tasks: Callable[[], list[T]]
    work: Callable[[T, CachingCaller], Awaitable[None]]


@dataclass(frozen=True)
class Context:
    """What the steps share: the configuration, the store, the task and the run's answers."""

    config: RunConfig
    store: Store
    task: Task
    answers: Callable[[str | None], list[Answer]]  # the run's answers (of one system model, or all)
    planned: Callable[[str | None], list[AnswerKey]]  # the answers the design asks for (of one model, or all)
    shown: Callable[[AnswerKey], Image | None] = lambda _key: None  # the image its judges see beside an answer

    def verdict_retries(self, judge: str) -> int:
        """How often a failed verdict is asked again: only for an engine that does not enforce the verdict
        schema (a hosted API or an attached endpoint that takes it as response_format), never where the schema
        is a constraint."""
        return 0 if enforces_schema(self.config.card(judge), self.config.engine) else UNCONSTRAINED_RETRIES

    def rubric(self, variant: str, item: str | None = None) -> Rubric | None:
        """The rubric a judge variant scores `item` with (None: holistic): the `rubric` variant takes an item's own
        rubric where it has one (a task folder's `rubric` column), a named variant its file."""
        # the context's task, loaded once: reading a task folder again per verdict would walk its files each time
        own = self.task.item(item).rubric if variant == RUBRIC and item is not None else None
        return own or variant_rubric(variant, self.config.judges.rubrics, default_rubric(self.task))

    def system_sampling(self) -> Sampling:
        return system_sampling(self.config)

    def judge_sampling(self) -> Sampling:
        return judge_sampling(self.config)

    def pass_sampling(self, pass_index: int) -> Sampling:
        return pass_sampling(self.config, pass_index)

    def padding_sampling(self) -> Sampling:
        return padding_sampling(self.config)


def judge_images(config: RunConfig, items: list[Item]) -> Callable[[AnswerKey], Image | None]:
    """The image a judge sees beside an answer: the item's the system answered, where judges.see_image is on."""
    if not config.judges.see_image:
        return lambda _key: None
    images = {i.variant_id: i.image for i in items}
    return lambda key: images.get(key.variant_id)


def system_sampling(config: RunConfig) -> Sampling:
    s = config.systems
    return Sampling(temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p)


def judge_sampling(config: RunConfig) -> Sampling:
    j = config.judges
    return Sampling(temperature=j.temperature, max_tokens=j.max_tokens, seed=config.run.seed)


def pass_sampling(config: RunConfig, pass_index: int) -> Sampling:
    j = config.judges
    return Sampling(
        temperature=j.pass_temperature, max_tokens=j.max_tokens, seed=derive_seed(config.run.seed, "judge pass", pass_index)
    )


def padding_sampling(config: RunConfig) -> Sampling:
    return Sampling(temperature=0.0, max_tokens=config.probes.padding_max_tokens, seed=config.run.seed)


def padding_share(config: RunConfig) -> int:
    """How many answers of each system model the padding probe restates (padding_samples split evenly)."""
    return -(-config.probes.padding_samples // len(config.systems.models))
