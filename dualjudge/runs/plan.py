"""What a run has to do, in an order that keeps each model loaded once and shared prefixes adjacent.

Stages: every system model answers all its items (MA steps in order within an item), then every
judge model judges every answer, then the probes. Within a model, tasks are sorted by strategy, then
variant, then repeat: requests that share a system prompt and an image follow one another, which is
what vLLM's prefix cache rewards. Each task's `key` is the key of the store row it produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from dualjudge.config import RunConfig
from dualjudge.protocol.seeds import seeded_rank
from dualjudge.protocol.systems import Item, Strategy
from dualjudge.storage.rows import Answer, AnswerKey


@dataclass(frozen=True)
class AnswerTask:
    item: Item
    answer: AnswerKey

    @property
    def key(self) -> tuple[Any, ...]:
        return self.answer.astuple()

    @property
    def strategy(self) -> Strategy:
        return cast(Strategy, self.answer.strategy)  # AnswerKey keeps it as the store's text


@dataclass(frozen=True)
class JudgeTask:
    answer: Answer
    judge_model: str
    variant: str
    kind: str

    @property
    def key(self) -> tuple[Any, ...]:
        return (*self.answer.key.astuple(), self.judge_model, self.variant, self.kind)


@dataclass(frozen=True)
class OrderTask:
    """Two answers to one variant and repeat, judged pairwise in both orders."""

    first: Answer
    second: Answer
    judge_model: str
    variant: str

    @property
    def key(self) -> tuple[Any, ...]:
        a, b = self.first.key, self.second.key
        return (a.variant_id, a.repeat, self.judge_model, self.variant, a.system_model, a.strategy, b.system_model, b.strategy)


@dataclass(frozen=True)
class ComparisonTask:
    """A pair of the pairwise judge's design in one order: `a` and `b` as the pairwise table names them."""

    a: Answer
    b: Answer
    judge_model: str
    shown_first: str  # "a" or "b"

    @property
    def key(self) -> tuple[Any, ...]:
        a, b = self.a.key, self.b.key
        return (a.variant_id, a.repeat, a.strategy, self.judge_model, a.system_model, b.system_model, self.shown_first)


@dataclass(frozen=True)
class RecognitionTask:
    """The judge model's own answer and another family's answer to one variant and repeat (the self-recognition probe)."""

    own: Answer
    other: Answer
    judge_model: str

    @property
    def key(self) -> tuple[Any, ...]:
        a, b = self.own.key, self.other.key
        return (a.variant_id, a.repeat, self.judge_model, a.strategy, b.system_model, b.strategy)


def answer_tasks(config: RunConfig, items: list[Item], model: str) -> list[AnswerTask]:
    """Built in (strategy, variant, repeat) order."""
    return [
        AnswerTask(item, AnswerKey(item.variant_id, r, model, s))
        for s in config.systems.strategies
        for item in items
        for r in range(config.testbed.repeats)
    ]


def judge_tasks(
    answers: list[Answer], judge_model: str, kinds: tuple[str, ...], variants: tuple[str, ...] = ("holistic",)
) -> list[JudgeTask]:
    """Every answer with text, for every variant and kind; a variant's requests together (they share its
    prompt prefix), and within it one response's judge requests adjacent."""
    ordered = sorted(answers, key=lambda a: (a.key.strategy, a.key.variant_id, a.key.repeat, a.key.system_model))
    return [
        JudgeTask(a, judge_model, variant, kind) for variant in variants for a in ordered if a.text is not None for kind in kinds
    ]


def order_pairs(planned: list[AnswerKey], n: int, seed: int) -> list[tuple[AnswerKey, AnswerKey]]:
    """n pairs of planned answers to the same variant and repeat from two different systems.

    Drawn from the design alone (a seeded hash over the planned answer keys), never from what has come
    back: the sample is the same on every rerun, whatever failed on the way; a pair waits until both of
    its answers exist."""
    by_item: dict[tuple[str, int], list[AnswerKey]] = {}
    for k in planned:
        by_item.setdefault((k.variant_id, k.repeat), []).append(k)
    candidates = []
    for group in by_item.values():
        group = sorted(set(group), key=lambda k: (k.system_model, k.strategy))
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a, b = group[i], group[j]
                rank = seeded_rank(seed, "order", a.variant_id, a.repeat, a.system_model, a.strategy, b.system_model, b.strategy)
                candidates.append((rank, a, b))
    candidates.sort(key=lambda c: c[0])
    return [(a, b) for _, a, b in candidates[:n]]


