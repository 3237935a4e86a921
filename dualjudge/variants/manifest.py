"""A run's variants: each item's picture occluded at the study's visibilities and modes (the occlusion ladder is a
property of images, whatever they show), or the item itself where it has no picture; written as PNGs plus a
manifest (variants.csv and variants.parquet) that every later step reads.

Writing is all-or-nothing: every image is produced in a temporary folder next to the output and moved into
place only when all succeeded, and the manifest is written last, so an error (a missing artwork file, an
interrupted build) never leaves a half-written set behind. What a variant's picture shows is the task's
business (tasks/): a task hands in the base pictures and, where it can, what stays readable of them.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd
from PIL.Image import Image as PILImage

from dualjudge.errors import DualjudgeError
from dualjudge.files import check_output_dir, replacing
from dualjudge.variants.occlusion import OCCLUDER_GREY, Box, occlude, occluder_box

STAGING_PREFIX = ".dualjudge-build-"
MANIFEST_CSV = "variants.csv"
MANIFEST_PARQUET = "variants.parquet"
IMAGES = "images"
COLUMNS = (
    "variant_id",
    "sign_code",
    "group",
    "category",
    "caption",
    "visibility",
    "mode",
    "seed",
    "box_x0",
    "box_y0",
    "box_x1",
    "box_y1",
    "image_path",
    "image_sha256",
    "scene_text",
)


@dataclass(frozen=True)
class _Occluded:
    """A variant's item and its occlusion: what its source and its manifest row both hold."""

    variant_id: str
    sign_code: str  # the task item's id
    group: str
    category: str
    caption: str
    visibility: float
    mode: str
    seed: int


@dataclass(frozen=True)
class Source(_Occluded):
    """What one variant is made from: its item, its occlusion, and the key of its base image in `bases`
    (None: an item without an image, a text task's)."""

    base: str | None


@dataclass(frozen=True)
class Variant(_Occluded):
    """A manifest row: the item and occlusion, the occluder's box, the image written and its scene text."""

    box_x0: int | None
    box_y0: int | None
    box_x1: int | None
    box_y1: int | None
    image_path: str
    image_sha256: str
    scene_text: str


def _png_bytes(image: PILImage) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


Base = tuple[PILImage, Any]  # a base image and the painter's element record (None: no scene text)
SceneText = Callable[[Any, "Box | None", int, str], str]  # what stays readable of a base under its occluder


