import numpy as np
import pytest
from PIL import Image

from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.variants.occlusion import (
    AREA_TOLERANCE,
    MODES,
    OCCLUDER_GREY,
    VISIBILITIES,
    occlude,
    occluder_box,
    variant_seed,
)

CODES = default_catalogue().codes
LEVELS = [v for v in VISIBILITIES if v < 1.0]


@pytest.mark.parametrize(
    "size,mode", [(512, "random_block"), (512, "bottom_up"), (224, "random_block"), (224, "bottom_up"), (96, "random_block")]
)
@pytest.mark.parametrize("v", LEVELS)
def test_occluded_area_is_exact_for_every_sign(size, mode, v):
    """Within 0.5 % of the target area (bottom-up works in whole rows, so it needs >= ~200 px)."""
    for code in CODES:
        box = occluder_box(size, v, mode, variant_seed(0, code, v, mode))
        assert 0 <= box.x0 < box.x1 <= size and 0 <= box.y0 < box.y1 <= size
        target = (1 - v) * size * size
        assert abs(box.area - target) <= AREA_TOLERANCE * target, (code, box)


@pytest.mark.parametrize("v", LEVELS)
def test_occluder_pixels_match_the_box(v):
    base = Image.new("RGB", (128, 128), (255, 255, 255))
    for mode in MODES:
        box = occluder_box(128, v, mode, variant_seed(3, "616", v, mode))
        grey = np.all(np.asarray(occlude(base, box)) == OCCLUDER_GREY, axis=2)
        assert grey.sum() == box.area
        ys, xs = np.nonzero(grey)
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (box.x0, box.y0, box.x1, box.y1)


def test_bottom_up_rises_from_the_lower_edge_full_width():
    for v in LEVELS:
        box = occluder_box(512, v, "bottom_up", 1)
        assert (box.x0, box.x1, box.y1) == (0, 512, 512)
        assert box.y1 - box.y0 == round((1 - v) * 512)


def test_control_has_no_occluder():
    assert occluder_box(512, 1.0, "none", 5) is None
    img = Image.new("RGB", (16, 16), (1, 2, 3))
    assert occlude(img, None).tobytes() == img.tobytes()


def test_seed_depends_only_on_its_four_inputs():
    a = variant_seed(0, "616", 0.5, "random_block")
    assert a == variant_seed(0, "616", 0.5, "random_block")
    others = {
        variant_seed(1, "616", 0.5, "random_block"),
        variant_seed(0, "617", 0.5, "random_block"),
        variant_seed(0, "616", 0.3, "random_block"),
        variant_seed(0, "616", 0.5, "bottom_up"),
    }
    assert a not in others and len(others) == 4


def test_random_blocks_vary_in_position_and_aspect():
    boxes = [occluder_box(512, 0.7, "random_block", variant_seed(0, c, 0.7, "random_block")) for c in CODES]
    assert len({(b.x0, b.y0) for b in boxes}) > 20
    aspects = [(b.x1 - b.x0) / (b.y1 - b.y0) for b in boxes]
    assert min(aspects) < 0.7 and max(aspects) > 1.4
    assert all(0.25 <= a <= 4.0 for a in aspects)


def test_custom_occluder_colour():
    img = occlude(Image.new("RGB", (64, 64), "white"), occluder_box(64, 0.5, "bottom_up", 0), (10, 20, 30))
    assert img.getpixel((0, 63)) == (10, 20, 30)
