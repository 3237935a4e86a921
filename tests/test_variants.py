import os
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from dualjudge.errors import DualjudgeError
from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.variants import build_variants, plan_variants
from dualjudge.variants.manifest import COLUMNS, load_manifest


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def full_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    frame = build_variants(out, size=96, seed=7)
    return out, frame


def test_full_testbed_has_390_variants(full_build):
    out, frame = full_build
    assert len(frame) == 390 == len(plan_variants(default_catalogue()))
    assert tuple(frame.columns) == COLUMNS
    assert frame["variant_id"].is_unique
    controls = frame[frame["mode"] == "none"]
    assert len(controls) == 30 and set(controls["visibility"]) == {1.0}
    assert controls["box_x0"].isna().all()
    occluded = frame[frame["mode"] != "none"]
    assert set(occluded["mode"]) == {"random_block", "bottom_up"}
    assert occluded["box_x0"].notna().all()
    assert sorted(set(frame["visibility"])) == [0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 1.0]
    assert len(list((out / "images").glob("*.png"))) == 390


def test_manifest_matches_images(full_build):
    out, frame = full_build
    import hashlib

    for row in frame.sample(25, random_state=0).itertuples():
        data = (out / row.image_path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row.image_sha256
        with Image.open(out / row.image_path) as img:
            assert img.size == (96, 96)
    pq = load_manifest(out)
    csv = pd.read_csv(out / "variants.csv", dtype={"sign_code": str})
    assert list(pq["variant_id"]) == list(csv["variant_id"]) == list(frame["variant_id"])
    assert list(pq["scene_text"]) == list(csv["scene_text"])


def test_two_builds_are_byte_identical(full_build, tmp_path):
    out, _ = full_build
    again = tmp_path / "again"
    build_variants(again, size=96, seed=7)
    assert _tree(again) == _tree(out)


def test_subset_build_gives_the_same_images_as_the_full_build(full_build, tmp_path):
    out, frame = full_build
    sub = build_variants(
        tmp_path / "sub", size=96, seed=7, codes=["670V30", "504.1"], visibilities=[0.5, 0.1], modes=["random_block"]
    )
    assert len(sub) == 4
    full = frame.set_index("variant_id")
    for row in sub.itertuples():
        assert row.image_sha256 == full.loc[row.variant_id, "image_sha256"]
        assert row.scene_text == full.loc[row.variant_id, "scene_text"]


def test_seed_changes_random_blocks_only(full_build, tmp_path):
    _, frame = full_build
    other = build_variants(tmp_path / "o", size=96, seed=8, codes=["616"]).set_index("variant_id")
    mine = frame.set_index("variant_id")
    assert other.loc["616_v0.5_bottom_up", "image_sha256"] == mine.loc["616_v0.5_bottom_up", "image_sha256"]
    assert other.loc["616_v0.5_random_block", "image_sha256"] != mine.loc["616_v0.5_random_block", "image_sha256"]


def test_unknown_code_and_bad_levels_are_user_errors(tmp_path):
    with pytest.raises(DualjudgeError, match="unknown sign code '999'"):
        build_variants(tmp_path / "x", codes=["999"])
    with pytest.raises(DualjudgeError, match="visibility 1.5"):
        build_variants(tmp_path / "x", visibilities=[1.5])
    with pytest.raises(DualjudgeError, match="unknown occlusion mode"):
        build_variants(tmp_path / "x", modes=["sideways"])
    assert not (tmp_path / "x" / "variants.csv").exists()


def test_import_official_artwork(shared_signs, tmp_path):
    frame = build_variants(tmp_path / "o", size=128, codes=["616", "652"], visibilities=[1.0, 0.5], images_dir=shared_signs / "png")
    assert len(frame) == 6
    with Image.open(tmp_path / "o" / frame.iloc[0]["image_path"]) as img:
        assert img.size == (128, 128)
    svg = build_variants(tmp_path / "s", size=128, codes=["616"], visibilities=[1.0], images_dir=shared_signs / "svg")
    assert len(svg) == 1


def _artwork_dir(tmp_path: Path) -> Path:
    d = tmp_path / "art"
    d.mkdir()
    for code in ("616", "617"):
        Image.new("RGB", (40, 30), (200, 0, 0)).save(d / f"{code}.png")
    return d


def test_import_uses_the_files_and_keeps_occlusion(tmp_path):
    art = _artwork_dir(tmp_path)
    frame = build_variants(
        tmp_path / "o", size=64, codes=["616", "617"], visibilities=[1.0, 0.5], modes=["bottom_up"], images_dir=art
    )
    with Image.open(tmp_path / "o" / "images" / "616_v0.5_bottom_up.png") as img:
        assert img.getpixel((32, 63)) == (128, 128, 128)
        assert img.getpixel((32, 20)) == (200, 0, 0)
    assert len(frame) == 4


@pytest.mark.parametrize("problem", ["missing", "unreadable", "escape"])
def test_import_errors_name_the_file_and_leave_nothing(tmp_path, problem):
    art = _artwork_dir(tmp_path)
    if problem == "missing":
        (art / "617.png").unlink()
        expected = "617.png"
    elif problem == "unreadable":
        (art / "617.png").write_bytes(b"not an image")
        expected = "617.png: unreadable image"
    else:
        outside = tmp_path / "secret.png"
        Image.new("RGB", (8, 8)).save(outside)
        (art / "617.png").unlink()
        os.symlink(outside, art / "617.png")
        expected = "escapes the artwork folder"
    out = tmp_path / "out"
    with pytest.raises(DualjudgeError, match=expected):
        build_variants(out, size=64, codes=["616", "617"], visibilities=[1.0], images_dir=art)
    leftovers = [p for p in out.rglob("*")] if out.exists() else []
    assert leftovers == []


def test_failed_rebuild_keeps_the_previous_testbed(tmp_path):
    art = _artwork_dir(tmp_path)
    out = tmp_path / "out"
    build_variants(out, size=64, codes=["616"], visibilities=[1.0])
    before = _tree(out)
    (art / "616.png").write_bytes(b"garbage")
    with pytest.raises(DualjudgeError):
        build_variants(out, size=64, codes=["616"], visibilities=[1.0], images_dir=art)
    assert _tree(out) == before
