"""Render a catalogue sign to a PNG-ready image plus the elements it is made of."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from PIL import Image

from dualjudge.errors import DualjudgeError
from dualjudge.testbed.designs import DESIGNS
from dualjudge.testbed.painter import Element, Painter

DEFAULT_SIZE = 512


@dataclass(frozen=True)
class RenderedSign:
    code: str
    image: Image.Image
    elements: tuple[Element, ...]


def render_sign(code: str, size: int = DEFAULT_SIZE) -> RenderedSign:
    """Draw sign `code` on a white square canvas of `size` pixels (anti-aliased)."""
    if size < 32:
        raise DualjudgeError(f"render size {size} is too small; use at least 32 pixels")
    try:
        draw = DESIGNS[code]
    except KeyError:
        raise DualjudgeError(f"no design for sign code {code!r}") from None
    painter = Painter(size)
    draw(painter)
    image, elements = painter.finish()
    return RenderedSign(code, image, elements)


@lru_cache(maxsize=64)
def cached_render(code: str, size: int = DEFAULT_SIZE) -> RenderedSign:
    """Renders are pure functions of (code, size): cache them within a process."""
    return render_sign(code, size)
