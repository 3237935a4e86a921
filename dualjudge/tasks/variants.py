"""A task's variants: each item's image occluded at the testbed's visibilities and modes (the occlusion
ladder is a property of images, not of signs), or one variant per item for a text task.

uk-signs is built by the testbed itself (testbed/variants.py), so its variants, images and ids are
those of a run from before tasks. The applied-rules task occludes its sign's rendering, one variant
set per situation; a task folder's items bring their own images, letterboxed onto a square."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from PIL import Image as PILImageModule

from dualjudge.tasks.task import Task, TaskItem
from dualjudge.testbed.render import cached_render
from dualjudge.testbed.scene import scene_text
from dualjudge.variants.manifest import Base, Source, write_variants
from dualjudge.variants.occlusion import CONTROL_MODE, check_mode, check_visibility, variant_seed, visibility_label

LETTERBOX = (255, 255, 255)


def variant_id(item: TaskItem, visibility: float, mode: str) -> str:
    return f"{item.id}_v{visibility_label(visibility)}_{mode}"


def sources(
    task: Task, items: Sequence[TaskItem], modality: str, visibilities: Sequence[float], modes: Sequence[str], seed: int
) -> list[Source]:
    """Every variant of the items, in the task's order, then the paper's visibility order."""
    levels = sorted({check_visibility(v) for v in visibilities}, reverse=True)
    mode_list = [check_mode(m) for m in dict.fromkeys(modes)]
    out = []
    for item in items:
        label, group = item.label or "", item.cluster
        if modality == "text" and item.sign is None:  # a text item: nothing to occlude, its one variant is itself
            out.append(Source(item.id, item.id, group, label, item.caption, 1.0, CONTROL_MODE, 0, None))
            continue
        base = item.sign if item.sign is not None else item.id
        for v in levels:
            for mode in [CONTROL_MODE] if v >= 1.0 else mode_list:
                # a sign's occluder is drawn from the sign's code: every situation at one sign sees the same image
                seeded = variant_seed(seed, base, v, mode)
                out.append(Source(variant_id(item, v, mode), item.id, group, label, item.caption, v, mode, seeded, base))
    return out


def letterbox(data: bytes, size: int) -> PILImageModule.Image:
    """An item's image scaled to fit a size x size square, centred on white (the occluder's frame)."""
    with PILImageModule.open(io.BytesIO(data)) as im:
        rgb = im.convert("RGB")
    rgb.thumbnail((size, size), PILImageModule.Resampling.LANCZOS)
    canvas = PILImageModule.new("RGB", (size, size), LETTERBOX)
    canvas.paste(rgb, ((size - rgb.width) // 2, (size - rgb.height) // 2))
    return canvas


def build_task_variants(
    task: Task,
    items: Sequence[TaskItem],
    out: Path,
    *,
    modality: str,
    size: int,
    seed: int,
    visibilities: Sequence[float],
    modes: Sequence[str],
) -> pd.DataFrame:
    planned = sources(task, items, modality, visibilities, modes, seed)
    bases: dict[str, Base] = {}
    for item in items:
        if item.sign is not None and item.sign not in bases:
            rendered = cached_render(item.sign, size)
            bases[item.sign] = (rendered.image, rendered.elements)
        elif item.sign is None and item.image is not None and modality == "image":
            bases[item.id] = (letterbox(item.image, size), None)
    return write_variants(out, planned, bases, size, scene=scene_text)
