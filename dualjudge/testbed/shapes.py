"""Sign bodies shared by many designs: discs and rings, triangles, octagon, rectangles.

Proportions follow the DfT artwork: a circular sign fills the canvas width; a warning triangle
fills the width with a height of 0.871; the red ring is 0.098 of the diameter and the triangle
border 0.086 of the width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dualjudge.testbed.painter import Painter, Point

C = (0.5, 0.5)
R = 0.497  # outer radius of circular signs
RING = 0.098  # red ring width (of the canvas width)
TRI_BORDER = 0.087
TRI_CORNER = 0.0546  # corner rounding radius
TRI_APEX, TRI_BASE, TRI_HALF_BASE = 0.003, 0.9346, 0.540  # the sharp outline the rounded one fits in


def rounded_polygon(vertices: Sequence[Point], radius: float, steps: int = 12) -> list[Point]:
    """The outline of a convex polygon (clockwise on screen) grown by `radius` with round corners."""
    n = len(vertices)
    out: list[Point] = []
    for i, (vx, vy) in enumerate(vertices):
        px, py = vertices[i - 1]
        nx, ny = vertices[(i + 1) % n]
        a0 = math.atan2(vy - py, vx - px) - math.pi / 2  # outward normal of the incoming edge
        a1 = math.atan2(ny - vy, nx - vx) - math.pi / 2  # outward normal of the outgoing edge
        while a1 < a0:
            a1 += 2 * math.pi
        for k in range(steps + 1):
            a = a0 + (a1 - a0) * k / steps
            out.append((vx + radius * math.cos(a), vy + radius * math.sin(a)))
    return out


def inset_triangle(vertices: Sequence[Point], d: float) -> list[Point]:
    """An equilateral triangle moved inwards by distance d on every side (same incentre)."""
    cx = sum(v[0] for v in vertices) / 3
    cy = sum(v[1] for v in vertices) / 3
    side = math.dist(vertices[0], vertices[1])
    r_in = side / (2 * math.sqrt(3))
    k = (r_in - d) / r_in
    return [(cx + (x - cx) * k, cy + (y - cy) * k) for x, y in vertices]


def triangle_outline(point_up: bool = True) -> list[Point]:
    """Vertices (clockwise on screen) of the sharp outline of a warning (or give-way) triangle."""
    pts = [(0.5, TRI_APEX), (0.5 + TRI_HALF_BASE, TRI_BASE), (0.5 - TRI_HALF_BASE, TRI_BASE)]
    if point_up:
        return pts
    return [(x, 1 - y) for x, y in reversed(pts)]


def warning_triangle(p: Painter, point_up: bool = True) -> None:
    """Red-bordered white triangle: point up for warnings, point down for give way."""
    sharp = triangle_outline(point_up)
    inner = inset_triangle(sharp, TRI_BORDER)
    direction = "pointing up" if point_up else "pointing down"
    with p.element("triangle", "red", f"a red triangular border {direction}"):
        p.polygon(rounded_polygon(inset_triangle(sharp, TRI_CORNER), TRI_CORNER), "red")
        p.polygon(inner, "white", erase=True)
    with p.element("face", "white", "a white triangular face"):
        p.polygon(inner, "white")


def red_ring(p: Painter, face: str = "white") -> None:
    """The red ring of prohibitory signs around a face of the given colour."""
    with p.element("ring", "red", "a red circular border"):
        p.circle(*C, R, "red")
        p.circle(*C, R - RING, face, erase=True)
    with p.element("face", face, f"a {face} circular face"):
        p.circle(*C, R - RING, face)


def blue_disc(p: Painter) -> None:
    """Mandatory signs: a blue disc with a thin white edge."""
    with p.element("disc", "blue", "a blue circular sign"):
        p.circle(*C, R, "blue")
        p.circle(*C, R - 0.006, "white", erase=True)
        p.circle(*C, R - 0.021, "blue")


def white_disc(p: Painter, outline: str = "black") -> None:
    with p.element("disc", "white", f"a white circular sign with a thin {outline} outline"):
        p.circle(*C, R, outline)
        p.circle(*C, R - 0.005, "white")


def blue_rectangle(p: Painter, width: float, height: float = 0.995) -> tuple[float, float, float, float]:
    """A blue informatory panel with a white border; returns its box."""
    x0, y0 = 0.5 - width / 2, 0.5 - height / 2
    x1, y1 = 0.5 + width / 2, 0.5 + height / 2
    shape = "upright rectangular" if height > width * 1.05 else "rectangular"
    with p.element("rectangle", "blue", f"a blue {shape} panel with a white border"):
        p.rounded_rect((x0, y0, x1, y1), 0.03, "blue")
        p.rounded_rect((x0 + 0.006, y0 + 0.006, x1 - 0.006, y1 - 0.006), 0.026, "white")
        p.rounded_rect((x0 + 0.029, y0 + 0.029, x1 - 0.029, y1 - 0.029), 0.012, "blue")
    return x0, y0, x1, y1


def octagon(cx: float, cy: float, r: float) -> list[Point]:
    """A regular octagon with flat top and bottom, `r` = half the distance between opposite flats."""
    circ = r / math.cos(math.pi / 8)
    return [
        (cx + circ * math.cos(math.radians(22.5 + 45 * k)), cy + circ * math.sin(math.radians(22.5 + 45 * k))) for k in range(8)
    ]


def chord_band(cx: float, cy: float, r: float, angle_deg: float, width: float, steps: int = 24) -> list[Point]:
    """The part of a disc lying within width/2 of the diameter at `angle_deg` (a bar clipped to the disc)."""
    t = math.radians(angle_deg)
    u, n = (math.cos(t), math.sin(t)), (-math.sin(t), math.cos(t))
    half = math.asin(min(1.0, width / 2 / r))
    pts: list[Point] = []
    for centre in (0.0, math.pi):
        for k in range(steps + 1):
            phi = centre - half + 2 * half * k / steps
            pts.append(
                (cx + r * (math.cos(phi) * u[0] + math.sin(phi) * n[0]), cy + r * (math.cos(phi) * u[1] + math.sin(phi) * n[1]))
            )
    return pts


def diagonal_bar(
    p: Painter, rising: bool, colour: str = "red", width: float = 0.1, r: float = R - RING + 0.01, angle: float = 45
) -> None:
    """The diagonal bar of a prohibition, from edge to edge of the inner face, `angle` degrees from horizontal."""
    slope = "rising from lower left to upper right" if rising else "falling from upper left to lower right"
    with p.element("bar", colour, f"a {colour} diagonal bar {slope}"):
        p.polygon(chord_band(*C, r, -angle if rising else angle, width), colour)
