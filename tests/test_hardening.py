"""Hostile input and ordinary faults: every bad input is exit 2 and one line, and changes nothing.

Each case names what the user passed; the test snapshots every file the user named (bytes and
folder listing) before the command and checks it is unchanged after.
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pandas as pd
import pytest

from dualjudge.analysis.simulated.simulate import simulate
from dualjudge.runs import context as context_mod
from dualjudge.studies import job as job_mod
from dualjudge.testbed.catalogue import default_catalogue
from tests.helpers.engines import ScriptedEngines
from tests.helpers.refusals import refused, snapshot
from tests.helpers.runs import CONFIG, respond

ROOT = Path(__file__).resolve().parent.parent


# -- helpers ---------------------------------------------------------------------------------------
@pytest.fixture()
def scripted_engine(monkeypatch):
    """`dualjudge run` in this process gets scripted engines (the runner's default engine factory is
    replaced); `answer` can be replaced per test."""
    state: dict = {"answer": respond}
    factory = ScriptedEngines(lambda r: state["answer"](r))
    state["loaded"] = factory.loaded
    monkeypatch.setattr(context_mod, "Engines", lambda *args, **kwargs: factory)
    # scripted engines need no weights, GPU or vLLM: the preflight (tests/test_preflight.py) has nothing to check
    monkeypatch.setattr(job_mod, "require_preflight", lambda config: [])
    return state


def write_config(tmp_path: Path, text: str = CONFIG, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def small_table(tmp_path: Path, n_signs: int = 4, **changes) -> Path:
    frame = simulate(n_signs=n_signs, items_per_sign=7, repeats=1, seed=1)
    for col, value in changes.items():
        frame[col] = value
    path = tmp_path / "verdicts.csv"
    frame.to_csv(path, index=False)
    return path


# -- ordinary runs ---------------------------------------------------------------------------------
def test_run_whose_judge_fails_a_whole_cell_exits_0_with_its_report(cli, tmp_path, scripted_engine):
    def quality_fails_for_gemma_answers(request):
        if request.constraint is not None and request.constraint.kind == "json":
            if (
                request.constraint.schema["title"] == "QualityVerdict"
                and "seeded" in request.messages[1].text
                and "MA" not in request.messages[1].text
            ):
                return "not a verdict"
        return respond(request)

    scripted_engine["answer"] = quality_fails_for_gemma_answers
    out = tmp_path / "run"
    code, stdout, err = cli("run", str(write_config(tmp_path)), "--out", str(out))
    assert code == 0, err
    assert "summary" in stdout and " - " in stdout  # cells without an ok quality verdict print "-"
    for name in ("report.md", "report.html", "summary.json", "manifest.json", "verdicts.parquet"):
        assert (out / name).is_file(), name
    table = pd.read_parquet(out / "verdicts.parquet")
    assert (table["quality_status"] == "parse_failure").any()


def test_one_sign_run_exits_0_with_manifest_summary_and_report(cli, tmp_path, scripted_engine):
    one_sign = CONFIG.replace('signs = ["616", "670V30"]', 'signs = ["616"]')
    out = tmp_path / "run"
    code, _, err = cli("run", str(write_config(tmp_path, one_sign)), "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_rows"] > 0 and (out / "manifest.json").is_file() and (out / "report.md").is_file()
    code, _, err = cli("run", str(write_config(tmp_path, one_sign)), "--out", str(out))  # a rerun too
    assert code == 0, err


# -- stores ----------------------------------------------------------------------------------------
def _bad_stores(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """A results.sqlite per fault, with the words its refusal must contain."""
    cases: dict[str, tuple[Path, str]] = {}

    def store(name: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        return d / "results.sqlite"

    empty = store("empty")
    empty.write_bytes(b"")
    cases["empty"] = (empty, "is empty (0 bytes)")
    garbage = store("garbage")
    garbage.write_bytes(os.urandom(5000))
    cases["garbage"] = (garbage, "is not a SQLite database")
    other = store("other")
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE people (name TEXT)")
    cases["other schema"] = (other, "holds other tables (people)")
    old = store("old")
    with sqlite3.connect(old) as con:
        con.execute("CREATE TABLE answers (variant_id TEXT)")
    cases["missing columns"] = (old, "lacks columns")
    truncated = store("truncated")
    with sqlite3.connect(truncated) as con:
        con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.executemany("INSERT INTO meta VALUES (?, ?)", [(str(i), "x" * 500) for i in range(200)])
    data = truncated.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    cases["truncated"] = (truncated, "is truncated")
    folder = store("folder")
    folder.mkdir()
    cases["folder"] = (folder, "is a folder")
    return cases


@pytest.mark.parametrize("command", ["status", "export", "run"])
def test_unusable_store_is_refused_and_left_as_it_is(cli, tmp_path, command, scripted_engine):
    config = write_config(tmp_path)
    for name, (db, needle) in _bad_stores(tmp_path).items():
        args = [command, str(db.parent)] if command != "run" else ["run", str(config), "--out", str(db.parent)]
        refused(cli, args, needle, [db.parent])


def test_status_and_export_never_write_to_the_store(cli, tmp_path, scripted_engine):
    out = tmp_path / "run"
    assert cli("run", str(write_config(tmp_path)), "--out", str(out))[0] == 0
    before = snapshot(out / "results.sqlite")
    code, stdout, _ = cli("status", str(out))
    assert code == 0 and "verdicts" in stdout
    assert cli("export", str(out))[0] == 0
    assert snapshot(out / "results.sqlite") == before


def test_damaged_recorded_config_is_one_line(cli, tmp_path, scripted_engine):
    out = tmp_path / "run"
    assert cli("run", str(write_config(tmp_path)), "--out", str(out))[0] == 0
    with sqlite3.connect(out / "results.sqlite") as con:
        con.execute("UPDATE meta SET value = '{not json' WHERE key = 'config'")
    refused(cli, ["export", str(out)], "configuration recorded in results.sqlite is damaged", [out / "results.sqlite"])


@pytest.mark.parametrize("fault", ["garbage", "folder", "other schema"])
def test_unusable_shared_cache_is_refused(cli, tmp_path, fault, scripted_engine):
    cache = tmp_path / "cache.sqlite"
    if fault == "garbage":
        cache.write_bytes(b"this is not sqlite" * 100)
    elif fault == "folder":
        cache.mkdir()
    else:
        with sqlite3.connect(cache) as con:
            con.execute("CREATE TABLE people (name TEXT)")
    config = write_config(tmp_path, CONFIG + f'cache = "{cache}"\n')
    refused(cli, ["run", str(config), "--out", str(tmp_path / "run")], str(cache), [cache])


# -- output paths ----------------------------------------------------------------------------------
def _output_cases(tmp_path: Path) -> list[tuple[str, Path, str]]:
    a_file = tmp_path / "a_file"
    a_file.write_text("keep me")
    return [("an existing file", a_file, "is an existing file"), ("under a file", a_file / "sub", "which is a file")]


def test_output_folders_that_cannot_be_used_are_refused_before_any_work(cli, tmp_path, scripted_engine):
    config = write_config(tmp_path)
    table = small_table(tmp_path)
    for _, out, needle in _output_cases(tmp_path):
        refused(cli, ["run", str(config), "--out", str(out)], needle, [tmp_path / "a_file"])
        refused(cli, ["analyze", str(table), "--out", str(out)], needle, [tmp_path / "a_file"])
        refused(cli, ["data", "build", "--out", str(out), "--signs", "616"], needle, [tmp_path / "a_file"])
    assert scripted_engine["loaded"] == []


def test_result_file_that_is_a_folder_is_refused_before_any_work(cli, tmp_path, scripted_engine):
    out = tmp_path / "run"
    (out / "verdicts.parquet").mkdir(parents=True)
    refused(cli, ["run", str(write_config(tmp_path)), "--out", str(out)], "is a folder where dualjudge writes", [out])
    assert scripted_engine["loaded"] == []
    analysis = tmp_path / "analysis"
    (analysis / "report.md").mkdir(parents=True)
    refused(cli, ["analyze", str(small_table(tmp_path)), "--out", str(analysis)], "report.md", [analysis])


def test_output_files_that_cannot_be_written_are_refused(cli, tmp_path):
    build = tmp_path / "tb"
    assert cli("data", "build", "--out", str(build), "--size", "32", "--signs", "616", "--visibilities", "1.0")[0] == 0
    folder = tmp_path / "sheet.png"
    folder.mkdir()
    refused(cli, ["data", "sheet", "--testbed", str(build), "--out", str(folder)], "is a folder", [folder, build])
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    refused(cli, ["data", "sheet", "--testbed", str(build), "--out", str(a_file / "s.png")], "which is a file", [a_file, build])


@pytest.fixture()
def read_only_folder(tmp_path):
    """A read-only filesystem (root ignores permission bits, so a read-only mount is the honest test)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only filesystem here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_unwritable_outputs_are_refused_before_any_work(cli, tmp_path, read_only_folder, scripted_engine):
    table = small_table(tmp_path)
    out = read_only_folder / "out"
    refused(cli, ["run", str(write_config(tmp_path)), "--out", str(out)], "is not writable", [read_only_folder])
    refused(cli, ["analyze", str(table), "--out", str(out)], "is not writable", [read_only_folder])
    refused(cli, ["data", "build", "--out", str(out), "--signs", "616"], "is not writable", [read_only_folder])
    run_dir = tmp_path / "hrun"
    run_dir.mkdir()
    small = simulate(n_signs=4, items_per_sign=7, repeats=1, seed=1)
    small["sign_code"] = small["sign_code"].map({f"S{i:02d}": c for i, c in enumerate(default_catalogue().codes)})
    small["response"] = "an answer"
    small.to_parquet(run_dir / "verdicts.parquet")
    refused(cli, ["human", "export", str(run_dir), "--out", str(out / "s.csv")], "is not writable", [read_only_folder, run_dir])
    assert scripted_engine["loaded"] == []


