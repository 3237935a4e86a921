"""Task folders a test writes: ten drawn images (shapes with a number) and a text task of ten items."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

SHAPES = ("circle", "square", "triangle")
COLOURS = {"red": (200, 30, 30), "blue": (30, 60, 200)}
LABELS = """
[[label]]
id = "circle"
definition = "a round shape"

[[label]]
id = "square"
definition = "a shape with four equal sides"

[[label]]
id = "triangle"
definition = "a shape with three sides"
"""


def draw(shape: str, colour: str, number: int, size: int = 96) -> Image.Image:
    im = Image.new("RGB", (size + 32, size), (250, 250, 240))  # not square: the run letterboxes it
    d = ImageDraw.Draw(im)
    box = (16, 8, size + 16, size - 8)
    fill = COLOURS[colour]
    if shape == "circle":
        d.ellipse(box, fill=fill)
    elif shape == "square":
        d.rectangle(box, fill=fill)
    else:
        d.polygon([(16, size - 8), (size + 16, size - 8), (size // 2 + 16, 8)], fill=fill)
    d.text((size // 2 + 10, size // 2 - 6), str(number), fill=(255, 255, 255))
    return im


def image_task(folder: Path, n: int = 10, *, items_format: str = "jsonl", groups: bool = True) -> Path:
    """A task folder of n drawn shapes: references, labels, groups (the colour; without `groups` each item is
    its own cluster) and two metadata columns."""
    (folder / "img").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        shape, colour = SHAPES[i % 3], ("red", "blue")[i % 2]
        draw(shape, colour, i).save(folder / "img" / f"s{i}.png")
        rows.append(
            {
                "id": f"s{i}",
                "image": f"img/s{i}.png",
                "reference": f"A {colour} {shape} with the number {i} written on it in white.",
                "caption": f"{colour} {shape} {i}",
                "label": shape,
                "group": colour,
                "difficulty": ("easy", "hard")[i % 2],
                "number": i,
            }
        )
        if not groups:
            del rows[-1]["group"]
    (folder / "labels.toml").write_text(LABELS)
    (folder / "task.toml").write_text(
        'name = "shapes"\nmodality = "image"\nitems = "items.' + items_format + '"\n'
        'domain = "simple drawn shapes"\nquestion = "What shape is this, what colour, and which number does it show?"\n'
        'noun = "picture"\nlabel = "SHAPE"\nlabels = "labels.toml"\n'
    )
    write_items(folder / f"items.{items_format}", rows)
    return folder


def text_task(folder: Path, n: int = 10) -> Path:
    """A text task without labels: short arithmetic word problems, grouped by operation."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        a, b = 3 + i, 2 + (i % 4)
        op = ("plus", "times")[i % 2]
        value = a + b if op == "plus" else a * b
        rows.append(
            {
                "id": f"q{i}",
                "text": f"A box holds {a} apples; " + (f"add {b} more apples." if op == "plus" else f"take {b} such boxes."),
                "reference": f"There are {value} apples ({a} {op} {b}).",
                "group": op,
                "source": "made up",
            }
        )
    (folder / "task.toml").write_text(
        'name = "apples"\nmodality = "text"\nitems = "items.jsonl"\n'
        'domain = "arithmetic word problems"\nquestion = "How many apples are there in all?"\n'
    )
    write_items(folder / "items.jsonl", rows)
    return folder


def write_items(path: Path, rows: list[dict]) -> None:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".csv":
        import pandas as pd

        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path, index=False)
