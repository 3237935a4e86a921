"""The testbed a run builds into its directory, and its variants as the systems see them."""

from __future__ import annotations

from pathlib import Path

from dualjudge.config import RunConfig
from dualjudge.inference.types import Image
from dualjudge.protocol.systems import Item
from dualjudge.testbed.variants import Variant, build_variants, variant_rows


def build_testbed(config: RunConfig, folder: Path) -> list[Variant]:
    """Render (or import) the configuration's variants into `folder` (a run's testbed/); its rows."""
    t = config.testbed
    frame = build_variants(
        folder,
        size=t.size,
        seed=config.run.seed,
        codes=t.codes(),
        visibilities=t.visibilities,
        modes=t.modes,
        images_dir=Path(t.images).expanduser() if t.images else None,
    )
    return variant_rows(frame)


def testbed_items(config: RunConfig, folder: Path, variants: list[Variant]) -> list[Item]:
    """Each variant as a system sees it: its scene text, and its image for the image modality."""
    out = []
    for v in variants:
        image = Image.from_png((folder / v.image_path).read_bytes()) if config.testbed.modality == "image" else None
        out.append(Item(v.variant_id, v.sign_code, v.scene_text, image))
    return out
