"""Judge variants: the same judges asked in different designs, compared as an experiment.

- `holistic`: the paper's judges (a short justification, then the scores or the decision);
- `rubric`: the judges score the shipped rubric's named clauses first (prompts/rubrics/rubric.toml);
- `rubric:NAME`: the same, with the rubric file a run configuration names under [judges.rubrics]
  (a clarified rubric and its control, for example).
A variant's name travels with every verdict and probe row and its prompts and rubric are part of
every cache key, so variants share a run's answers and never each other's verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from dualjudge.protocol.rubric import Rubric, load_rubric

HOLISTIC = "holistic"
RUBRIC = "rubric"
VARIANT = re.compile(r"^(holistic|rubric(:[a-z0-9][a-z0-9_-]{0,31})?)$")


def variant_problem(name: str, rubric_files: Mapping[str, str]) -> str | None:
    """Why a variant name cannot be used, or None."""
    if not VARIANT.match(name):
        return f"unknown judge variant {name!r}: holistic, rubric, or rubric:NAME with NAME in [judges.rubrics]"
    label = name.partition(":")[2]
    if label and label not in rubric_files:
        return f'judge variant {name!r} names no rubric file: add {label} = "path" under [judges.rubrics]'
    return None


def variant_rubric(name: str, rubric_files: Mapping[str, str] | None = None, default: Path | None = None) -> Rubric | None:
    """The rubric a variant scores with; None for the holistic judges. `rubric` scores with `default` (a
    task's own rubric), or the shipped one."""
    if name == HOLISTIC:
        return None
    label = name.partition(":")[2]
    if not label:
        return load_rubric(default)
    return load_rubric(Path((rubric_files or {})[label]).expanduser())
