"""A task folder: `task.toml` and an items file (JSON Lines, CSV or Parquet), read and checked before
anything is written or loaded. Every problem is one line naming the file and the item.

task.toml: name, modality ("image" | "text"), items (the file), domain, question; optional label (the
final line's name) with labels (a TOML file of [[label]] id/definition), prompts (a folder of prompt
files that override the defaults), rubric (the rubric variant's clauses), noun (what the report calls
an item). An item: id, image (a path in the folder, or bytes in Parquet) or text, reference; optional
caption, label, group (the bootstrap's cluster; default the item); any other column is metadata.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dualjudge.errors import DualjudgeError
from dualjudge.paths import project_root
from dualjudge.protocol.kinds import declared
from dualjudge.protocol.prompts import PromptSet, parse_prompt, prompts_dir
from dualjudge.protocol.rubric import item_rubric, load_rubric
from dualjudge.protocol.vocabulary import LABEL_ID, LINE_NAME, VALUE_S, matches_whole
from dualjudge.tasks.hub import HubSource, is_hub, read_hub
from dualjudge.tasks.prompt_check import check_prompts
from dualjudge.tasks.task import Label, MetaValue, Task, TaskItem
from dualjudge.tomlfile import first_error, read_toml

TASK_FILE = "task.toml"
MAX_ITEMS_BYTES = 256 * 2**20  # an items file beyond this is refused (images belong in files beside it)
MAX_ITEMS = 100_000
ITEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # it names files: letters, digits, . _ -
KNOWN = ("id", "image", "text", "reference", "caption", "label", "group", "rubric", "incorrect")
META_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")


class TaskFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,47}$")
    modality: Literal["image", "text"]
    items: str = Field(min_length=1)
    domain: str = Field(min_length=3, max_length=200)
    question: str = Field(min_length=3, max_length=1000)
    noun: str = Field(default="item", pattern=r"^[a-z][a-z -]{0,23}$")
    label: str | None = Field(default=None, pattern=LINE_NAME.pattern)
    labels: str | None = None
    answer: str | None = Field(default=None, min_length=1, max_length=200)  # the final line's value: a regular expression
    # items = "hf://NAME": a Hugging Face dataset's subset (configuration), split and revision, and which of its
    # columns are the item's fields (id, text, image, reference, caption, label, group)
    subset: str | None = None
    split: str = "test"
    revision: str | None = None
    columns: dict[str, str] = {}
    prompts: str | None = None
    rubric: str | None = None
    judges_see_item: bool = True  # the judges see the item's text (the question) beside the reference


GOLD_VARIABLES = frozenset({"reference", "description", "caption"})  # what a system must never be shown


def task_prompts_dir() -> Path:
    """The default prompts of a task folder (generic wording, filled with the task's words)."""
    return project_root() / "prompts" / "task"


def load_task(folder: Path) -> Task:
    """The task in `folder`, checked; its sha256 covers every file it reads (images included)."""
    folder = folder.expanduser()
    if not folder.is_dir():
        raise DualjudgeError(f"{folder}: task folder not found")
    spec_path = folder / TASK_FILE
    if not spec_path.is_file():
        raise DualjudgeError(f"{folder}: not a task folder (no {TASK_FILE}); see the README's task folder")
    try:
        spec = TaskFile.model_validate(read_toml(spec_path, "task file"))
    except ValidationError as e:
        where, msg = first_error(e)
        raise DualjudgeError(f"{spec_path}: {where}: {msg}") from None
    digest = hashlib.sha256()
    digest.update(spec_path.read_bytes())
    read: list[Path] = [spec_path]  # every file and folder the task is made of (nothing else is walked)
    labels = _labels(folder, spec, digest, read)
    answer = _answer(spec, spec_path)
    if spec.label and not labels and answer is None:
        raise DualjudgeError(
            f"{spec_path}: label {spec.label!r} needs labels (a TOML file of [[label]] id, definition) or answer "
            f"(a regular expression its value matches)"
        )
    if labels and not spec.label:
        raise DualjudgeError(f"{spec_path}: labels given without label (the name of the answers' final line)")
    prompts = _prompts(folder, spec, labels, digest, read, answer)
    rubric = None
    if spec.rubric:
        rubric = _inside(folder, spec.rubric, "rubric")
        load_rubric(rubric)  # one-line error if malformed
        digest.update(rubric.read_bytes())
        read.append(rubric)
    base = digest.copy()  # everything but the items file (a sample's identity is this and its items' hashes)
    sources: list[HubSource] = []
    items = _items(folder, spec, {lab.id for lab in labels}, prompts, digest, read, answer, sources)
    task = Task(
        name=spec.name,
        modalities=(spec.modality,),
        domain=spec.domain,
        question=spec.question,
        items=items,
        label=spec.label,
        labels=labels,
        answer=answer,
        noun=spec.noun,
        prompts=prompts,
        rubric=rubric,
        sha256=digest.hexdigest(),
        folder=folder.resolve(),
        files=tuple(dict.fromkeys(read)),
        base_sha256=base.hexdigest(),
        source=sources[0].record() if sources else None,
    )
    check_prompts(task, rubric or task_prompts_dir() / "rubrics" / "rubric.toml")  # as a run fills them, or one line
    return task


def _inside(folder: Path, rel: str, what: str, *, directory: bool = False) -> Path:
    path = _resolved(folder, rel, f"{folder / TASK_FILE}: {what} {rel!r}")
    if not path.is_relative_to(folder.resolve()):
        raise DualjudgeError(f"{folder / TASK_FILE}: {what} {rel!r} points outside the task folder")
    if not (path.is_dir() if directory else path.is_file()):
        raise DualjudgeError(f"{folder / rel}: {what} named by {TASK_FILE} not found")
    return path


MAX_DEPTH = 32  # folders between a task folder and a file it names


def _resolved(folder: Path, rel: str, where: str) -> Path:
    """`rel` under the folder, its links followed: a path nested past MAX_DEPTH, a cycle of links or a name the
    system cannot take is one line (nothing under a task folder is walked, so nothing deeper is ever read)."""
    if len(Path(rel).parts) > MAX_DEPTH:
        raise DualjudgeError(f"{where}: nested {len(Path(rel).parts)} folders deep; the limit is {MAX_DEPTH}")
    try:
        path = (folder / rel).resolve()
        path.stat()
    except FileNotFoundError:
        return path
    except (OSError, RuntimeError) as e:  # a link cycle (ELOOP, or RuntimeError from resolve), a name too long
        raise DualjudgeError(f"{where}: cannot be read ({type(e).__name__}: {str(e)[:100]})") from None
    return path


def _labels(folder: Path, spec: TaskFile, digest: Any, read: list[Path]) -> tuple[Label, ...]:
    if not spec.labels:
        return ()
    path = _inside(folder, spec.labels, "labels")
    digest.update(path.read_bytes())
    read.append(path)
    entries = read_toml(path, "labels file").get("label")
    if not isinstance(entries, list) or not entries:
        raise DualjudgeError(f"{path}: no [[label]] entries")
    out: list[Label] = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != {"id", "definition"}:
            raise DualjudgeError(f"{path}: label {n}: needs exactly id and definition")
        lid, definition = entry["id"], entry["definition"]
        if not isinstance(lid, str) or not LABEL_ID.match(lid):
            raise DualjudgeError(f"{path}: label {n}: id {lid!r} is not snake_case (a-z, 0-9, _)")
        if not isinstance(definition, str) or not definition.strip():
            raise DualjudgeError(f"{path}: label {lid}: empty definition")
        out.append(Label(lid, definition.strip()))
    ids = [lab.id for lab in out]
    if len(set(ids)) != len(ids):
        raise DualjudgeError(f"{path}: duplicate label ids")
    return tuple(out)


def _answer(spec: TaskFile, where: Path) -> str | None:
    """task.toml's answer: a regular expression the final line's value matches whole (GSM8K: a number), usable
    by every grammar engine (no anchors, lookarounds or backreferences); one line when it is not."""
    if spec.answer is None:
        return None
    if not spec.label:
        raise DualjudgeError(f"{where}: answer needs label (the name of the final line, e.g. ANSWER)")
    if spec.labels:
        raise DualjudgeError(f"{where}: give labels (ids to choose from) or answer (a value's pattern), not both")
    if re.search(r"\\[bBAZz]|\(\?[=!<]|\\[1-9]|(?<!\[)\^|\$|\n", spec.answer):
        raise DualjudgeError(
            f"{where}: answer {spec.answer!r}: no anchors, lookarounds, backreferences or newlines (the grammar "
            f"engines that constrain the line take none)"
        )
    try:
        compiled = re.compile(spec.answer)
    except re.error as e:
        raise DualjudgeError(f"{where}: answer {spec.answer!r} is not a regular expression ({e})") from None
    if compiled.fullmatch(""):
        raise DualjudgeError(f"{where}: answer {spec.answer!r} matches an empty value; require at least one character")
    return spec.answer


def task_words(
    domain: str, question: str, label: str | None, labels: tuple[Label, ...], answer: str | None = None
) -> tuple[tuple[str, str], ...]:
    """What the default task prompts are filled with."""
    block = "\n".join(f"- {lab.id}: {lab.definition}" for lab in labels)
    if label and answer is not None:
        answer_format = (
            f"Finish your answer with exactly one final line of the form\n{label}: <answer>\n"
            f"where <answer> is your final answer alone, written to match the regular expression {answer} "
            f"(no words, units or punctuation around it)"
        )
        reminder = f" End with the {label} line."
    elif label:
        answer_format = (
            f"Finish your answer with exactly one final line of the form\n{label}: <id>\n"
            f"where <id> is one of these ids, written exactly as shown:\n{block}"
        )
        reminder = f" End with the {label} line."
    else:
        answer_format, reminder = "", ""
    return (
        ("domain", domain),
        ("question", question),
        ("answer_format", answer_format),
        ("label_reminder", reminder),
        ("categories", block),
        ("label", label or ""),
    )


def _prompts(
    folder: Path, spec: TaskFile, labels: tuple[Label, ...], digest: Any, read: list[Path], answer: str | None
) -> PromptSet:
    words = task_words(spec.domain, spec.question, spec.label, labels, answer)
    if not spec.prompts:
        return PromptSet((task_prompts_dir(),), words)
    own = _inside(folder, spec.prompts, "prompts folder", directory=True)
    read.append(own)  # a folder's time changes when a file is added to it or taken out
    known = {p.stem for d in (task_prompts_dir(), prompts_dir()) for p in d.glob("*.toml")}
    known |= {f"judge_{k.name}{end}" for k in declared() for end in ("", "_rubric", "_overall")}  # kinds declared in code
    for path in sorted(own.glob("*.toml")):
        if path.stem not in known:
            raise DualjudgeError(f"{path}: no default prompt is called {path.stem!r}; name the file after the prompt it replaces")
        prompt = parse_prompt(path)  # one-line error if malformed
        shown = sorted(prompt.variables & GOLD_VARIABLES)
        if shown and not path.stem.startswith(("judge_", "padding", "rubric_editor")):
            raise DualjudgeError(
                f"{path}: a system's prompt may not use {', '.join('$' + v for v in shown)}: it would show the system the "
                f"answer it is judged against (only the judges' prompts, judge_*.toml, take it)"
            )
        digest.update(path.name.encode() + path.read_bytes())
        read.append(path)
    return PromptSet((own, task_prompts_dir()), words)


def _read_items(path: Path) -> pd.DataFrame:
    size = path.stat().st_size
    if size > MAX_ITEMS_BYTES:
        raise DualjudgeError(
            f"{path}: items file is {size / 2**20:,.0f} MiB; the limit is {MAX_ITEMS_BYTES // 2**20} MiB "
            f"(keep images as files beside it and name them in the image column)"
        )
    suffix = "".join(path.suffixes[-1:]).lower()
    try:
        if suffix in (".jsonl", ".ndjson"):
            frame = pd.read_json(path, lines=True, dtype=False)
        elif suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            raise DualjudgeError(f"{path}: items file must be .jsonl, .csv or .parquet")
    except DualjudgeError:
        raise
    except Exception as e:  # pandas and pyarrow raise many types for a damaged file
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise DualjudgeError(f"{path}: unreadable items file ({type(e).__name__}: {first})") from None
    if len(frame) == 0:
        raise DualjudgeError(f"{path}: no items")
    if len(frame) > MAX_ITEMS:
        raise DualjudgeError(f"{path}: {len(frame):,} items; the limit is {MAX_ITEMS:,}")
    return frame


def _text(value: Any) -> str | None:
    """A cell as text; None when empty or missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value.strip() or None
    return None if value is pd.NA else str(value)


MAX_IMAGE_PIXELS = 40_000_000  # 40 megapixels: far above any model's input, far below a bomb


def _image_bytes(folder: Path, value: Any, where: str, read: list[Path]) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)):  # a Hugging Face Image
        data = bytes(value["bytes"])
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    elif isinstance(value, str) and value.strip():
        path = _resolved(folder, value, f"{where}: image {value!r}")
        if not path.is_relative_to(folder.resolve()):
            raise DualjudgeError(f"{where}: image {value!r} points outside the task folder")
        if not path.is_file():
            raise DualjudgeError(f"{where}: image {value!r} not found in {folder}")
        data = path.read_bytes()
        read.append(path)
    else:
        raise DualjudgeError(f"{where}: no image (a path in the task folder, or bytes in Parquet)")
    checked_image(data, where)
    return data


def checked_image(data: bytes, where: str) -> None:
    """The picture read whole under a pixel bound: a decompression bomb (a few hundred KB that would unpack to
    gigabytes), a truncated file or an undecodable one is one line naming the item, never an uncaught error
    in the middle of a run."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)  # the refusal below is the one line
            with Image.open(io.BytesIO(data)) as im:
                width, height = im.size
                if width * height > MAX_IMAGE_PIXELS:
                    raise DualjudgeError(
                        f"{where}: image is {width} x {height} pixels; the limit is {MAX_IMAGE_PIXELS:,} "
                        f"(a picture this large is a decompression bomb or needs scaling down first)"
                    )
                im.load()  # decoded whole: a truncated or corrupt picture fails here, not in a run
    except DualjudgeError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise DualjudgeError(f"{where}: image has more than {MAX_IMAGE_PIXELS:,} pixels (a decompression bomb?)") from None
    except UnidentifiedImageError:
        raise DualjudgeError(f"{where}: image is not a picture in a format Pillow reads (PNG, JPEG, WebP, ...)") from None
    except (OSError, SyntaxError, ValueError) as e:
        raise DualjudgeError(f"{where}: image is not a readable picture (PNG, JPEG, ...): {str(e)[:120]}") from None


def _present(value: Any) -> Any:
    """A cell, or None where the file left it empty (JSON Lines and CSV rows without it arrive as NaN or NA)."""
    return None if value is pd.NA or (isinstance(value, float) and math.isnan(value)) else value


def _reference(value: Any, where: str) -> str | None:
    """The item's reference: text, or a list of accepted references (as inspect_ai's `target` may be), which the
    judges see all of, numbered."""
    if isinstance(value, (list, tuple, np.ndarray)):
        texts = [_text(v) if isinstance(v, (str, int, float, np.number, np.str_)) else False for v in value]
        if any(t is False for t in texts):
            raise DualjudgeError(f"{where}: column 'reference' holds a list with something other than text in it")
        given = [t for t in texts if t]
        if len(given) == 1:
            return str(given[0])
        if not given:
            return None
        return f"any one of {len(given)} accepted references:\n" + "\n".join(f"{n}. {t}" for n, t in enumerate(given, 1))
    if value is not None and value is not pd.NA and not isinstance(value, (str, int, float, np.number, np.str_)):
        raise DualjudgeError(f"{where}: column 'reference' holds a {type(value).__name__}; it must be text or a list of texts")
    return _text(value)


def _incorrect(value: Any, where: str) -> str:
    """A dataset's known-incorrect answers (an `incorrect` column: a list, or a text of one a line), as the judges see
    them after the reference; empty where there are none."""
    value = _present(value)
    if value is None:
        return ""
    if isinstance(value, str):
        texts = [line.strip() for line in value.splitlines() if line.strip()]
    elif isinstance(value, (list, tuple, np.ndarray)):
        if not all(isinstance(v, (str, np.str_)) for v in value):
            raise DualjudgeError(f"{where}: column 'incorrect' holds a list with something other than text in it")
        texts = [str(v).strip() for v in value if str(v).strip()]
    else:
        raise DualjudgeError(f"{where}: column 'incorrect' holds a {type(value).__name__}; it must be text or a list of texts")
    if not texts:
        return ""
    listed = "\n".join(f"{n}. {t}" for n, t in enumerate(texts, 1))
    return f"\nKnown incorrect answers (a response that states one of these is wrong):\n{listed}"


def _metadata(row: dict[str, Any], where: str) -> tuple[tuple[str, MetaValue], ...]:
    out: list[tuple[str, MetaValue]] = []
    for name, value in row.items():
        if name in KNOWN:
            continue
        if not META_NAME.match(str(name)):
            raise DualjudgeError(f"{where}: column name {name!r}: use letters, digits and _ (a letter first)")
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, (bool, int, float, str)) or hasattr(value, "item"):
            scalar = value.item() if hasattr(value, "item") else value
            if isinstance(scalar, (bool, int, float, str)):
                out.append((str(name), scalar))
                continue
        raise DualjudgeError(
            f"{where}: column {name!r} holds a {type(value).__name__}; metadata columns hold text, numbers or booleans"
        )
    return tuple(out)


