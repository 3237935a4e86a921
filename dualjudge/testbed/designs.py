"""The 30 sign designs, one function per TSRGD diagram code, drawn in unit coordinates.

Each design mirrors the layout of the DfT artwork of the same code (the fidelity benchmark in
benchmarks/perf/render_fidelity.py measures how closely). Labels describe what is seen, never
what the sign means, so the text form of a variant cannot give the answer away.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dualjudge.testbed import shapes
from dualjudge.testbed.painter import Painter
from dualjudge.testbed.shapes import RING, C, R, blue_disc, blue_rectangle, diagonal_bar, red_ring, warning_triangle
from dualjudge.testbed.silhouettes import car_front, car_rear, lorry, motorcycle

Design = Callable[[Painter], None]
DESIGNS: dict[str, Design] = {}


def design(code: str) -> Callable[[Design], Design]:
    def register(fn: Design) -> Design:
        DESIGNS[code] = fn
        return fn

    return register


# -- regulatory: stop and give way ---------------------------------------------------------------
@design("601.1")
def stop(p: Painter) -> None:
    with p.element("octagon", "red", "a red octagonal sign with a white edge"):
        p.polygon(shapes.octagon(0.5, 0.5, 0.494), "red")
        p.polygon(shapes.octagon(0.5, 0.5, 0.489), "white")
        p.polygon(shapes.octagon(0.5, 0.5, 0.462), "red")
    with p.element("text", "white", 'white capital letters reading "{text}"', text="STOP"):
        p.text("STOP", (0.09, 0.382, 0.922, 0.626), "white")


@design("602")
def give_way(p: Painter) -> None:
    warning_triangle(p, point_up=False)
    with p.element("text", "black", 'black capital letters reading "{text}"', text="GIVE"):
        p.text("GIVE", (0.227, 0.189, 0.744, 0.345), "black")
    with p.element("text", "black", 'black capital letters reading "{text}"', text="WAY"):
        p.text("WAY", (0.346, 0.406, 0.668, 0.508), "black")


# -- regulatory: prohibitions --------------------------------------------------------------------
@design("616")
def no_entry(p: Painter) -> None:
    with p.element("disc", "red", "a red circular sign with a thin white edge"):
        p.circle(*C, 0.486, "black")
        p.circle(*C, 0.481, "white")
        p.circle(*C, 0.464, "red")
    with p.element("bar", "white", "a white horizontal bar across the middle"):
        p.rect(0.092, 0.406, 0.908, 0.594, "white")


@design("617")
def no_vehicles(p: Painter) -> None:
    red_ring(p)


@design("619")
def no_motor_vehicles(p: Painter) -> None:
    red_ring(p)
    motorcycle(p, 0.52, 0.265, 0.45, "a black motorcycle with a rider, seen from the side")
    car_front(p, 0.502, 0.625, 0.406, "a black car seen from the front")


def _turn_arrow(p: Painter, to_right: bool) -> None:
    s = 1 if to_right else -1
    x = 0.5 - s * 0.12
    with p.element("arrow", "black", f"a black arrow going up and then bending to the {'right' if to_right else 'left'}"):
        p.band([(x, 0.80), (x, 0.34), (0.5 + s * 0.22, 0.34)], 0.1, "black")
        p.arrow_head((0.5 + s * 0.345, 0.34), 0 if to_right else 180, 0.13, 0.2, "black")


@design("612")
def no_right_turn(p: Painter) -> None:
    red_ring(p)
    _turn_arrow(p, to_right=True)
    diagonal_bar(p, rising=True)


@design("613")
def no_left_turn(p: Painter) -> None:
    red_ring(p)
    _turn_arrow(p, to_right=False)
    diagonal_bar(p, rising=False)


@design("614")
def no_u_turn(p: Painter) -> None:
    red_ring(p)
    with p.element("arrow", "black", "a black arrow shaped like an upside-down horseshoe, its head pointing down on the right"):
        cx, top, r, w = 0.4825, 0.21, 0.1925, 0.095
        left, right = cx - r + w / 2, cx + r - w / 2
        p.arc(cx, top + r, r, 180, 360, w, "black")
        p.band([(left, top + r - 0.005), (left, 0.78)], w, "black")
        p.polygon([(left - w / 2, 0.785), (left, 0.735), (left + w / 2, 0.785)], "white", erase=True)
        p.band([(right, top + r - 0.005), (right, 0.72)], w, "black")
        p.polygon([(right - w / 2, 0.72), (right + w / 2, 0.72), (right, 0.77)], "black")
    diagonal_bar(p, rising=False, angle=30)


@design("632")
def no_overtaking(p: Painter) -> None:
    red_ring(p)
    car_rear(p, 0.3135, 0.499, 0.30, "black", "a black car seen from behind, on the left")
    car_rear(p, 0.668, 0.499, 0.262, "red", "a red car seen from behind, on the right")


# -- regulatory: speed ---------------------------------------------------------------------------
def _speed_limit(p: Painter, digits: str) -> None:
    red_ring(p)
    with p.element("text", "black", 'large black digits reading "{text}"', text=digits):
        p.text(digits, (0.184, 0.307, 0.842, 0.691), "black", tracking=0.2)


@design("670V20")
def max_20(p: Painter) -> None:
    _speed_limit(p, "20")


@design("670V30")
def max_30(p: Painter) -> None:
    _speed_limit(p, "30")


@design("671")
def national_limit(p: Painter) -> None:
    shapes.white_disc(p)
    with p.element("bar", "black", "a broad black diagonal band rising from lower left to upper right"):
        p.polygon(shapes.chord_band(*C, R, -45, 0.265), "black")


@design("672")
def minimum_30(p: Painter) -> None:
    blue_disc(p)
    with p.element("text", "white", 'large white digits reading "{text}"', text="30"):
        p.text("30", (0.2, 0.251, 0.899, 0.743), "white", tracking=0.45)


@design("642")
def no_stopping(p: Painter) -> None:
    red_ring(p, face="blue")
    with p.element("cross", "red", "a red diagonal cross (X) over the blue face"):
        for angle in (45, -45):
            p.polygon(shapes.chord_band(*C, R - RING + 0.01, angle, 0.112), "red")


@design("622.1A")
def weight_limit(p: Painter) -> None:
    red_ring(p)
    lorry(p, 0.485, 0.497, 0.653, "a black lorry seen from the side, facing left")
    with p.element("text", "white", 'white characters reading "{text}" on the lorry', text="7.5T"):
        p.text("7.5T", (0.384, 0.372, 0.78, 0.54), "white")


@design("629.2A")
def height_limit(p: Painter) -> None:
    red_ring(p)
    with p.element("text", "black", 'black characters reading "{text}"', text="4.4 m"):
        p.text("4.4 m", (0.214, 0.265, 0.814, 0.452), "black")
    with p.element("text", "black", 'black characters reading "{text}"', text="14′6″"):
        p.text("14′6″", (0.255, 0.555, 0.81, 0.711), "black")
    with p.element("marks", "black", "two small black triangles, one at the top pointing down and one at the bottom pointing up"):
        p.polygon([(0.434, 0.139), (0.574, 0.139), (0.504, 0.219)], "black")
        p.polygon([(0.432, 0.861), (0.576, 0.861), (0.504, 0.779)], "black")


# -- regulatory: mandatory -----------------------------------------------------------------------
@design("606")
def turn_left(p: Painter) -> None:
    blue_disc(p)
    with p.element("arrow", "white", "a white arrow pointing left"):
        p.band([(0.90, 0.5), (0.27, 0.5)], 0.13, "white")
        p.arrow_head((0.076, 0.5), 180, 0.22, 0.40, "white")


@design("610")
def keep_left(p: Painter) -> None:
    blue_disc(p)
    with p.element("arrow", "white", "a white arrow pointing diagonally down and to the left"):
        p.band([(0.80, 0.20), (0.37, 0.63)], 0.13, "white")
        p.polygon([(0.19, 0.81), (0.19, 0.50), (0.50, 0.81)], "white")


def _circling_arrows(
    p: Painter,
    cx: float,
    cy: float,
    r: float,
    width: float,
    colour: str,
    label: str,
    first: float = -70,
    span: float = 80,
    head: tuple[float, float] | None = None,
    tip_deg: float = 18,
) -> None:
    """Three arcs of radius r (mid-line), each with an arrow head at its clockwise end, `tip_deg` further on."""
    length, head_width = head or (width * 1.5, width * 2.2)
    with p.element("arrows", colour, label):
        for k in range(3):
            start = first + 120 * k
            end = start + span
            p.arc(cx, cy, r + width / 2, start, end, width, colour)
            a = math.radians(end)
            tip_angle = a + math.radians(tip_deg)
            tip = (cx + r * math.cos(tip_angle), cy + r * math.sin(tip_angle))
            p.arrow_head(tip, math.degrees(a) + 90 + 8, length, head_width, colour)


@design("611.1")
def mini_roundabout(p: Painter) -> None:
    blue_disc(p)
    _circling_arrows(
        p,
        0.5,
        0.5,
        0.31,
        0.08,
        "white",
        "three white curved arrows chasing each other clockwise in a circle",
        first=-60,
        span=70,
        head=(0.13, 0.22),
        tip_deg=21.6,
    )


@design("615")
def give_way_to_oncoming(p: Painter) -> None:
    red_ring(p)
    with p.element("arrow", "red", "a small red arrow pointing up, on the left"):
        p.band([(0.329, 0.597), (0.329, 0.29)], 0.068, "red")
        p.arrow_head((0.329, 0.185), 270, 0.12, 0.16, "red")
    with p.element("arrow", "black", "a large black arrow pointing down, on the right"):
        p.band([(0.628, 0.238), (0.628, 0.63)], 0.102, "black")
        p.arrow_head((0.628, 0.828), 90, 0.21, 0.297, "black")


# -- information ---------------------------------------------------------------------------------
@design("652")
def one_way(p: Painter) -> None:
    x0, y0, x1, y1 = blue_rectangle(p, 0.67)
    with p.element("arrow", "white", "a white arrow pointing up"):
        p.band([(0.5, 0.92), (0.5, 0.30)], 0.139, "white")
        p.arrow_head((0.5, 0.08), 270, 0.25, 0.36, "white")


@design("811")
def priority_over_oncoming(p: Painter) -> None:
    blue_rectangle(p, 0.879)
    with p.element("arrow", "white", "a large white arrow pointing up, on the left"):
        p.band([(0.338, 0.777), (0.338, 0.28)], 0.13, "white")
        p.arrow_head((0.338, 0.082), 270, 0.22, 0.348, "white")
    with p.element("arrow", "red", "a smaller red arrow pointing down, on the right"):
        p.band([(0.706, 0.432), (0.706, 0.76)], 0.085, "red")
        p.arrow_head((0.706, 0.902), 90, 0.15, 0.23, "red")


# -- warning -------------------------------------------------------------------------------------
def _bezier(a: tuple[float, float], c: tuple[float, float], b: tuple[float, float], n: int = 16) -> list[tuple[float, float]]:
    """Points along the quadratic Bezier curve from a to b with control point c."""
    return [
        ((1 - t) ** 2 * a[0] + 2 * (1 - t) * t * c[0] + t * t * b[0], (1 - t) ** 2 * a[1] + 2 * (1 - t) * t * c[1] + t * t * b[1])
        for t in (k / n for k in range(n + 1))
    ]


def _pointed_bar(p: Painter, x: float, top: float, bottom: float, w: float) -> None:
    """A vertical bar whose top end is a pointed arrow tip."""
    p.polygon([(x, top), (x + w / 2, top + w * 0.4), (x + w / 2, bottom), (x - w / 2, bottom), (x - w / 2, top + w * 0.4)], "black")


@design("504.1")
def crossroads(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "a black upright bar with a pointed top, crossed by a shorter horizontal bar"):
        _pointed_bar(p, 0.5, 0.371, 0.818, 0.145)
        p.rect(0.31, 0.590, 0.69, 0.660, "black")


@design("505.1")
def t_junction(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "a black horizontal bar with a pointed left end, resting on a short upright stem"):
        p.polygon(
            [
                (0.375, 0.515),
                (0.665, 0.515),
                (0.665, 0.585),
                (0.59, 0.585),
                (0.59, 0.815),
                (0.445, 0.815),
                (0.445, 0.655),
                (0.375, 0.655),
                (0.30, 0.585),
            ],
            "black",
        )


@design("506.1")
def side_road(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "a black upright bar with a pointed top and a short stub to its right"):
        _pointed_bar(p, 0.4815, 0.371, 0.818, 0.145)
        p.rect(0.5, 0.60, 0.663, 0.70, "black")


@design("512")
def bend_right(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "a thick black line rising from the bottom and curving to the right"):
        p.band([(0.35, 0.815), (0.35, 0.60)] + _bezier((0.35, 0.60), (0.35, 0.50), (0.46, 0.465)) + [(0.55, 0.44)], 0.09, "black")
        p.polygon([(0.49, 0.43), (0.56, 0.41), (0.615, 0.44), (0.585, 0.50), (0.53, 0.50)], "black")


@design("513")
def double_bend(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "a thick black zigzag line: up from the bottom right, diagonally down to the left, then up"):
        p.band(
            [(0.4025, 0.455), (0.4025, 0.66)]
            + _bezier((0.4025, 0.66), (0.4025, 0.735), (0.47, 0.69))
            + [(0.60, 0.575)]
            + _bezier((0.60, 0.575), (0.6475, 0.535), (0.6475, 0.60))
            + [(0.6475, 0.815)],
            0.085,
            "black",
        )
        p.polygon([(0.36, 0.465), (0.39, 0.43), (0.415, 0.43), (0.445, 0.465)], "black")


@design("516")
def road_narrows(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "two thick black upright lines that come closer together near the top"):
        for s in (-1, 1):
            p.band(
                [(0.5 + s * 0.112, 0.83), (0.5 + s * 0.112, 0.64), (0.5 + s * 0.055, 0.53), (0.5 + s * 0.055, 0.37)], 0.065, "black"
            )


@design("510")
def roundabout_ahead(p: Painter) -> None:
    warning_triangle(p)
    _circling_arrows(p, 0.5, 0.627, 0.157, 0.076, "black", "three black curved arrows chasing each other clockwise in a circle")


@design("562")
def other_danger(p: Painter) -> None:
    warning_triangle(p)
    with p.element("symbol", "black", "a black exclamation mark"):
        p.polygon([(0.4475, 0.328), (0.5525, 0.328), (0.53, 0.674), (0.47, 0.674)], "black")
        p.circle(0.5, 0.76, 0.057, "black")