def write_variants(
    out: Path,
    sources: Sequence[Source],
    bases: dict[str, Base],
    size: int,
    occluder_colour: tuple[int, int, int] = OCCLUDER_GREY,
    progress: Callable[[int, int], None] | None = None,
    scene: SceneText | None = None,
) -> pd.DataFrame:
    """Occlude each source's base image (size x size) and describe it; write the PNGs and the manifest,
    all or nothing. A source without a base (a text item) gets a row without an image."""
    check_output_dir(out, "--out", (MANIFEST_CSV, MANIFEST_PARQUET), (IMAGES,))
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out))
    try:
        rows = []
        for i, src in enumerate(sources):
            if src.base is None:
                rows.append(_row(src, None, "", "", ""))
                continue
            base, elements = bases[src.base]
            box = occluder_box(size, src.visibility, src.mode, src.seed)
            png = _png_bytes(occlude(base, box, occluder_colour))
            rel = f"{IMAGES}/{src.variant_id}.png"
            (staging / f"{src.variant_id}.png").write_bytes(png)
            text = scene(elements, box, size, src.mode) if scene is not None and elements is not None else ""
            rows.append(_row(src, box, rel, hashlib.sha256(png).hexdigest(), text))
            if progress:
                progress(i + 1, len(sources))
        frame = pd.DataFrame([asdict(r) for r in rows], columns=list(COLUMNS))
        for col in ("box_x0", "box_y0", "box_x1", "box_y1"):
            frame[col] = frame[col].astype("Int64")
        images = out / IMAGES
        images.mkdir(exist_ok=True)
        for src in sources:
            if src.base is not None:
                os.replace(staging / f"{src.variant_id}.png", images / f"{src.variant_id}.png")
        _write_manifest(frame, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return frame


def remove_stale_staging(out: Path) -> None:
    """Remove the staging folders of builds that were killed (their process is gone)."""
    for folder in out.glob(f"{STAGING_PREFIX}*"):
        pid = folder.name.removeprefix(STAGING_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _process_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _row(spec: Source, box: Box | None, rel: str, sha: str, text: str) -> Variant:
    occluded = {f.name: getattr(spec, f.name) for f in fields(_Occluded)}
    return Variant(
        **occluded,
        box_x0=box.x0 if box else None,
        box_y0=box.y0 if box else None,
        box_x1=box.x1 if box else None,
        box_y1=box.y1 if box else None,
        image_path=rel,
        image_sha256=sha,
        scene_text=text,
    )


def _write_manifest(frame: pd.DataFrame, out: Path) -> None:
    """Write both manifest files through temporary names, so readers never see a partial file."""
    with replacing(out / MANIFEST_PARQUET) as tmp:
        frame.to_parquet(tmp, index=False)
    with replacing(out / MANIFEST_CSV) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n")


def load_manifest(directory: Path) -> pd.DataFrame:
    """Read a built testbed's manifest (Parquet preferred, CSV otherwise), checked: every column is
    there and every image it names exists inside the testbed folder (a manifest never makes dualjudge
    read a file outside its folder)."""
    pq, csv = directory / MANIFEST_PARQUET, directory / MANIFEST_CSV
    source = pq if pq.is_file() else csv if csv.is_file() else None
    if source is None:
        raise DualjudgeError(f"{directory}: no {MANIFEST_PARQUET} or {MANIFEST_CSV}; run `dualjudge data build` first")
    try:
        frame = pd.read_parquet(source) if source == pq else pd.read_csv(source, dtype={"sign_code": str})
    except Exception as e:  # pandas and pyarrow raise many types for a damaged file
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise DualjudgeError(
            f"{source}: unreadable testbed manifest ({type(e).__name__}: {first}); rebuild it with `dualjudge data build`"
        ) from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise DualjudgeError(
            f"{source}: not a testbed manifest (missing columns {', '.join(missing)}); rebuild it with `dualjudge data build`"
        )
    root = directory.resolve()
    for rel in frame["image_path"]:
        if rel is None or (isinstance(rel, float) and pd.isna(rel)) or rel == "":
            continue  # a text item: no image
        if not isinstance(rel, str):
            raise DualjudgeError(f"{source}: a row has no image_path; rebuild the testbed")
        path = (directory / rel).resolve()
        if not path.is_relative_to(root):
            raise DualjudgeError(f"{source}: image_path {rel!r} points outside the testbed folder {directory}; refusing to read it")
        if not path.is_file():
            raise DualjudgeError(
                f"{directory / rel}: image named by the testbed manifest is missing; rebuild the "
                f"testbed with `dualjudge data build`"
            )
    return frame


def variant_rows(frame: pd.DataFrame) -> list[Variant]:
    """A testbed manifest's rows as Variant records (an absent occlusion box is None)."""

    def box(v: Any) -> int | None:
        return None if pd.isna(v) else int(v)

    return [
        Variant(
            variant_id=str(r["variant_id"]),
            sign_code=str(r["sign_code"]),
            group=str(r["group"]),
            category=_cell(r["category"]),
            caption=_cell(r["caption"]),
            visibility=float(r["visibility"]),
            mode=str(r["mode"]),
            seed=int(r["seed"]),
            box_x0=box(r["box_x0"]),
            box_y0=box(r["box_y0"]),
            box_x1=box(r["box_x1"]),
            box_y1=box(r["box_y1"]),
            image_path=_cell(r["image_path"]),
            image_sha256=_cell(r["image_sha256"]),
            scene_text=_cell(r["scene_text"]),
        )
        for r in frame.to_dict("records")
    ]


def _cell(value: Any) -> str:
    """A text cell; empty for a missing one (CSV reads an empty text as NaN)."""
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def variants_by_id(folder: Path) -> dict[str, Variant]:
    """A testbed's variants by id, from its manifest (a run's: `RunDir(out).testbed`)."""
    return {v.variant_id: v for v in variant_rows(load_manifest(folder))}