def _items(
    folder: Path,
    spec: TaskFile,
    label_ids: set[str],
    prompts: PromptSet,
    digest: Any,
    read: list[Path],
    answer: str | None,
    sources: list[HubSource],
) -> tuple[TaskItem, ...]:
    if is_hub(spec.items):
        path = folder / TASK_FILE  # what a problem's line names
        frame, source = read_hub(folder, spec.items, spec.subset, spec.split, spec.revision, dict(spec.columns), str(path))
        digest.update(json.dumps(source.record(), sort_keys=True).encode())
        sources.append(source)
    else:
        path = _inside(folder, spec.items, "items file")
        frame = _read_items(path)
        digest.update(path.read_bytes())
        read.append(path)
    for required in ("id", "reference", spec.modality):
        if required not in frame.columns:
            raise DualjudgeError(
                f"{path}: no {required!r} column (a {spec.modality} task's items need id, reference, {spec.modality})"
            )
    if "label" in frame.columns and not spec.label:
        raise DualjudgeError(f"{path}: items have a label column, but {TASK_FILE} names no label and labels")
    seen: set[str] = set()
    items = []
    for n, row in enumerate(frame.to_dict("records"), 1):
        raw_id = row.get("id")
        item_id = _text(raw_id if not isinstance(raw_id, float) or not raw_id.is_integer() else int(raw_id))
        where = f"{path}: item {item_id or f'in row {n}'}"
        if item_id is None or not ITEM_ID.match(item_id):
            raise DualjudgeError(f"{where}: id {raw_id!r}: use 1-64 letters, digits, '.', '_' or '-' (a letter or digit first)")
        if item_id in seen:
            raise DualjudgeError(f"{where}: duplicate id")
        seen.add(item_id)
        for name in ("caption", "label", "group", "text"):
            value = row.get(name)
            if value is not None and value is not pd.NA and not isinstance(value, (str, int, float, np.number, np.str_)):
                raise DualjudgeError(f"{where}: column {name!r} holds a {type(value).__name__}; it must be text")
        reference = _reference(row.get("reference"), where)
        if reference is None:
            raise DualjudgeError(f"{where}: empty reference")
        reference += _incorrect(row.get("incorrect"), where)
        label = _text(row.get("label"))
        if label is not None and answer is not None:
            matched = matches_whole(answer, label)
            if matched is None:
                raise DualjudgeError(
                    f"{where}: the answer pattern {answer!r} cannot be checked against label {label!r} within "
                    f"{VALUE_S:g} s (a nested quantifier such as (a+)+ backtracks without end); write it without one"
                )
            if not matched:
                raise DualjudgeError(f"{where}: label {label!r} does not match the task's answer pattern {answer!r}")
        elif label is not None and label not in label_ids:
            raise DualjudgeError(f"{where}: label {label!r} is not one of the task's labels ({', '.join(sorted(label_ids))})")
        text = _text(row.get("text"))
        if spec.modality == "text" and text is None:
            raise DualjudgeError(f"{where}: empty text (a text task's item is its text)")
        image = None
        own = hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode())  # the row as the file has it
        if spec.modality == "image":
            image = _image_bytes(folder, row.get("image"), where, read)
            image_hash = hashlib.sha256(image).digest()  # in the task's identity and in the item's own
            digest.update(image_hash)
            own.update(image_hash)
        items.append(
            TaskItem(
                id=item_id,
                reference=reference,
                caption=_text(row.get("caption")) or "",
                label=label,
                cluster=_text(row.get("group")) or item_id,
                stratum=_text(row.get("group")) or "",
                text=text,
                image=image,
                metadata=_metadata(row, where),
                prompts=prompts,
                sha256=own.hexdigest(),
                rubric=item_rubric(_present(row.get("rubric")), where),
                shown_to_judges=text if spec.judges_see_item else None,
            )
        )
    if (label_ids or answer) and any(i.label is None for i in items) and any(i.label is not None for i in items):
        missing = next(i.id for i in items if i.label is None)
        raise DualjudgeError(f"{path}: item {missing}: no gold label (give every item one, or none)")
    return tuple(items)