def comparison_pairs(
    planned: list[AnswerKey], judge: str, family: dict[str, str], design: str | int, seed: int
) -> list[tuple[AnswerKey, AnswerKey]]:
    """The pairwise judge's pairs for `judge`: two system models' planned answers to the same variant, repeat and
    strategy (the same prompt). own_vs_other: the judge's family's answer (first of the pair) against each other
    family's; all: every two models (in name order); N: N of all the pairs per variant and repeat in a seeded order
    drawn from the design alone, the same for every judge (so their verdicts are on the same pairs)."""
    by_prompt: dict[tuple[str, int, str], list[AnswerKey]] = {}
    for k in set(planned):
        by_prompt.setdefault((k.variant_id, k.repeat, k.strategy), []).append(k)
    mine = family.get(judge)
    pairs: list[tuple[AnswerKey, AnswerKey]] = []
    chosen: dict[tuple[str, int], list[tuple[str, AnswerKey, AnswerKey]]] = {}
    for (variant, repeat, strategy), keys in sorted(by_prompt.items()):
        keys.sort(key=lambda k: k.system_model)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                if design == "own_vs_other":
                    own_a, own_b = family.get(a.system_model) == mine, family.get(b.system_model) == mine
                    if own_a != own_b:
                        pairs.append((a, b) if own_a else (b, a))
                elif design == "all":
                    pairs.append((a, b))
                else:
                    rank = seeded_rank(seed, "pairwise", variant, repeat, strategy, a.system_model, b.system_model)
                    chosen.setdefault((variant, repeat), []).append((rank, a, b))
    for candidates in chosen.values():
        candidates.sort(key=lambda c: c[0])
        pairs += [(a, b) for _, a, b in candidates[: int(design)]]
    return pairs


def recognition_pairs(
    planned: list[AnswerKey], judge: str, family: dict[str, str], n: int, seed: int
) -> list[tuple[AnswerKey, AnswerKey]]:
    """n pairs of the judge model's own planned answer and another family's to the same variant and repeat (the same
    strategy where the other model has it, so both answered the same prompt), in a seeded order drawn from the
    design alone, as order_pairs is: a rerun draws the same pairs. Empty where the judge model is no system model."""
    own: dict[tuple[str, int], list[AnswerKey]] = {}
    others: dict[tuple[str, int], list[AnswerKey]] = {}
    mine = family.get(judge)
    for k in set(planned):
        if k.system_model == judge:
            own.setdefault((k.variant_id, k.repeat), []).append(k)
        elif mine is not None and family.get(k.system_model) not in (None, mine):
            others.setdefault((k.variant_id, k.repeat), []).append(k)
    candidates = []
    for at, mine_here in own.items():
        prompts = {(o.system_model, o.strategy) for o in others.get(at, [])}
        for a in mine_here:
            for b in others.get(at, []):
                if b.strategy != a.strategy and (b.system_model, a.strategy) in prompts:
                    continue  # that model answered the same prompt too: that answer is the pair
                rank = seeded_rank(seed, "recognition", judge, a.variant_id, a.repeat, a.strategy, b.system_model, b.strategy)
                candidates.append((rank, a, b))
    candidates.sort(key=lambda c: c[0])
    return [(a, b) for _, a, b in candidates[:n]]


def padding_sample(planned: list[AnswerKey], answers: dict[AnswerKey, Answer], n: int, seed: int) -> list[Answer]:
    """Up to n losing answers (a wrong or missing SIGN_TYPE), the first ones in a seeded order of the
    planned answers.

    Losing is decided without a judge, so the padding can be generated while the system model is loaded
    and re-judged while each judge is, and no model has to be loaded twice. The walk stops at the first
    planned answer whose outcome is not known yet (missing, or failed with no text): what is drawn is
    then always a prefix of what a run in which nothing failed would draw, so a rerun only extends it."""
    out: list[Answer] = []
    for key in sorted(planned, key=lambda k: seeded_rank(seed, "padding", *k.astuple())):
        if len(out) >= n:
            break
        a = answers.get(key)
        if a is None or a.text is None:
            break
        if a.predicted_category != a.category:
            out.append(a)
    return out
