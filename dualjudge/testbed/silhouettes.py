"""Vehicle silhouettes built from simple shapes (used by 619, 622.1A and 632)."""

from __future__ import annotations

from dualjudge.testbed.painter import Painter


def car_rear(p: Painter, cx: float, cy: float, w: float, colour: str, label: str) -> None:
    """A car seen from behind: cabin with a window over a wider body, two wheels below."""
    h = w * 0.92
    top = cy - h / 2
    with p.element("silhouette", colour, label):
        p.rounded_rect((cx - w * 0.40, top, cx + w * 0.40, top + h * 0.45), w * 0.08, colour)
        p.rounded_rect((cx - w * 0.31, top + h * 0.10, cx + w * 0.31, top + h * 0.38), w * 0.03, "white", erase=True)
        p.rounded_rect((cx - w / 2, top + h * 0.38, cx + w / 2, top + h * 0.86), w * 0.06, colour)
        for sx in (-1, 1):
            p.rect(cx + sx * w * 0.39 - w * 0.07, top + h * 0.80, cx + sx * w * 0.39 + w * 0.07, top + h, colour)


def car_front(p: Painter, cx: float, cy: float, w: float, label: str) -> None:
    """A car seen from the front: roof and windscreen, body with headlights, wheels."""
    h = w * 0.85
    top = cy - h / 2
    with p.element("silhouette", "black", label):
        p.rounded_rect((cx - w * 0.36, top, cx + w * 0.36, top + h * 0.5), w * 0.1, "black")
        p.rect(cx - w * 0.28, top + h * 0.1, cx + w * 0.28, top + h * 0.42, "white", erase=True)
        p.rounded_rect((cx - w / 2, top + h * 0.42, cx + w / 2, top + h * 0.84), w * 0.07, "black")
        p.circle(cx - w * 0.33, top + h * 0.60, w * 0.075, "white", erase=True)
        p.circle(cx + w * 0.33, top + h * 0.60, w * 0.075, "white", erase=True)
        p.rect(cx - w * 0.18, top + h * 0.56, cx + w * 0.18, top + h * 0.64, "white", erase=True)
        for sx in (-1, 1):
            p.rect(cx + sx * w * 0.36 - w * 0.1, top + h * 0.82, cx + sx * w * 0.36 + w * 0.1, top + h, "black")


def motorcycle(p: Painter, cx: float, cy: float, w: float, label: str) -> None:
    """A motorcycle with rider, side view facing right."""
    wr = w * 0.2
    base = cy + w * 0.18
    with p.element("silhouette", "black", label):
        for x in (cx - w * 0.3, cx + w * 0.3):
            p.circle(x, base, wr, "black")
            p.circle(x, base, wr * 0.55, "white", erase=True)
            p.circle(x, base, wr * 0.2, "black")
        p.polygon(
            [
                (cx - w * 0.30, base - w * 0.05),
                (cx - w * 0.18, base - w * 0.22),
                (cx + w * 0.22, base - w * 0.24),
                (cx + w * 0.32, base - w * 0.04),
                (cx + w * 0.05, base),
            ],
            "black",
        )
        # rider: leg, torso, head
        p.line(
            [(cx - w * 0.02, base - w * 0.2), (cx - w * 0.05, base - w * 0.40), (cx + w * 0.12, base - w * 0.55)], w * 0.13, "black"
        )
        p.line([(cx + w * 0.1, base - w * 0.5), (cx + w * 0.25, base - w * 0.38)], w * 0.07, "black")
        p.circle(cx + w * 0.15, base - w * 0.70, w * 0.09, "black")


def lorry(p: Painter, cx: float, cy: float, w: float, label: str) -> tuple[float, float, float, float]:
    """A lorry side view facing left; returns the box of its cargo body (for a weight legend)."""
    h = w * 0.5
    top = cy - h / 2
    left = cx - w / 2
    body = (left + w * 0.27, top, left + w, top + h * 0.80)
    with p.element("silhouette", "black", label):
        p.rect(*body, "black")
        p.polygon(
            [
                (left, top + h * 0.80),
                (left, top + h * 0.42),
                (left + w * 0.06, top + h * 0.18),
                (left + w * 0.25, top + h * 0.18),
                (left + w * 0.25, top + h * 0.80),
            ],
            "black",
        )
        p.polygon(
            [
                (left + w * 0.03, top + h * 0.42),
                (left + w * 0.08, top + h * 0.27),
                (left + w * 0.15, top + h * 0.27),
                (left + w * 0.15, top + h * 0.42),
            ],
            "white",
            erase=True,
        )
        p.rect(left, top + h * 0.78, left + w, top + h * 0.86, "black")
        for x in (left + w * 0.14, left + w * 0.70, left + w * 0.86):
            p.circle(x, top + h * 0.88, h * 0.14, "black")
            p.circle(x, top + h * 0.88, h * 0.06, "white", erase=True)
    return body
