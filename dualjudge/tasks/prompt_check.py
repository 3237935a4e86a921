"""A task folder's prompts filled as a run fills them, before anything runs.

Each prompt a run can ask (every strategy's steps in the task's modality, every judge kind holistic and with the
rubric, its own overall, the pairwise and recognition probes, the padding restatement, the rubric editor) is built
for the task's first item through the builders the runner and the planner call, so a placeholder no run fills
(`$item_text` in a judge's prompt before judges were shown the item, a typo) is one line naming the file at
`dualjudge data task`, at `plan` and at `run`, never a bare error part-way through a study.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from dualjudge.errors import DualjudgeError
from dualjudge.inference.types import Image, Sampling
from dualjudge.protocol.editor import build_editor_request
from dualjudge.protocol.judges import build_judge_request
from dualjudge.protocol.kinds import PROTOCOL_KINDS, declared
from dualjudge.protocol.probes import build_padding_request, build_pairwise_request
from dualjudge.protocol.recognition import build_pair_request, build_single_request
from dualjudge.protocol.rubric import Rubric, load_rubric
from dualjudge.protocol.systems import STEPS, STRATEGIES, Item, build_step_request
from dualjudge.protocol.verdicts import JUDGE_DEFAULT_MAX_TOKENS, OverallConvention
from dualjudge.protocol.vocabulary import FinalLine
from dualjudge.tasks.task import Task

CONVENTIONS: tuple[OverallConvention, ...] = ("mean_of_subscores", "judge_given")
_NAMED = re.compile(r"^prompt ([a-z_.]+): ")
_PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201"
    "a3e5c1b00000000049454e44ae426082"
)  # a 1 x 1 PNG: what an image step is built with


def check_prompts(task: Task, rubric: Path | None) -> None:
    """Build every request a run of `task` can send, for its first item; one line naming the prompt file where one
    cannot be filled (`rubric`: the rubric variant's clauses, as the run loads them)."""
    if not task.items:
        return
    gold = task.items[0]
    final = FinalLine(task.label, task.label_ids, task.answer) if task.label else None
    sampling = Sampling(temperature=0.0, max_tokens=JUDGE_DEFAULT_MAX_TOKENS, seed=0)
    clauses: Rubric | None = gold.rubric or (load_rubric(rubric) if rubric is not None else None)
    builds: list[Callable[[], Any]] = []
    for modality in task.modalities:
        item = Item(
            gold.id,
            gold.id,
            gold.text or "",
            Image.from_png(_PIXEL) if modality == "image" else None,
            gold.text or "",
            gold.prompts,
            final,
            task.labels_block(),
        )
        for strategy in STRATEGIES:
            for step in range(len(STEPS[strategy])):
                builds.append(
                    partial(
                        build_step_request,
                        strategy,
                        step,
                        item,
                        modality=modality,
                        sign_type_mode="constrained",
                        sampling=sampling,
                        previous=("a report", "a report"),
                    )
                )
    optional: list[Callable[[], Any]] = []  # a kind declared in code beside the protocol's: checked where the task has its prompt
    for kind in declared():
        into = builds if kind.name in PROTOCOL_KINDS else optional
        for convention in CONVENTIONS:
            into.append(partial(build_judge_request, kind.name, gold, "an answer", sampling, convention))
        if clauses is not None:
            into.append(partial(build_judge_request, kind.name, gold, "an answer", sampling, rubric=clauses))
    builds += [
        lambda: build_pairwise_request(gold, "an answer", "another", sampling),
        lambda: build_pair_request(gold, "an answer", "another", sampling),
        lambda: build_single_request(gold, "an answer", sampling),
        lambda: build_padding_request("an answer", prompts=gold.prompts),
    ]
    if clauses is not None:
        builds += [
            lambda: build_pairwise_request(gold, "an answer", "another", sampling, clauses),
            lambda: build_editor_request(clauses, clauses.ids[:1], 0, gold.prompts),
        ]
    for build in [*builds, *optional]:
        try:
            build()
        except DualjudgeError as e:
            if build in optional and "the task has no prompt" in str(e):
                continue  # a study that asks that kind is refused in its own line, naming the file to write
            raise DualjudgeError(_said(str(e), gold.prompts, task.folder)) from None


def _said(message: str, prompts: Any, folder: Path | None) -> str:
    """The builder's error as one line naming the prompt's file and the placeholders no run fills there."""
    named = _NAMED.match(message)
    if not named:
        return message
    where = prompts.load(named.group(1)).path
    missing = re.search(r"missing values \[([^\]]*)\]", message)
    names = [n.strip(" '") for n in missing.group(1).split(",") if n.strip(" '")] if missing else []
    if names:
        listed = ", ".join(f"${n}" for n in names)
        return f"{where}: uses {listed}, which a run does not fill in this prompt (nothing is sent with it)"
    return f"{where}: {message[named.end() :]}"
