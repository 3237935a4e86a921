"""The paper's two occlusion modes at seven visibility levels.

random_block: one opaque rectangle of area (1 - v) x W x H, its aspect ratio and position drawn from
a generator seeded by (global seed, sign code, v, mode) alone, wholly inside the canvas.
bottom_up: a full-width rectangle of height (1 - v) x H rising from the lower edge.
v = 1.0 is one unoccluded control shared by both modes (mode "none").
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from PIL import Image, ImageDraw

from dualjudge.errors import DualjudgeError

VISIBILITIES: tuple[float, ...] = (1.0, 0.8, 0.7, 0.5, 0.3, 0.2, 0.1)
Mode = Literal["random_block", "bottom_up"]
MODES: tuple[Mode, ...] = get_args(Mode)
CONTROL_MODE = "none"
OCCLUDER_GREY = (128, 128, 128)
AREA_TOLERANCE = 0.005  # occluded area within 0.5 % of the target (1 - v) x W x H
MAX_ASPECT = 4.0  # random blocks are at most 4:1 in either direction, where the area allows


@dataclass(frozen=True)
class Box:
    """An occluder in pixels: x0, y0 inclusive, x1, y1 exclusive."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def area(self) -> int:
        return (self.x1 - self.x0) * (self.y1 - self.y0)


VISIBILITY_DECIMALS = 3  # visibilities are exact to this many decimals; finer values are refused


def visibility_label(v: float) -> str:
    """The exact text of a visibility in variant ids and seeds: one decimal when that is exact ("0.5",
    "1.0", as always), else two or three ("0.55", "0.125"). Finer values are refused, never rounded."""
    for digits in range(1, VISIBILITY_DECIMALS + 1):
        if abs(round(v, digits) - v) < 1e-9:
            return f"{v:.{digits}f}"
    raise DualjudgeError(
        f"visibility {v} has more than {VISIBILITY_DECIMALS} decimals; use at most {VISIBILITY_DECIMALS} (e.g. 0.125)"
    )


def check_visibility(v: float) -> float:
    if not 0.0 < v <= 1.0:  # also refuses NaN
        raise DualjudgeError(f"visibility {v} is outside (0, 1]")
    return float(visibility_label(v))


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise DualjudgeError(f"unknown occlusion mode {mode!r}; choose from {', '.join(MODES)}")
    return mode


def variant_seed(global_seed: int, code: str, visibility: float, mode: str) -> int:
    """A 63-bit seed from (global seed, sign code, v, mode) alone, so subsets build identical images."""
    key = f"{global_seed}|{code}|{visibility_label(visibility)}|{mode}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1


def occluder_box(size: int, visibility: float, mode: str, seed: int) -> Box | None:
    """The occluder for one variant, or None for the control (v = 1.0)."""
    if visibility >= 1.0:
        return None
    target = (1.0 - visibility) * size * size
    if mode == "bottom_up":
        h = round((1.0 - visibility) * size)
        return Box(0, size - h, size, size)
    check_mode(mode)
    rng = np.random.default_rng(seed)
    lo = max(target / (size * size), 1 / MAX_ASPECT)
    hi = min(size * size / target, MAX_ASPECT)
    aspect = math.exp(rng.uniform(math.log(lo), math.log(hi))) if hi > lo else 1.0
    w, h = _integer_sides(target, math.sqrt(target * aspect), size)
    x0 = int(rng.integers(0, size - w + 1))
    y0 = int(rng.integers(0, size - h + 1))
    return Box(x0, y0, x0 + w, y0 + h)


def _integer_sides(target: float, w_wanted: float, size: int) -> tuple[int, int]:
    """Integer (w, h) with w near w_wanted whose product is within tolerance of target, if one exists."""
    best: tuple[float, int, int] | None = None
    for w in sorted(range(1, size + 1), key=lambda w: abs(w - w_wanted)):
        h = round(target / w)
        if not 1 <= h <= size:
            continue
        err = abs(w * h - target) / target
        if err <= AREA_TOLERANCE:
            return w, h
        if best is None or err < best[0]:
            best = (err, w, h)
    assert best is not None
    return best[1], best[2]


def occlude(image: Image.Image, box: Box | None, colour: tuple[int, int, int] = OCCLUDER_GREY) -> Image.Image:
    out = image.convert("RGB")
    if box is not None:
        ImageDraw.Draw(out).rectangle((box.x0, box.y0, box.x1 - 1, box.y1 - 1), fill=colour)
    return out
