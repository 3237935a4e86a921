"""A contact sheet of built variants: one row per sign, one column per (visibility, mode)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from PIL import Image, ImageDraw

from dualjudge.errors import DualjudgeError
from dualjudge.files import check_output_file, replacing
from dualjudge.testbed.painter import font_path
from dualjudge.variants.manifest import load_manifest
from dualjudge.variants.occlusion import visibility_label

THUMB = 96
LABEL_W = 90
HEADER_H = 34


def contact_sheet(testbed_dir: Path, out_file: Path) -> Path:
    check_output_file(out_file)
    frame = load_manifest(testbed_dir)
    columns = list(dict.fromkeys(zip(frame["visibility"], frame["mode"])))
    columns.sort(key=lambda vm: (-vm[0], vm[1] != "none", vm[1]))
    codes = list(dict.fromkeys(frame["sign_code"]))
    sheet = Image.new("RGB", (LABEL_W + THUMB * len(columns), HEADER_H + (THUMB + 4) * len(codes)), "white")
    draw = ImageDraw.Draw(sheet)
    from PIL import ImageFont

    font = ImageFont.truetype(str(font_path()), 11)
    for j, (v, mode) in enumerate(columns):
        short = {"none": "control", "random_block": "block", "bottom_up": "bottom-up"}.get(mode, mode)
        draw.text((LABEL_W + j * THUMB + 4, 4), f"v={visibility_label(v)}", fill="black", font=font)
        draw.text((LABEL_W + j * THUMB + 4, 18), short, fill="black", font=font)
    index = {(r.sign_code, r.visibility, r.mode): r.image_path for r in frame.itertuples()}
    for i, code in enumerate(codes):
        y = HEADER_H + i * (THUMB + 4)
        draw.text((4, y + THUMB // 2 - 6), str(code), fill="black", font=font)
        for j, (v, mode) in enumerate(columns):
            rel = index.get((code, v, mode))
            if rel is None or pd.isna(rel):
                continue
            try:
                with Image.open(testbed_dir / rel) as img:
                    thumb = img.convert("RGB").resize((THUMB - 4, THUMB - 4), Image.Resampling.LANCZOS)
            except (OSError, Image.DecompressionBombError) as e:
                raise DualjudgeError(f"{testbed_dir / rel}: unreadable variant image ({e})") from None
            sheet.paste(thumb, (LABEL_W + j * THUMB + 2, y + 2))
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out_file) as tmp:
        sheet.save(tmp, format="PNG")
    return out_file
