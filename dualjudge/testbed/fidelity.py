"""Render fidelity: how closely each rendered sign matches the official DfT artwork of its code.

Both images are composited on white, scaled to fit 128 x 128 (centred, white padding) and compared
in grayscale with SSIM (scikit-image). SSIM alone is weak (an empty red ring scores 0.73 against
the official 30 mph sign), so the report also names each render's nearest official sign among all
the artwork given: a faithful render's nearest sign is its own code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from dualjudge.errors import DualjudgeError
from dualjudge.testbed.artwork import fit_square
from dualjudge.testbed.render import render_sign

COMPARE_SIZE = 128


def fit_on_white(image: Image.Image, size: int = COMPARE_SIZE) -> np.ndarray:
    """Composite on white, scale to fit a size x size square (centred), return grayscale floats."""
    return np.asarray(fit_square(image, size).convert("L"), dtype=np.float64)


@dataclass(frozen=True)
class FidelityRow:
    code: str
    ssim_own: float
    nearest: str
    ssim_nearest: float

    @property
    def own_is_nearest(self) -> bool:
        return self.nearest == self.code


def load_official(folder: Path) -> dict[str, np.ndarray]:
    files = sorted(folder.glob("*.png"))
    if not files:
        raise DualjudgeError(f"{folder}: no PNG artwork found (expected files named by TSRGD code)")
    return {f.stem: fit_on_white(Image.open(f)) for f in files}


def measure(codes: list[str], official_dir: Path) -> list[FidelityRow]:
    from skimage.metrics import structural_similarity

    official = load_official(official_dir)
    rows = []
    for code in codes:
        if code not in official:
            continue
        mine = fit_on_white(render_sign(code, 512).image)
        scores = {k: float(structural_similarity(mine, ref, data_range=255.0)) for k, ref in official.items()}  # type: ignore[no-untyped-call]  # an untyped library
        nearest = max(scores, key=lambda k: scores[k])
        rows.append(FidelityRow(code, scores[code], nearest, scores[nearest]))
    return rows
