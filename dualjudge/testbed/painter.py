"""Vector drawing primitives that record what they draw.

A `Painter` draws on a supersampled canvas (anti-aliased by downsampling) in unit coordinates:
(0, 0) is the top-left corner of the square canvas and (1, 1) the bottom-right, so a design is
independent of the output size. Every primitive belongs to an *element* (a ring, an arrow, a car
silhouette made of several shapes, a line of text); the painter records each element's kind,
colour, text, pixel bounding box and a low-resolution footprint mask, which the scene text and
the tests use.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from dualjudge.errors import DualjudgeError

# TSRGD colours as printed in the DfT artwork (sRGB).
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (255, 0, 0),
    "blue": (20, 118, 198),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
}
SUPERSAMPLE = 4
MASK_SIZE = 128  # footprint masks are kept at this resolution, whatever the render size

Point = tuple[float, float]
Rect = tuple[float, float, float, float]  # x0, y0, x1, y1 in unit coordinates


def _font_candidates() -> list[Path]:
    found: list[Path] = []
    try:
        import matplotlib

        found.append(Path(matplotlib.__file__).parent / "mpl-data/fonts/ttf/DejaVuSans-Bold.ttf")
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        pass
    found.append(Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"))
    return found


@lru_cache(maxsize=1)
def font_path() -> Path:
    """DejaVu Sans Bold, shipped by matplotlib (PyPI) or Debian's fonts-dejavu-core."""
    for p in _font_candidates():
        if p.is_file():
            return p
    raise DualjudgeError("font DejaVu Sans Bold not found: install matplotlib (pip) or fonts-dejavu-core (apt)")


@lru_cache(maxsize=64)
def _font(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(font_path()), px)


@dataclass(frozen=True)
class Element:
    """One visible part of a sign, as recorded by the painter."""

    kind: str  # ring, disc, triangle, octagon, rectangle, arrow, bar, text, silhouette, ...
    colour: str
    label: str  # what a viewer sees, e.g. "a white horizontal bar"; never the sign's meaning
    bbox: tuple[int, int, int, int]  # pixels at the render size, x1/y1 exclusive
    text: str | None = None
    char_boxes: tuple[tuple[int, int, int, int], ...] = ()
    mask: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros((1, 1), bool))

    def describe(self, shown_text: str | None = None) -> str:
        """The label, with a text element's characters (or the readable part of them) filled in."""
        text = self.text if shown_text is None else shown_text
        return self.label if text is None else self.label.replace("{text}", text)


@dataclass
class _Open:
    kind: str
    colour: str
    label: str
    text: str | None
    mask: Image.Image
    box: list[float] = field(default_factory=lambda: [math.inf, math.inf, -math.inf, -math.inf])
    char_boxes: list[Rect] = field(default_factory=list)

    def grow(self, b: Rect) -> None:
        self.box = [min(self.box[0], b[0]), min(self.box[1], b[1]), max(self.box[2], b[2]), max(self.box[3], b[3])]


