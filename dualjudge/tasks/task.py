"""A task as the protocol sees it: items with references, the label the answers end with, the words the
default prompts use, and the prompts themselves.

uk-signs (the testbed's 30 signs) is one task among others: its items are the signs, its label is
SIGN_TYPE over the 25 categories, its prompts are the project's prompts/ unchanged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dualjudge.errors import DualjudgeError
from dualjudge.protocol.prompts import PromptSet
from dualjudge.protocol.rubric import Rubric

Modality = Literal["image", "text"]


def plural(noun: str) -> str:
    """An English plural good enough for the nouns a task names its items by (country, box, situation)."""
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


MetaValue = str | int | float | bool  # an item's metadata value


@dataclass(frozen=True)
class Label:
    id: str
    definition: str


@dataclass(frozen=True)
class TaskItem:
    """One item: what a system is shown (an image, a text, or both), and what its answer is judged against.

    `cluster` is the bootstrap's unit (the verdict table's sign_code column); `stratum` what the rubric
    clarification's split is stratified by; `sign` the catalogue sign whose rendering is the item's image
    (the built-in tasks), `image` the item's own image otherwise."""

    id: str
    reference: str
    caption: str = ""
    label: str | None = None
    cluster: str = ""
    stratum: str = ""
    text: str | None = None
    image: bytes | None = field(default=None, repr=False)
    sign: str | None = None
    metadata: tuple[tuple[str, MetaValue], ...] = ()  # typed as the items file types them (CSV: text)
    prompts: PromptSet = PromptSet()
    sha256: str | None = None  # a task folder's item: its row and image, hashed (what a sample's identity is made of)
    rubric: Rubric | None = None  # the item's own rubric (a `rubric` column): the rubric judges score it with
    shown_to_judges: str | None = None  # the item's text as the judges see it beside the reference (None: not shown)

    @property
    def description(self) -> str:
        """The reference (the name the sign prompts use)."""
        return self.reference


@dataclass(frozen=True)
class Task:
    name: str
    modalities: tuple[Modality, ...]
    domain: str
    question: str
    items: tuple[TaskItem, ...]
    label: str | None = None  # the final line's name (SIGN_TYPE); None: answers end freely
    labels: tuple[Label, ...] = ()
    answer: str | None = None  # the final line's value as a regular expression (a number), instead of labels
    noun: str = "item"  # what the report calls an item ("sign" for uk-signs)
    prompts: PromptSet = PromptSet()
    rubric: Path | None = None  # the rubric variant's clauses; None: the shipped rubric
    sha256: str | None = None  # the content hash of a task folder (None: built in, pinned by the package)
    folder: Path | None = None
    builtin: bool = False
    situations: bool = False  # items carry a situation text beside the image (applied rules)
    files: tuple[Path, ...] = ()  # a task folder's files and folders its load read (nothing else of it is walked)
    base_sha256: str | None = None  # a task folder's files but its items file: its words, labels, prompts, rubric
    # items from a Hugging Face dataset: which, which split, which revision (not part of the task's equality)
    source: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def unit(self) -> str:
        """The bootstrap's cluster in words: a sign (the built-in tasks), a group, or the item itself."""
        if all(i.sign is not None and i.cluster == i.sign for i in self.items):
            return "sign"
        return self.noun if all(i.cluster == i.id for i in self.items) else "group"

    @property
    def label_ids(self) -> tuple[str, ...]:
        return tuple(lab.id for lab in self.labels)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(i.id for i in self.items)

    def item(self, item_id: str) -> TaskItem:
        found = self._by_id().get(item_id)
        if found is None:
            raise DualjudgeError(f"task {self.name}: unknown item {item_id!r}")
        return found

    def _by_id(self) -> dict[str, TaskItem]:
        cached: dict[str, TaskItem] | None = self.__dict__.get("_index")
        if cached is None:
            cached = {i.id: i for i in self.items}
            object.__setattr__(self, "_index", cached)
        return cached

    def labels_block(self) -> str:
        return "\n".join(f"- {lab.id}: {lab.definition}" for lab in self.labels)

    def content_of(self, items: tuple[TaskItem, ...]) -> str | None:
        """The hash of what a run of these items reads: the task's own files but the items file, and each item's
        row and image. A folder that grows by other items keeps it (a sampled run resumes); None: built in."""
        if self.base_sha256 is None or any(i.sha256 is None for i in items):
            return None
        digest = hashlib.sha256(self.base_sha256.encode())
        for item in items:
            digest.update(f"{item.id}:{item.sha256}".encode())
        return digest.hexdigest()

    def sample(self, n: int, seed: int) -> tuple[TaskItem, ...]:
        """n items drawn by a seeded hash of their ids (the same n for the same seed, however the file is ordered;
        an item added later joins only where its hash ranks it in), in the task's order."""
        if n > len(self.items):
            raise DualjudgeError(f"task {self.name}: a sample of {n} items, but it has {len(self.items)}")
        ranked = sorted(self.items, key=lambda i: hashlib.sha256(f"{seed}:{i.id}".encode()).hexdigest())
        chosen = {i.id for i in ranked[:n]}
        return tuple(i for i in self.items if i.id in chosen)

    def select(self, ids: tuple[str, ...] | None) -> tuple[TaskItem, ...]:
        """The items named (in the task's order), or all; an unknown id is an error."""
        if ids is None:
            return self.items
        for i in ids:
            self.item(i)
        wanted = set(ids)
        return tuple(i for i in self.items if i.id in wanted)
