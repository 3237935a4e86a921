"""A run store made before judge kinds were declared (a column per score) is upgraded by the next run,
keeps every verdict, and is refused in one line by a read-only command until then."""

from __future__ import annotations

import sqlite3

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.storage import store as store_module
from dualjudge.storage.rows import JudgePassRow, VerdictRow
from dualjudge.storage.store import Store, check_store_files

OLD_VERDICTS = """CREATE TABLE verdicts (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    judge_model TEXT NOT NULL, judge_variant TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    accuracy INTEGER, completeness INTEGER, relevance INTEGER, overall REAL, equivalent INTEGER, reasoning TEXT,
    criteria TEXT, completion_tokens INTEGER, request_key TEXT, attempts INTEGER NOT NULL, error TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind));"""
OLD_PASSES = """CREATE TABLE judge_passes (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    judge_model TEXT NOT NULL, judge_variant TEXT NOT NULL, kind TEXT NOT NULL, pass_index INTEGER NOT NULL,
    status TEXT NOT NULL, overall REAL, equivalent INTEGER, attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind, pass_index));"""
KEY = "'v1', 0, 'm', 'sa', 'j', 'holistic'"


def _old_store(path):
    fresh = sqlite3.connect(":memory:")
    fresh.executescript(store_module.SCHEMA)
    creates = [
        sql
        for (name, sql) in fresh.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        if name not in ("verdicts", "judge_passes")
    ]
    fresh.close()
    db = sqlite3.connect(path)
    db.executescript(";\n".join(creates) + ";\n" + OLD_VERDICTS + "\n" + OLD_PASSES)
    db.executescript(f"""
        INSERT INTO verdicts VALUES ({KEY}, 'quality', 'ok', 6, 7, 8, 7.0, NULL, 'r', NULL, 10, 'k1', 1, NULL, 0);
        INSERT INTO verdicts VALUES ({KEY}, 'equivalence', 'ok', NULL, NULL, NULL, NULL, 1, 'r', NULL, 5, 'k2', 1,
                                     NULL, 0);
        INSERT INTO verdicts (variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind, status,
                              attempts, error, updated)
            VALUES ('v2', 0, 'm', 'sa', 'j', 'holistic', 'quality', 'error', 1, 'HTTP 500', 0);
        INSERT INTO judge_passes VALUES ({KEY}, 'quality', 1, 'ok', 7.5, NULL, 1, NULL, 0);
        INSERT INTO judge_passes VALUES ({KEY}, 'equivalence', 1, 'ok', NULL, 0, 1, NULL, 0);
    """)
    db.commit()
    db.close()


def test_a_store_from_before_is_upgraded_by_the_next_run_and_keeps_every_verdict(tmp_path):
    path = tmp_path / "results.sqlite"
    _old_store(path)
    with pytest.raises(DualjudgeError, match="lacks columns scores; it was made by an earlier dualjudge: rerun"):
        Store(path, readonly=True)  # status, export, view: one line, nothing changed
    check_store_files(path)  # the run's own check lets it through: the run upgrades it
    store = Store(path)
    try:
        verdicts = {(v.variant_id, v.kind): v for v in store.read(VerdictRow)}
        quality, equivalence = verdicts[("v1", "quality")], verdicts[("v1", "equivalence")]
        assert [quality.score(f) for f in ("accuracy", "completeness", "relevance", "overall")] == [6, 7, 8, 7.0]
        assert equivalence.score("equivalent") is True and verdicts[("v2", "quality")].scores is None
        assert store.done_keys(VerdictRow) == {
            ("v1", 0, "m", "sa", "j", "holistic", "quality"),
            ("v1", 0, "m", "sa", "j", "holistic", "equivalence"),
        }
        passes = {p.kind: p.value for p in store.read(JudgePassRow)}
        assert passes == {"quality": 7.5, "equivalence": 0.0}
    finally:
        store.close()
    again = Store(path, readonly=True)  # upgraded once: read-only commands work now
    try:
        assert len(again.read(VerdictRow)) == 3
    finally:
        again.close()


# the tables as earlier stores were made (written by hand): the tables derived from the row types must equal them
BEFORE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    status TEXT NOT NULL, text TEXT, predicted_category TEXT, format_ok INTEGER,
    prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, calls INTEGER,
    request_keys TEXT, attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy));
CREATE TABLE IF NOT EXISTS verdicts (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    judge_model TEXT NOT NULL, judge_variant TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    scores TEXT, reasoning TEXT, criteria TEXT, completion_tokens INTEGER, request_key TEXT, attempts INTEGER NOT NULL, error TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind));
CREATE TABLE IF NOT EXISTS order_probe (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, judge_model TEXT NOT NULL, judge_variant TEXT NOT NULL,
    first_model TEXT NOT NULL, first_strategy TEXT NOT NULL, second_model TEXT NOT NULL, second_strategy TEXT NOT NULL,
    status TEXT NOT NULL, winner_ab INTEGER, winner_ba INTEGER, flipped INTEGER,
    attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, judge_model, judge_variant, first_model, first_strategy, second_model,
                 second_strategy));
CREATE TABLE IF NOT EXISTS padding_texts (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    status TEXT NOT NULL, text TEXT, added_words INTEGER, attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy));
CREATE TABLE IF NOT EXISTS request_log (
    session TEXT NOT NULL, key TEXT NOT NULL, model TEXT NOT NULL, ok INTEGER NOT NULL, attempts INTEGER,
    latency_s REAL, completion_tokens INTEGER, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS padding_probe (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    judge_model TEXT NOT NULL, judge_variant TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    original REAL, padded REAL, shift REAL, flipped INTEGER, attempts INTEGER NOT NULL, error TEXT,
    updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind));
CREATE TABLE IF NOT EXISTS judge_passes (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, system_model TEXT NOT NULL, strategy TEXT NOT NULL,
    judge_model TEXT NOT NULL, judge_variant TEXT NOT NULL, kind TEXT NOT NULL, pass_index INTEGER NOT NULL,
    status TEXT NOT NULL, value REAL, attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind, pass_index));
CREATE TABLE IF NOT EXISTS recognition_probe (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, judge_model TEXT NOT NULL, own_strategy TEXT NOT NULL,
    other_model TEXT NOT NULL, other_strategy TEXT NOT NULL, status TEXT NOT NULL, own_first INTEGER, own_second INTEGER,
    claims_own INTEGER, claims_other INTEGER, attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, judge_model, own_strategy, other_model, other_strategy));
CREATE TABLE IF NOT EXISTS comparisons (
    variant_id TEXT NOT NULL, repeat INTEGER NOT NULL, strategy TEXT NOT NULL, judge_model TEXT NOT NULL,
    system_a TEXT NOT NULL, system_b TEXT NOT NULL, shown_first TEXT NOT NULL, status TEXT NOT NULL, winner TEXT,
    attempts INTEGER NOT NULL, error TEXT, updated REAL NOT NULL,
    PRIMARY KEY (variant_id, repeat, strategy, judge_model, system_a, system_b, shown_first));
"""


def _tables(ddl: str) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(":memory:")
    db.executescript(ddl)
    names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {n: db.execute(f"PRAGMA table_info({n})").fetchall() for n in names}


def test_the_tables_derived_from_the_row_types_are_the_tables_stores_already_hold():
    """Each work table's DDL comes from its row type (store.table_ddl): the same columns, in the same
    order, with the same types, NOT NULLs and primary keys as the hand-written tables of earlier stores."""
    from dualjudge.storage.store import SCHEMA

    assert _tables(SCHEMA) == _tables(BEFORE)
