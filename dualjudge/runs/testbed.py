"""The testbed a run builds into its directory, and its variants as the systems see them."""

from __future__ import annotations

from pathlib import Path

from dualjudge.config import RunConfig
from dualjudge.inference.types import Image
from dualjudge.protocol.systems import Item
from dualjudge.protocol.vocabulary import FinalLine
from dualjudge.tasks.registry import DEFAULT as DEFAULT_TASK
from dualjudge.tasks.signs import build_sign_variants
from dualjudge.tasks.task import Task
from dualjudge.tasks.variants import build_task_variants
from dualjudge.variants.manifest import Variant, variant_rows


def build_testbed(config: RunConfig, folder: Path) -> list[Variant]:
    """Render (or import) the configuration's variants into `folder` (a run's testbed/); its rows."""
    t, task = config.testbed, config.task.load()
    if task.name == DEFAULT_TASK:  # the testbed as it always was: same images, ids and seeds
        frame = build_sign_variants(
            folder,
            size=t.size,
            seed=config.run.seed,
            codes=tuple(i.id for i in config.items()) if t.items != "all" or t.sample else t.codes(),
            visibilities=t.visibilities,
            modes=t.modes,
            images_dir=Path(t.images).expanduser() if t.images else None,
        )
    else:
        frame = build_task_variants(
            task,
            config.items(),
            folder,
            modality=t.modality,
            size=t.size,
            seed=config.run.seed,
            visibilities=t.visibilities,
            modes=t.modes,
        )
    return variant_rows(frame)


def testbed_items(config: RunConfig, folder: Path, variants: list[Variant]) -> list[Item]:
    """Each variant as a system sees it: its scene text (or the item's text), its image for the image
    modality, and the task's prompts and final line."""
    task = config.task.load()
    if task.name == DEFAULT_TASK:
        return [Item.of_sign(v.variant_id, v.sign_code, v.scene_text, _image(config, folder, v)) for v in variants]
    return [task_item(task, v, _image(config, folder, v)) for v in variants]


def task_item(task: Task, v: Variant, image: Image | None) -> Item:
    gold = task.item(v.sign_code)
    final = FinalLine(task.label, task.label_ids, task.answer) if task.label else None
    # a sign's variant has its scene text (what is visible); the item's own text goes with it either way
    return Item(v.variant_id, v.sign_code, v.scene_text, image, gold.text or "", gold.prompts, final, task.labels_block())


def _image(config: RunConfig, folder: Path, v: Variant) -> Image | None:
    if config.testbed.modality != "image" or not v.image_path:
        return None
    return Image.from_png((folder / v.image_path).read_bytes())