# -- inputs ----------------------------------------------------------------------------------------
def test_config_paths_that_are_not_config_files(cli, tmp_path):
    folder = tmp_path / "config_dir"
    folder.mkdir()
    refused(cli, ["run", str(folder)], "is a folder", [folder])
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes(CONFIG.replace('name = "t"', 'name = "caf\xe9"').encode("latin-1"))
    refused(cli, ["run", str(latin1)], "not UTF-8", [latin1])


@pytest.mark.parametrize(
    "change,needle",
    [
        (
            (
                'models = ["smollm2-135m-instruct", "gemma-3-270m"]\n[probes]',
                'models = ["smollm2-135m-instruct", "smollm2-135m-instruct"]\n[probes]',
            ),
            "listed twice",
        ),
        (('strategies = ["sa", "ma"]', "strategies = []"), "systems.strategies: must not be empty"),
        (('signs = ["616", "670V30"]', "signs = []"), "testbed.signs"),
        (('modes = ["bottom_up", "random_block"]', "modes = []"), "testbed.modes: must not be empty"),
        (("[probes]", "kinds = []\n[probes]"), "judges.kinds: must not be empty"),
        (("visibilities = [1.0, 0.5]", "visibilities = [1.0, 1.0]"), "listed twice"),
        (("visibilities = [1.0, 0.5]", "visibilities = [1.0, 0.5555]"), "more than 3 decimals"),
        (("visibilities = [1.0, 0.5]", "visibilities = [1.0, 0.0]"), "outside (0, 1]"),
        (("repeats = 2", "repeats = true"), "testbed.repeats: Input should be a valid integer"),
        (("repeats = 2", "repeats = 2.0"), "testbed.repeats: Input should be a valid integer"),
        (("max_tokens = 96", 'max_tokens = 96\ntemperature = "0.7"'), "systems.temperature: Input should be a valid number"),
        (("seed = 3", "seed = -1"), "run.seed"),
        (("[probes]", "max_tokens = 64\n[probes]"), "judges.max_tokens"),
    ],
)
def test_config_refuses_duplicates_empties_and_loose_types(cli, tmp_path, change, needle):
    old, new = change
    assert old in CONFIG
    config = write_config(tmp_path, CONFIG.replace(old, new, 1))
    refused(cli, ["run", str(config), "--out", str(tmp_path / "run")], needle, [config, tmp_path / "run"])