def describe(task: Task) -> dict[str, Any]:
    """A task's record for a run directory (task.json): its words, labels and items without images."""
    return {
        "name": task.name,
        "noun": task.noun,
        "modalities": list(task.modalities),
        "unit": task.unit,
        "domain": task.domain,
        "question": task.question,
        "label": task.label,
        "answer": task.answer,
        "labels": [{"id": lab.id, "definition": lab.definition} for lab in task.labels],
        "sha256": task.sha256,
        "source": task.source,
        "metadata": list(dict.fromkeys(name for i in task.items for name, _ in i.metadata)),  # in the file's order
        "items": [
            {
                "id": i.id,
                "caption": i.caption,
                "reference": i.reference,
                "label": i.label,
                "group": i.cluster,
                "text": i.text,
                "metadata": dict(i.metadata),
            }
            for i in task.items
        ],
    }


def recorded_task(path: Path) -> Task:
    """The task a run recorded (task.json: what `describe` wrote), without its images and prompts: what an export
    needs once the task folder has moved. A damaged record is one line."""
    try:
        data = json.loads(path.read_text())
        order = {name: n for n, name in enumerate(data.get("metadata") or ())}  # the items file's column order
        items = tuple(
            TaskItem(
                id=str(i["id"]),
                reference=str(i["reference"]),
                caption=str(i.get("caption") or ""),
                label=i.get("label"),
                cluster=str(i.get("group") or i["id"]),
                stratum=str(i.get("group") or ""),
                text=i.get("text"),
                metadata=tuple(
                    sorted(((str(k), v) for k, v in (i.get("metadata") or {}).items()), key=lambda kv: order.get(kv[0], len(order)))
                ),
            )
            for i in data["items"]
        )
        labels = tuple(Label(str(lab["id"]), str(lab["definition"])) for lab in data.get("labels") or ())
        return Task(
            name=str(data["name"]),
            modalities=tuple(data.get("modalities") or ("image", "text")),  # a record from before they were kept: either
            domain=str(data["domain"]),
            question=str(data["question"]),
            items=items,
            label=data.get("label"),
            labels=labels,
            answer=data.get("answer"),
            noun=str(data.get("noun") or "item"),
            sha256=data.get("sha256"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise DualjudgeError(f"{path}: unreadable task record ({type(e).__name__}: {str(e)[:100]})") from None


def dumps(task: Task) -> str:
    return json.dumps(describe(task), indent=1, sort_keys=True)