class Painter:
    """Draw a sign in unit coordinates; `finish()` returns the image and its elements."""

    def __init__(self, size: int, background: tuple[int, int, int] = (255, 255, 255)) -> None:
        self.size = size
        self._ss = size * SUPERSAMPLE
        self._img = Image.new("RGB", (self._ss, self._ss), background)
        self._draw = ImageDraw.Draw(self._img)
        self._elements: list[Element] = []
        self._open: _Open | None = None

    # -- elements ------------------------------------------------------------------------------
    @contextmanager
    def element(self, kind: str, colour: str, label: str, text: str | None = None) -> Iterator[None]:
        if self._open is not None:
            raise RuntimeError("elements do not nest")
        self._open = _Open(kind, colour, label, text, Image.new("L", (MASK_SIZE, MASK_SIZE), 0))
        try:
            yield
        finally:
            op, self._open = self._open, None
        self._close(op)

    def _close(self, op: _Open) -> None:
        s = self.size
        x0, y0, x1, y1 = op.box
        bbox = (max(0, math.floor(x0 * s)), max(0, math.floor(y0 * s)), min(s, math.ceil(x1 * s)), min(s, math.ceil(y1 * s)))
        chars = tuple((math.floor(b[0] * s), math.floor(b[1] * s), math.ceil(b[2] * s), math.ceil(b[3] * s)) for b in op.char_boxes)
        self._elements.append(Element(op.kind, op.colour, op.label, bbox, op.text, chars, np.asarray(op.mask) > 127))

    def _shape(self, fn_name: str, geom_unit: object, colour: str, erase: bool, box: Rect, **kw: object) -> None:
        """Draw one primitive on the canvas and into the open element's footprint mask."""
        if self._open is None:
            raise RuntimeError("draw inside `with painter.element(...)`")
        rgb = COLOURS[colour]
        getattr(self._draw, fn_name)(_scale(geom_unit, self._ss), fill=rgb, **_scale_kw(kw, self._ss))
        mask_draw = ImageDraw.Draw(self._open.mask)
        getattr(mask_draw, fn_name)(_scale(geom_unit, MASK_SIZE), fill=0 if erase else 255, **_scale_kw(kw, MASK_SIZE))
        if not erase:
            self._open.grow(box)

    # -- primitives (unit coordinates) ---------------------------------------------------------
    def circle(self, cx: float, cy: float, r: float, colour: str, erase: bool = False) -> None:
        box = (cx - r, cy - r, cx + r, cy + r)
        self._shape("ellipse", box, colour, erase, box)

    def polygon(self, pts: Sequence[Point], colour: str, erase: bool = False) -> None:
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        self._shape("polygon", list(pts), colour, erase, (min(xs), min(ys), max(xs), max(ys)))

    def rect(self, x0: float, y0: float, x1: float, y1: float, colour: str, erase: bool = False) -> None:
        self.polygon([(x0, y0), (x1, y0), (x1, y1), (x0, y1)], colour, erase)

    def rounded_rect(self, box: Rect, radius: float, colour: str, erase: bool = False) -> None:
        self._shape("rounded_rectangle", box, colour, erase, box, radius=radius)

    def line(self, pts: Sequence[Point], width: float, colour: str, erase: bool = False) -> None:
        """A thick polyline with round joints and round caps."""
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        h = width / 2
        box = (min(xs) - h, min(ys) - h, max(xs) + h, max(ys) + h)
        self._shape("line", list(pts), colour, erase, box, width=width, joint="curve")
        for p in (pts[0], pts[-1]):
            self.circle(p[0], p[1], h * 0.999, colour, erase)

    def band(self, pts: Sequence[Point], width: float, colour: str, erase: bool = False) -> None:
        """A thick polyline with square (butt) ends: a polygon offset from each segment."""
        for a, b in zip(pts, pts[1:]):
            self.polygon(_segment_quad(a, b, width), colour, erase)
        for p in pts[1:-1]:
            self.circle(p[0], p[1], width / 2, colour, erase)

    def arc(self, cx: float, cy: float, r: float, start: float, end: float, width: float, colour: str, erase: bool = False) -> None:
        """An arc of a ring of outer radius r and the given width; angles in degrees, clockwise from 3 o'clock."""
        box = (cx - r, cy - r, cx + r, cy + r)
        self._shape("arc", box, colour, erase, box, start=start, end=end, width=width)

    def arrow_head(self, tip: Point, direction_deg: float, length: float, width: float, colour: str) -> None:
        """A triangular arrow head whose tip is at `tip`, pointing along direction (degrees, 0 = right, 90 = down)."""
        a = math.radians(direction_deg)
        ux, uy = math.cos(a), math.sin(a)
        bx, by = tip[0] - ux * length, tip[1] - uy * length
        px, py = -uy * width / 2, ux * width / 2
        self.polygon([tip, (bx + px, by + py), (bx - px, by - py)], colour)

    def text(self, s: str, box: Rect, colour: str, tracking: float = 0.08) -> None:
        """Text whose ink fills `box` (x0, y0, x1, y1) exactly: cap top at y0, baseline at y1.

        Glyphs are set in DejaVu Sans Bold with `tracking` (a fraction of the cap height) between
        characters, then scaled to the box, so a design can match the proportions of the sign
        alphabets (Transport) that the font itself does not have.
        """
        if self._open is None:
            raise RuntimeError("draw inside `with painter.element(...)`")
        x0, y0, x1, y1 = box
        cap_px = max(8, round((y1 - y0) * self._ss))
        font = _font(cap_px * 140 // 100)
        h_top, h_bottom = font.getbbox("H")[1], font.getbbox("H")[3]
        gap = tracking * (h_bottom - h_top)
        pen, placed = 0.0, []
        for ch in s:
            placed.append((ch, pen))
            pen += font.getlength(ch) + gap
        strip = Image.new("L", (math.ceil(pen) + cap_px, cap_px * 3), 0)
        sd = ImageDraw.Draw(strip)
        ink: list[tuple[float, float, float, float]] = []
        for ch, x in placed:
            sd.text((x, cap_px), ch, font=font, fill=255)
            b = font.getbbox(ch)
            if ch.strip():
                ink.append((x + b[0], cap_px + b[1], x + b[2], cap_px + b[3]))
        left = min(b[0] for b in ink)
        right = max(b[2] for b in ink)
        top, base = cap_px + h_top, cap_px + h_bottom
        crop = strip.crop((math.floor(left), math.floor(top), math.ceil(right), math.ceil(base)))
        kx = (x1 - x0) / crop.width
        ky = (y1 - y0) / crop.height
        for size, target in ((self._ss, self._img), (MASK_SIZE, self._open.mask)):
            w, h = max(1, round((x1 - x0) * size)), max(1, round((y1 - y0) * size))
            glyphs = crop.resize((w, h), Image.Resampling.LANCZOS)
            at = (round(x0 * size), round(y0 * size))
            if target is self._img:
                target.paste(COLOURS[colour], (*at, at[0] + w, at[1] + h), glyphs)
            else:
                target.paste(255, (*at, at[0] + w, at[1] + h), glyphs)
        for b in ink:
            unit = (
                x0 + (b[0] - math.floor(left)) * kx,
                y0 + (b[1] - math.floor(top)) * ky,
                x0 + (b[2] - math.floor(left)) * kx,
                y0 + (b[3] - math.floor(top)) * ky,
            )
            self._open.char_boxes.append(unit)
            self._open.grow(unit)

    # -- output --------------------------------------------------------------------------------
    def finish(self) -> tuple[Image.Image, tuple[Element, ...]]:
        img = self._img.resize((self.size, self.size), Image.Resampling.LANCZOS)
        return img, tuple(self._elements)


def _segment_quad(a: Point, b: Point, width: float) -> list[Point]:
    dx, dy = b[0] - a[0], b[1] - a[1]
    n = math.hypot(dx, dy) or 1.0
    px, py = -dy / n * width / 2, dx / n * width / 2
    return [(a[0] + px, a[1] + py), (b[0] + px, b[1] + py), (b[0] - px, b[1] - py), (a[0] - px, a[1] - py)]


def _scale(geom: object, k: float) -> object:
    if isinstance(geom, tuple) and all(isinstance(v, (int, float)) for v in geom):
        return tuple(v * k for v in geom)
    if isinstance(geom, list):
        return [(p[0] * k, p[1] * k) for p in geom]
    raise TypeError(f"unsupported geometry {geom!r}")


def _scale_kw(kw: dict[str, object], k: float) -> dict[str, object]:
    out = dict(kw)
    for key in ("width", "radius"):
        if key in out:
            value = out[key]
            assert isinstance(value, (int, float)), f"{key} is a number"
            out[key] = max(1, round(float(value) * k))
    return out