def test_visibilities_are_exact_in_variant_ids_never_rounded(cli, tmp_path):
    out = tmp_path / "tb"
    code, _, err = cli("data", "build", "--out", str(out), "--size", "64", "--signs", "616", "--visibilities", "1.0,0.55,0.04,0.5")
    assert code == 0, err
    ids = set(pd.read_csv(out / "variants.csv")["variant_id"])
    assert {"616_v0.55_bottom_up", "616_v0.04_random_block", "616_v0.5_bottom_up", "616_v1.0_none"} <= ids
    refused(
        cli,
        ["data", "build", "--out", str(tmp_path / "tb2"), "--visibilities", "0.1234"],
        "more than 3 decimals",
        [tmp_path / "tb2"],
    )


@pytest.mark.parametrize(
    "args,needle",
    [
        (["data", "build", "--seed", "-1"], "--seed"),
        (["data", "build", "--size", "0"], "--size"),
        (["models", "serve", "smollm2-135m-instruct", "--port", "-1"], "--port"),
        (["models", "serve", "smollm2-135m-instruct", "--port", "70000"], "--port"),
    ],
)
def test_out_of_range_options_name_the_option(cli, tmp_path, args, needle):
    refused(cli, args, needle, [])


def _labels(tmp_path: Path) -> Path:
    rows = [{"item": i, "annotator": a, "label": (i + k) % 3} for i in range(40) for k, a in enumerate("xyzw")]
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "option,value",
    [
        ("--epsilon", "-1"),
        ("--epsilon", "5"),
        ("--epsilon", "nan"),
        ("--q", "0"),
        ("--q", "2"),
        ("--q", "nan"),
        ("--min-items", "-1"),
        ("--min-items", "0"),
        ("--metric", "f1"),
    ],
)
def test_alt_test_options_are_validated(cli, tmp_path, option, value):
    refused(cli, ["stats", "alt-test", str(_labels(tmp_path)), "--candidate", "x", option, value], option, [])


