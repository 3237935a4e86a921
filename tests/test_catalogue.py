import re
import tomllib
from collections import Counter

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.paths import data_dir
from dualjudge.testbed.catalogue import load_catalogue
from dualjudge.testbed.designs import DESIGNS


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def test_exactly_25_snake_case_categories(cat):
    assert len(cat.categories) == 25
    assert len(set(cat.category_ids)) == 25
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", c) for c in cat.category_ids)
    assert {c.group for c in cat.categories} == {"regulatory", "warning", "information"}


def test_near_miss_pairs_present(cat):
    ids = set(cat.category_ids)
    for pair in [
        ("no_stopping", "no_waiting"),
        ("maximum_speed", "minimum_speed"),
        ("stop", "give_way"),
        ("give_way_to_oncoming", "priority_over_oncoming"),
        ("mini_roundabout", "roundabout_ahead"),
        ("no_vehicles", "no_motor_vehicles"),
    ]:
        assert set(pair) <= ids


def test_thirty_signs_with_required_mix(cat):
    assert len(cat.signs) == 30
    assert len(set(cat.codes)) == 30
    groups = Counter(s.group for s in cat.signs)
    assert groups["regulatory"] >= 12
    assert groups["warning"] >= 8
    assert len({s.category for s in cat.signs}) >= 15
    assert all(s.category in cat.category_ids for s in cat.signs)


def test_descriptions_are_one_to_three_specific_sentences(cat):
    for s in cat.signs:
        sentences = [x for x in re.split(r"(?<=[.!?])\s+", s.description.strip()) if x]
        assert 1 <= len(sentences) <= 3, s.code
        assert s.caption.lower() not in {"sign", "road sign"}
    # speed and size limits state their figure
    for code, figure in [("670V20", "20"), ("670V30", "30"), ("672", "30"), ("622.1A", "7.5"), ("629.2A", "4.4")]:
        assert figure in cat.sign(code).description


def test_every_sign_has_a_design(cat):
    assert set(cat.codes) == set(DESIGNS)


def test_codes_pair_with_official_artwork(cat, shared_signs):
    official = {p.stem for p in (shared_signs / "png").glob("*.png")}
    assert len(official) == 64
    assert sum(code in official for code in cat.codes) >= 20


def test_bad_catalogue_is_a_one_line_error(tmp_path):
    src = data_dir()
    (tmp_path / "categories.toml").write_text((src / "categories.toml").read_text())
    text = (src / "signs.toml").read_text().replace('category = "stop"', 'category = "halt"', 1)
    (tmp_path / "signs.toml").write_text(text)
    with pytest.raises(DualjudgeError, match="unknown category 'halt'"):
        load_catalogue(tmp_path)
    (tmp_path / "signs.toml").write_text("[[sign]]\ncode = 1\n")
    with pytest.raises(DualjudgeError, match="invalid at"):
        load_catalogue(tmp_path)
    (tmp_path / "signs.toml").write_text("[[sign]\n")
    with pytest.raises(DualjudgeError, match="invalid TOML"):
        load_catalogue(tmp_path)


def test_toml_files_parse_without_the_loader():
    raw = tomllib.loads((data_dir() / "signs.toml").read_text())
    assert len(raw["sign"]) == 30
