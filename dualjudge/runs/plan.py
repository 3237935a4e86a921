"""What a run has to do, in an order that keeps each model loaded once and shared prefixes adjacent.

Stages: every system model answers all its items (MA steps in order within an item), then every
judge model judges every answer, then the probes. Within a model, tasks are sorted by strategy, then
variant, then repeat: requests that share a system prompt and an image follow one another, which is
what vLLM's prefix cache rewards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dualjudge.config import RunConfig
from dualjudge.protocol.seeds import seeded_rank
from dualjudge.protocol.systems import Item, Strategy


@dataclass(frozen=True)
class AnswerTask:
    item: Item
    repeat: int
    model: str
    strategy: Strategy

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.item.variant_id, self.repeat, self.model, self.strategy)


@dataclass(frozen=True)
class JudgeTask:
    answer_key: tuple[Any, ...]  # (variant_id, repeat, system_model, strategy)
    sign_code: str
    text: str
    judge_model: str
    kind: str

    @property
    def key(self) -> tuple[Any, ...]:
        return (*self.answer_key, self.judge_model, self.kind)


@dataclass(frozen=True)
class OrderTask:
    variant_id: str
    repeat: int
    sign_code: str
    judge_model: str
    first: tuple[str, str, str]  # (model, strategy, text)
    second: tuple[str, str, str]

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.variant_id, self.repeat, self.judge_model, self.first[0], self.first[1], self.second[0],
                self.second[1])


def answer_tasks(config: RunConfig, items: list[Item], model: str) -> list[AnswerTask]:
    tasks = [AnswerTask(item, r, model, s) for s in config.systems.strategies for item in items
             for r in range(config.testbed.repeats)]
    return tasks  # built in (strategy, variant, repeat) order


def judge_tasks(answers: list[dict[str, Any]], judge_model: str, kinds: tuple[str, ...]) -> list[JudgeTask]:
    """Every answer with text, for every kind; sorted so one response's two judge requests are adjacent."""
    out = []
    for a in sorted(answers, key=lambda a: (a["strategy"], a["variant_id"], a["repeat"], a["system_model"])):
        if a["text"] is None:
            continue
        key = (a["variant_id"], a["repeat"], a["system_model"], a["strategy"])
        for kind in kinds:
            out.append(JudgeTask(key, a["sign_code"], a["text"], judge_model, kind))
    return out


def order_pairs(answers: list[dict[str, Any]], n: int, seed: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Up to n pairs of answers to the same variant and repeat from two different systems.

    Chosen by a seeded hash, so the sample is the same on every rerun and independent of row order.
    """
    by_item: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for a in answers:
        if a["text"] is not None:
            by_item.setdefault((a["variant_id"], a["repeat"]), []).append(a)
    candidates = []
    for group in by_item.values():
        group = sorted(group, key=lambda a: (a["system_model"], a["strategy"]))
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a, b = group[i], group[j]
                candidates.append((seeded_rank(seed, "order", a["variant_id"], a["repeat"], a["system_model"], a["strategy"],
                                         b["system_model"], b["strategy"]), a, b))
    candidates.sort(key=lambda c: c[0])
    return [(a, b) for _, a, b in candidates[:n]]


def padding_sample(answers: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """Up to n losing answers: a wrong or missing SIGN_TYPE (chosen by a seeded hash).

    Losing is decided without a judge, so the padding can be generated while the system model is
    loaded and re-judged while each judge is, and no model has to be loaded twice.
    """
    losing = [a for a in answers if a["text"] is not None and a["predicted_category"] != a["category"]]
    losing.sort(key=lambda a: seeded_rank(seed, "padding", a["variant_id"], a["repeat"], a["system_model"], a["strategy"]))
    return losing[:n]