@pytest.mark.parametrize("option,value", [("--resamples", "0"), ("--resamples", "-5"), ("--seed", "-1")])
def test_analyze_options_are_validated(cli, tmp_path, option, value):
    table = small_table(tmp_path)
    refused(cli, ["analyze", str(table), "--out", str(tmp_path / "a"), option, value], option, [tmp_path / "a"])


def test_analyze_refuses_tables_it_cannot_use(cli, tmp_path):
    out = tmp_path / "a"
    blank = small_table(tmp_path, judge_family="")
    refused(cli, ["analyze", str(blank), "--out", str(out)], "column judge_family is blank", [blank, out])
    frame = simulate(n_signs=4, items_per_sign=7, repeats=1, seed=1)
    doubled = tmp_path / "doubled.csv"
    pd.concat([frame, frame]).to_csv(doubled, index=False)
    refused(cli, ["analyze", str(doubled), "--out", str(out)], "identical duplicates", [doubled, out])
    conflicting = frame.copy()
    conflicting["overall"] = 10 - conflicting["overall"]
    conflict = tmp_path / "conflict.csv"
    pd.concat([frame, conflicting]).to_csv(conflict, index=False)
    refused(cli, ["analyze", str(conflict), "--out", str(out)], "conflicting duplicates", [conflict, out])
    no_value = frame.astype({"equivalent": object})
    no_value.loc[0, "equivalent"] = None
    missing = tmp_path / "missing.csv"
    no_value.to_csv(missing, index=False)
    refused(cli, ["analyze", str(missing), "--out", str(out)], "need an equivalent value", [missing, out])
    truncated = tmp_path / "t.parquet"
    frame.to_parquet(truncated)
    truncated.write_bytes(truncated.read_bytes()[:300])
    refused(cli, ["analyze", str(truncated), "--out", str(out)], "unreadable table", [truncated, out])


def test_analyze_one_sign_table_writes_its_report(cli, tmp_path):
    table = small_table(tmp_path, n_signs=1)
    code, _, err = cli("analyze", str(table), "--out", str(tmp_path / "a"))
    assert code == 0, err
    assert (tmp_path / "a" / "report.md").is_file()


