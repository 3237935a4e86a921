"""Official artwork (or any images named by TSRGD code) as the base of variants instead of renders.

A folder holds one file per code, `<code>.png` or `<code>.svg`. Each is composited on white and
scaled to fit the square canvas, centred, so occlusion and the manifest work exactly as for renders.
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from dualjudge.errors import DualjudgeError

SUFFIXES = (".png", ".svg")


def find_artwork(folder: Path, code: str) -> Path:
    """The file for `code` in `folder`; the path must stay inside the folder."""
    try:
        root = folder.resolve()
        if not root.is_dir():
            raise DualjudgeError(f"{folder}: artwork folder not found")
        for suffix in SUFFIXES:
            candidate = (root / f"{code}{suffix}").resolve()
            if candidate.parent != root:
                raise DualjudgeError(f"{root / (code + suffix)}: path escapes the artwork folder {root}")
            if candidate.is_file():
                return candidate
    except (OSError, RuntimeError) as e:  # a symbolic-link loop, an unreadable folder
        raise DualjudgeError(f"{folder}: cannot read artwork for sign {code} ({e})") from None
    raise DualjudgeError(f"{root / (code + '.png')}: no artwork for sign {code} (expected {code}.png or {code}.svg)")


def _rasterise_svg(path: Path, size: int) -> Image.Image:
    try:
        import cairosvg
    except (ImportError, OSError) as e:
        raise DualjudgeError(f"{path}: SVG artwork needs cairosvg and the cairo library ({e})") from None
    try:
        png = cairosvg.svg2png(url=str(path), output_width=size)
    except Exception as e:  # cairosvg raises a variety of parser errors
        raise DualjudgeError(f"{path}: unreadable SVG ({type(e).__name__}: {e})") from None
    img = Image.open(io.BytesIO(png))
    if img.height > size:  # portrait artwork: render again to fit the height
        png = cairosvg.svg2png(url=str(path), output_height=size)
        img = Image.open(io.BytesIO(png))
    return img


def load_artwork(path: Path, size: int) -> Image.Image:
    """Load one artwork file, composite on white, fit in a size x size square (centred)."""
    if path.suffix.lower() == ".svg":
        img = _rasterise_svg(path, size)
    else:
        try:
            with Image.open(path) as opened:
                opened.load()
                img = opened.copy()
        except (UnidentifiedImageError, OSError) as e:
            raise DualjudgeError(f"{path}: unreadable image ({e})") from None
        except Image.DecompressionBombError as e:
            raise DualjudgeError(f"{path}: refused, the image is implausibly large ({e})") from None
    return fit_square(img, size)


def fit_square(image: Image.Image, size: int) -> Image.Image:
    """Composite on white and scale to fit a size x size square, centred on white padding."""
    rgba = image.convert("RGBA")
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    white.alpha_composite(rgba)
    rgb = white.convert("RGB")
    scale = size / max(rgb.size)
    w, h = max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale))
    rgb = rgb.resize((w, h), Image.Resampling.LANCZOS)
    canvas = Image.new("RGB", (size, size), (255, 255, 255))
    canvas.paste(rgb, ((size - w) // 2, (size - h) // 2))
    return canvas
