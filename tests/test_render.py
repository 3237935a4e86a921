import numpy as np
import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.testbed import painter
from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.render import render_sign

CODES = default_catalogue().codes


@pytest.mark.parametrize("code", CODES)
def test_render_records_elements_inside_the_canvas(code):
    r = render_sign(code, 256)
    assert r.image.size == (256, 256) and r.image.mode == "RGB"
    assert len(r.elements) >= 2
    for el in r.elements:
        x0, y0, x1, y1 = el.bbox
        assert 0 <= x0 < x1 <= 256 and 0 <= y0 < y1 <= 256, (code, el)
        assert el.colour in painter.COLOURS
        assert el.mask.any()
        assert el.describe() and "{text}" not in el.describe()
        if el.text:
            assert len(el.char_boxes) == len(el.text.replace(" ", ""))


def test_render_is_deterministic_and_antialiased():
    a, b = render_sign("670V30", 512), render_sign("670V30", 512)
    assert a.image.tobytes() == b.image.tobytes()
    pixels = np.asarray(a.image).reshape(-1, 3)
    # anti-aliasing leaves intermediate shades between the flat sign colours
    assert len(np.unique(pixels, axis=0)) > 50


def test_text_elements_record_printed_text():
    texts = {el.text for el in render_sign("629.2A", 128).elements if el.text}
    assert texts == {"4.4 m", "14′6″"}
    stop = [el for el in render_sign("601.1", 128).elements if el.kind == "text"]
    assert stop[0].text == "STOP" and stop[0].colour == "white"


def test_element_bbox_matches_drawn_pixels():
    img_el = [el for el in render_sign("616", 512).elements if el.kind == "bar"][0]
    assert img_el.bbox == pytest.approx((47, 208, 465, 305), abs=2)


def test_sizes_scale_geometry():
    small, big = render_sign("606", 128), render_sign("606", 512)
    for a, b in zip(small.elements, big.elements):
        assert np.allclose(np.array(a.bbox) * 4, b.bbox, atol=6)


def test_too_small_or_unknown_is_a_user_error():
    with pytest.raises(DualjudgeError):
        render_sign("670V30", 8)
    with pytest.raises(DualjudgeError, match="no design"):
        render_sign("999", 128)


def test_missing_font_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(painter, "_font_candidates", lambda: [tmp_path / "absent.ttf"])
    painter.font_path.cache_clear()
    painter._font.cache_clear()
    try:
        with pytest.raises(DualjudgeError, match="DejaVu Sans Bold not found"):
            render_sign("601.1", 64)
    finally:
        painter.font_path.cache_clear()
        painter._font.cache_clear()