def _bomb_png(path: Path, side: int = 20000) -> None:
    """A tiny PNG whose header claims a huge image (Pillow's decompression-bomb guard)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b""))


def test_artwork_inputs_that_cannot_be_read(cli, tmp_path):
    art = tmp_path / "art"
    art.mkdir()
    _bomb_png(art / "616.png")
    out = tmp_path / "tb"
    refused(cli, ["data", "build", "--out", str(out), "--signs", "616", "--images", str(art)], "implausibly large", [art, out])
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "616.png").symlink_to(loop / "616.svg")
    (loop / "616.svg").symlink_to(loop / "616.png")
    refused(cli, ["data", "build", "--out", str(out), "--signs", "616", "--images", str(loop)], "616", [loop, out])


def test_testbed_manifests_that_cannot_be_used(cli, tmp_path):
    build = tmp_path / "tb"
    assert cli("data", "build", "--out", str(build), "--size", "32", "--signs", "616", "--visibilities", "1.0,0.5")[0] == 0
    sheet = tmp_path / "s.png"
    frame = pd.read_parquet(build / "variants.parquet")

    def case(name: str) -> Path:
        d = tmp_path / name
        (d / "images").mkdir(parents=True)
        for f in (build / "images").iterdir():
            (d / "images" / f.name).write_bytes(f.read_bytes())
        return d

    missing = case("missing")
    frame.to_parquet(missing / "variants.parquet")
    (missing / frame["image_path"].iloc[0]).unlink()
    refused(cli, ["data", "sheet", "--testbed", str(missing), "--out", str(sheet)], "is missing", [missing, sheet])
    garbage = case("garbage")
    (garbage / "variants.csv").write_bytes(b"\x00\x01garbage\xff" * 50)
    refused(cli, ["data", "sheet", "--testbed", str(garbage), "--out", str(sheet)], "variants.csv", [garbage, sheet])
    truncated = case("truncated")
    frame.to_parquet(truncated / "variants.parquet")
    (truncated / "variants.parquet").write_bytes((truncated / "variants.parquet").read_bytes()[:200])
    refused(
        cli, ["data", "sheet", "--testbed", str(truncated), "--out", str(sheet)], "unreadable testbed manifest", [truncated, sheet]
    )
    escape = case("escape")
    secret = tmp_path / "secret.png"
    secret.write_bytes((build / frame["image_path"].iloc[0]).read_bytes())
    frame.assign(image_path="../secret.png").to_parquet(escape / "variants.parquet")
    refused(cli, ["data", "sheet", "--testbed", str(escape), "--out", str(sheet)], "outside the testbed folder", [escape, sheet])


def test_killed_build_leaves_no_staging_behind_once_rebuilt(cli, tmp_path):
    out = tmp_path / "tb"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f".dualjudge-build-{dead.pid}-abc"
    stale.mkdir()
    (stale / "616_v1.0_none.png").write_bytes(b"x" * 1000)
    live = out / f".dualjudge-build-{os.getpid()}-def"  # a build still running keeps its folder
    live.mkdir()
    assert cli("data", "build", "--out", str(out), "--size", "32", "--signs", "616", "--visibilities", "1.0")[0] == 0
    assert not stale.exists() and live.exists()


# -- the human check -------------------------------------------------------------------------------
@pytest.fixture()
def run_dir(tmp_path):
    frame = simulate(n_signs=6, items_per_sign=14, repeats=1, seed=2)
    codes = default_catalogue().codes
    frame["sign_code"] = frame["sign_code"].map({f"S{i:02d}": codes[i] for i in range(6)})
    frame["response"] = "Answer for " + frame["item_id"] + " by " + frame["system_model"]
    d = tmp_path / "run"
    d.mkdir()
    frame.to_parquet(d / "verdicts.parquet")
    return d


def _annotated(sample_csv: Path, out: Path) -> Path:
    sample = pd.read_csv(sample_csv, dtype=str)
    sample["annotator"] = "ann1"
    sample[["accuracy", "completeness", "relevance"]] = "7"
    sample["equivalent"] = "1"
    sample.to_csv(out, index=False)
    return out


def test_a_second_export_never_replaces_the_key_annotations_refer_to(cli, run_dir, tmp_path):
    first = tmp_path / "first.csv"
    assert cli("human", "export", str(run_dir), "--out", str(first), "--n", "10")[0] == 0
    annotations = _annotated(first, tmp_path / "ann.csv")
    key = run_dir / "human_sample.json"
    for args in (["--seed", "5"], ["--n", "12"]):
        refused(
            cli,
            ["human", "export", str(run_dir), "--out", str(tmp_path / "second.csv"), *args],
            "--replace-key",
            [key, tmp_path / "second.csv"],
        )
    for bad_n in ("0", "-3"):
        refused(cli, ["human", "export", str(run_dir), "--out", str(tmp_path / "x.csv"), "--n", bad_n], "--n", [key])
    # the same export again is fine; the annotations still import
    assert cli("human", "export", str(run_dir), "--out", str(tmp_path / "again.csv"), "--n", "10")[0] == 0
    code, _, err = cli("human", "import", str(run_dir), str(annotations))
    assert code == 0, err
    # a replaced key: the old annotations no longer match and are refused, naming the mismatch
    assert (
        cli("human", "export", str(run_dir), "--out", str(tmp_path / "new.csv"), "--n", "10", "--seed", "5", "--replace-key")[0]
        == 0
    )
    refused(cli, ["human", "import", str(run_dir), str(annotations)], "belong to another export", [run_dir / "human_check.json"])


def test_human_import_refuses_blank_ids_and_damaged_keys(cli, run_dir, tmp_path):
    sample = tmp_path / "s.csv"
    assert cli("human", "export", str(run_dir), "--out", str(sample), "--n", "10")[0] == 0
    blank = pd.read_csv(_annotated(sample, tmp_path / "ann.csv"), dtype=str)
    blank.loc[0, "sample_id"] = None
    blank.to_csv(tmp_path / "blank.csv", index=False)
    refused(cli, ["human", "import", str(run_dir), str(tmp_path / "blank.csv")], "no sample_id", [run_dir])
    (run_dir / "human_sample.json").write_text('{"table": "verdicts.parquet", "samp')
    refused(cli, ["human", "import", str(run_dir), str(tmp_path / "ann.csv")], "sample key is damaged", [run_dir])


# -- runs: one directory, one run ------------------------------------------------------------------
def test_a_second_run_on_a_busy_directory_exits_2_naming_the_holder(cli, tmp_path, scripted_engine):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from pathlib import Path; from dualjudge.storage.lock import run_lock\n"
                f"with run_lock(Path({str(out)!r})):\n    print('held', flush=True); time.sleep(60)"
            ),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        line = refused(cli, ["run", str(write_config(tmp_path)), "--out", str(out)], f"pid {holder.pid}", [out / "results.sqlite"])
        assert "in use by another dualjudge run" in line
        assert scripted_engine["loaded"] == []
    finally:
        holder.kill()
        holder.wait()
    # the holder died (as kill -9 would): its lock died with it
    code, _, err = cli("run", str(write_config(tmp_path)), "--out", str(out))
    assert code == 0, err


def test_unexpected_exceptions_keep_their_traceback_and_say_bug(cli, monkeypatch, tmp_path):
    import dualjudge.analysis.summary as analyze_mod

    def broken(*a, **k):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(analyze_mod, "summarize", broken)
    code, _, err = cli("analyze", str(small_table(tmp_path)), "--out", str(tmp_path / "a"))
    assert code == 1 and "Traceback" in err and "ZeroDivisionError: planted" in err and "bug" in err


def test_test_children_get_default_signal_handling_under_a_runner_that_ignores_sigint():
    """`make test &` starts pytest with SIGINT ignored; the suite's children must still obey Ctrl-C."""
    import signal

    from tests.helpers.processes import reset_signals

    probe = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run(probe, capture_output=True, text=True).stdout
        reset = subprocess.run(probe, capture_output=True, text=True, preexec_fn=reset_signals).stdout
    finally:
        signal.signal(signal.SIGINT, previous)
    assert inherited.strip() == "True"  # what a background runner passes on
    assert reset.strip() == "False"
