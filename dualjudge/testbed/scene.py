"""The text form of a variant: a plain-English account of what remains visible.

Text-only models read this instead of the image. It is generated from the painter's element
record: elements that are mostly visible are described in full, partly hidden ones are mentioned as
parts (text elements show only their readable characters), slivers are named only by colour and
kind, and hidden ones are left out. It never names what the sign means: labels describe shapes,
colours and printed characters only (the tests check this against every caption and category).
"""

from __future__ import annotations

import numpy as np

from dualjudge.testbed.painter import MASK_SIZE, Element
from dualjudge.variants.occlusion import Box

FULL = 0.9  # at least this share of an element visible: described in full
PART = 0.4  # at least this share: "part of ..." with the full label
SLIVER = 0.03  # at least this share: a small part, named by colour and kind only
MIN_PIXELS = 8  # ... or at least this many footprint pixels (of the 128 x 128 mask) still showing
CHAR_VISIBLE = 0.75  # a printed character is readable if this share of its box is visible

_KIND_NOUNS = {
    "ring": "circular border",
    "triangle": "triangular border",
    "octagon": "octagonal shape",
    "disc": "circular shape",
    "face": "background",
    "rectangle": "rectangular panel",
    "arrow": "arrow",
    "arrows": "curved arrow",
    "bar": "bar",
    "cross": "diagonal band",
    "text": "lettering",
    "silhouette": "dark shape",
    "symbol": "dark shape",
    "marks": "small marks",
    "edge": "outline",
}


def _visible_mask(element: Element, box: Box | None, size: int) -> np.ndarray:
    mask = element.mask.copy()
    if box is not None:
        k = MASK_SIZE / size
        x0, y0 = int(round(box.x0 * k)), int(round(box.y0 * k))
        x1, y1 = int(round(box.x1 * k)), int(round(box.y1 * k))
        mask[y0:y1, x0:x1] = False
    return mask


def _overlap(a: tuple[int, int, int, int], box: Box) -> float:
    w = max(0, min(a[2], box.x1) - max(a[0], box.x0))
    h = max(0, min(a[3], box.y1) - max(a[1], box.y0))
    area = max(1, (a[2] - a[0]) * (a[3] - a[1]))
    return w * h / area


def readable_text(element: Element, box: Box | None) -> str:
    """The element's text with characters hidden by the occluder shown as '_'."""
    assert element.text is not None
    if box is None:
        return element.text
    out, boxes = [], iter(element.char_boxes)
    for ch in element.text:
        if not ch.strip():
            out.append(ch)
            continue
        hidden = _overlap(next(boxes), box)
        out.append(ch if 1 - hidden >= CHAR_VISIBLE else "_")
    return "".join(out)


def _where(visible: np.ndarray, full: np.ndarray) -> str:
    """Which part of an element is still visible, relative to the element's own extent."""
    ys, xs = np.nonzero(full)
    vy, vx = np.nonzero(visible)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    fy = (vy.mean() - y0) / max(1, y1 - y0)
    fx = (vx.mean() - x0) / max(1, x1 - x0)
    if vy.max() + 1 <= y0 + 0.25 * (y1 - y0):
        return "only its top edge"
    vertical = "upper" if fy < 0.4 else "lower" if fy > 0.6 else ""
    horizontal = "left" if fx < 0.4 else "right" if fx > 0.6 else ""
    place = f"{vertical}-{horizontal}" if vertical and horizontal else vertical or horizontal or "middle"
    return f"its {place} part"


def describe_occluder(box: Box | None, size: int, mode: str) -> str:
    if box is None:
        return "Nothing covers the sign."
    share = round(100 * box.area / (size * size))
    if mode == "bottom_up":
        return (
            f"A flat grey rectangle covers the bottom {share}% of the picture across its full width; "
            f"only the top {100 - share}% is visible."
        )
    pct = [round(100 * v / size) for v in (box.x0, box.x1, box.y0, box.y1)]
    cx, cy = (box.x0 + box.x1) / 2 / size, (box.y0 + box.y1) / 2 / size
    vertical = "upper" if cy < 0.4 else "lower" if cy > 0.6 else "middle"
    horizontal = "left" if cx < 0.4 else "right" if cx > 0.6 else "centre"
    area = "centre" if (vertical, horizontal) == ("middle", "centre") else f"{vertical} {horizontal}"
    return (
        f"A flat grey rectangle covers {share}% of the picture, from {pct[0]}% to {pct[1]}% across "
        f"and {pct[2]}% to {pct[3]}% down (the {area} area)."
    )


def scene_text(elements: tuple[Element, ...], box: Box | None, size: int, mode: str) -> str:
    """Describe what of the sign remains visible around the occluder."""
    seen: list[str] = []
    for el in elements:
        total = int(el.mask.sum())
        if total == 0:
            continue
        visible = _visible_mask(el, box, size)
        share = visible.sum() / total
        if share >= FULL:
            shown = readable_text(el, box) if el.text else None
            if shown is not None and "_" in shown:
                seen.append(f"{el.describe(shown)} (characters shown as _ are hidden)")
            else:
                seen.append(el.describe(shown))
        elif share >= PART:
            if el.text:
                shown = readable_text(el, box)
                seen.append(f"part of {el.describe(shown)} (characters shown as _ are hidden)")
            else:
                seen.append(f"part of {el.describe()} ({_where(visible, el.mask)} is visible)")
        elif share >= SLIVER or visible.sum() >= MIN_PIXELS:
            noun = _KIND_NOUNS.get(el.kind, "shape")
            seen.append(f"a small part of a {el.colour} {noun} ({_where(visible, el.mask)})")
    if seen:
        body = "Visible: " + "; ".join(seen) + "."
    else:
        body = "Nothing of the sign itself can be made out."
    return f"The picture shows a sign on a white background. {describe_occluder(box, size, mode)} {body}"
