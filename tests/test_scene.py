import re

import pytest

from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.render import cached_render
from dualjudge.testbed.scene import scene_text
from dualjudge.testbed.variants import plan_variants
from dualjudge.variants.occlusion import Box, occluder_box, variant_seed

CAT = default_catalogue()
STOP = {
    "a",
    "an",
    "the",
    "of",
    "to",
    "on",
    "in",
    "for",
    "from",
    "and",
    "or",
    "no",
    "all",
    "with",
    "by",
    "at",
    "be",
    "is",
    "over",
    "ahead",
}
GEOMETRY = {"left", "right", "up", "down", "top", "bottom"}
# words that state a rule or a sign's meaning; none may appear unless printed on the sign
RULE_WORDS = {
    "speed",
    "limit",
    "mph",
    "maximum",
    "minimum",
    "prohibited",
    "entry",
    "overtaking",
    "roundabout",
    "junction",
    "crossroads",
    "bend",
    "narrows",
    "priority",
    "give",
    "way",
    "clearway",
    "waiting",
    "stopping",
    "danger",
    "hazard",
    "weight",
    "height",
    "tonnes",
    "national",
    "vehicles",
    "traffic",
    "turn",
    "turns",
    "u",
    "t",
    "road",
    "oncoming",
    "mandatory",
    "keep",
    "warning",
    "regulatory",
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+|[0-9]+", text.lower()))


def answer_words(sign) -> set[str]:
    printed = set()
    for el in cached_render(sign.code, 128).elements:
        if el.text:
            printed |= _words(el.text)
    words = _words(sign.caption) | _words(sign.category.replace("_", " ")) | RULE_WORDS
    return words - STOP - GEOMETRY - printed


@pytest.mark.parametrize("spec", plan_variants(CAT), ids=lambda s: s.variant_id)
def test_scene_text_never_leaks_the_answer(spec):
    r = cached_render(spec.sign.code, 128)
    box = occluder_box(128, spec.visibility, spec.mode, spec.seed)
    text = scene_text(r.elements, box, 128, spec.mode)
    leaked = _words(text) & answer_words(spec.sign)
    assert not leaked, (spec.variant_id, leaked, text)
    assert spec.sign.caption.lower() not in text.lower()
    assert spec.sign.category not in text


def test_control_describes_every_element_in_full():
    r = cached_render("670V30", 256)
    text = scene_text(r.elements, None, 256, "none")
    assert "Nothing covers the sign" in text
    assert 'large black digits reading "30"' in text
    assert "a red circular border" in text and "part of" not in text


def test_occluder_hides_what_it_covers():
    r = cached_render("670V30", 256)
    digits = [el for el in r.elements if el.text][0]
    x0, y0, x1, y1 = digits.bbox
    covered = scene_text(r.elements, Box(x0 - 4, y0 - 4, x1 + 4, y1 + 4), 256, "random_block")
    assert "30" not in covered.replace("30%", "")
    assert "lettering" not in covered and "digits" not in covered
    half = Box((x0 + x1) // 2, 0, 256, 256)  # hides the right digit only
    text = scene_text(r.elements, half, 256, "random_block")
    assert '"3_"' in text and "hidden" in text


def test_top_sliver_at_v01_bottom_up_says_little():
    for code in ("670V30", "601.1", "504.1", "652"):
        r = cached_render(code, 512)
        box = occluder_box(512, 0.1, "bottom_up", 0)
        text = scene_text(r.elements, box, 512, "bottom_up")
        assert "bottom 90%" in text and "top 10%" in text
        visible = text.split("Visible:")[-1]
        items = [i for i in visible.strip(" .").split(";") if i.strip()]
        assert 1 <= len(items) <= 2, text
        assert all("small part" in i and "top edge" in i for i in items), text
        assert '"' not in visible  # no printed text can be read


def test_random_block_position_is_described():
    r = cached_render("616", 512)
    text = scene_text(r.elements, Box(0, 0, 200, 200), 512, "random_block")
    assert "from 0% to 39% across and 0% to 39% down (the upper left area)" in text


def test_scene_text_is_deterministic():
    spec = plan_variants(CAT, ["622.1A"], [0.5], ["random_block"], seed=4)[0]
    r = cached_render("622.1A", 512)
    box = occluder_box(512, 0.5, "random_block", variant_seed(4, "622.1A", 0.5, "random_block"))
    assert box == occluder_box(512, 0.5, "random_block", spec.seed)
    assert scene_text(r.elements, box, 512, "random_block") == scene_text(r.elements, box, 512, "random_block")
