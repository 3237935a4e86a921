"""The sign testbed's variants: the catalogue's signs rendered (or their official artwork imported) and
occluded at the paper's visibilities and modes (variants/manifest.py writes them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dualjudge.errors import DualjudgeError
from dualjudge.testbed.artwork import find_artwork, load_artwork
from dualjudge.testbed.catalogue import Catalogue, Sign, default_catalogue
from dualjudge.testbed.render import DEFAULT_SIZE, cached_render
from dualjudge.testbed.scene import scene_text
from dualjudge.variants.manifest import Source, write_variants
from dualjudge.variants.occlusion import (
    CONTROL_MODE,
    MODES,
    OCCLUDER_GREY,
    VISIBILITIES,
    check_mode,
    check_visibility,
    variant_seed,
    visibility_label,
)


@dataclass(frozen=True)
class VariantSpec:
    sign: Sign
    visibility: float
    mode: str  # random_block | bottom_up | none (the v = 1.0 control)
    seed: int

    @property
    def variant_id(self) -> str:
        return f"{self.sign.code}_v{visibility_label(self.visibility)}_{self.mode}"


def plan_variants(
    catalogue: Catalogue,
    codes: Sequence[str] | None = None,
    visibilities: Sequence[float] = VISIBILITIES,
    modes: Sequence[str] = MODES,
    seed: int = 0,
) -> list[VariantSpec]:
    """Variants in a fixed order: catalogue order of signs, then the paper's visibility order."""
    wanted = list(dict.fromkeys(codes)) if codes else list(catalogue.codes)
    for code in wanted:
        catalogue.sign(code)  # raises on an unknown code
    levels = sorted({check_visibility(v) for v in visibilities}, reverse=True)
    mode_list = [check_mode(m) for m in dict.fromkeys(modes)]
    specs = []
    for sign in catalogue.signs:
        if sign.code not in wanted:
            continue
        for v in levels:
            for mode in [CONTROL_MODE] if v >= 1.0 else mode_list:
                specs.append(VariantSpec(sign, v, mode, variant_seed(seed, sign.code, v, mode)))
    return specs


def build_variants(
    out: Path,
    size: int = DEFAULT_SIZE,
    seed: int = 0,
    codes: Sequence[str] | None = None,
    visibilities: Sequence[float] = VISIBILITIES,
    modes: Sequence[str] = MODES,
    images_dir: Path | None = None,
    occluder_colour: tuple[int, int, int] = OCCLUDER_GREY,
    catalogue: Catalogue | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Render (or import), occlude and describe every planned variant; write PNGs and the manifest."""
    cat = catalogue or default_catalogue()
    specs = plan_variants(cat, codes, visibilities, modes, seed)
    if not specs:
        raise DualjudgeError("nothing to build: no sign, visibility or mode selected")
    artwork = {s.sign.code: find_artwork(images_dir, s.sign.code) for s in specs} if images_dir else {}
    bases = {}
    for code in dict.fromkeys(s.sign.code for s in specs):
        rendered = cached_render(code, size)
        base = load_artwork(artwork[code], size) if images_dir else rendered.image
        bases[code] = (base, rendered.elements)

    sources = [
        Source(s.variant_id, s.sign.code, s.sign.group, s.sign.category, s.sign.caption, s.visibility, s.mode, s.seed, s.sign.code)
        for s in specs
    ]
    return write_variants(out, sources, bases, size, occluder_colour, progress, scene=scene_text)
