"""The built-in uk-signs task: the testbed's 30 signs, SIGN_TYPE over the 25 categories, the project's
prompts as they are (so its requests, and their cache keys, are those of a run from before tasks).

It is the sign testbed's one door: the rest of the package reaches the signs (their codes, gold, renders,
variants and contact sheet) through this module, never through dualjudge.testbed (tests/test_layout.py)."""

from __future__ import annotations

from functools import lru_cache

from dualjudge.protocol.prompts import SIGN_PROMPTS
from dualjudge.tasks.task import Label, Task, TaskItem
from dualjudge.testbed.catalogue import Catalogue, default_catalogue
from dualjudge.testbed.sheet import contact_sheet
from dualjudge.testbed.variants import build_variants as build_sign_variants

__all__ = ["build_sign_variants", "contact_sheet", "sign_codes", "uk_signs"]

NAME = "uk-signs"
DOMAIN = "UK road traffic signs"
QUESTION = "What does this sign mean, and what must a road user do?"


def uk_signs() -> Task:
    return _uk_signs(default_catalogue())


def sign_codes() -> tuple[str, ...]:
    """The catalogue's sign codes (TSRGD), in its order."""
    return default_catalogue().codes


@lru_cache(maxsize=4)
def _uk_signs(catalogue: Catalogue) -> Task:
    items = tuple(
        TaskItem(
            id=s.code,
            reference=s.description,
            caption=s.caption,
            label=s.category,
            cluster=s.code,
            stratum=s.group,
            sign=s.code,
            metadata=(("group", s.group),),
            prompts=SIGN_PROMPTS,
        )
        for s in catalogue.signs
    )
    return Task(
        name=NAME,
        modalities=("image", "text"),
        domain=DOMAIN,
        question=QUESTION,
        items=items,
        label="SIGN_TYPE",
        labels=tuple(Label(c.id, c.definition) for c in catalogue.categories),
        noun="sign",
        prompts=SIGN_PROMPTS,
        builtin=True,
    )
