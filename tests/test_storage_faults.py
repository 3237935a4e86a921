"""Faults below the protocol: a full disk in the middle of a run and a damaged store are one line each
(exit 4 and 2), never a traceback; what was committed stays, and the same command run again after the
disk has room finishes the study. An interrupted analysis leaves its folder as it was; a dead endpoint
beside a healthy one is left out rather than stopping the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dualjudge.storage.store import Store
from tests.helpers.hosted import HOSTED_RUN, KEY, hosted_card
from tests.helpers.provider import Provider


def _study(tmp_path: Path, api: Provider) -> Path:
    (tmp_path / "cards").mkdir(exist_ok=True)
    (tmp_path / "cards" / "gpt-4o.toml").write_text(hosted_card(api.url))
    config = tmp_path / "c.toml"
    config.write_text(HOSTED_RUN.replace('signs = ["616"]', 'signs = ["616", "602"]'))
    return config


def test_a_full_disk_mid_run_is_one_line_and_the_rerun_finishes(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    real_write = Store._write
    writes = {"n": 0}

    def fills_up(self: Store, sql: str, params: object, last: bool = True) -> None:
        writes["n"] += 1
        if writes["n"] > 6 and "cache" in sql:  # a few rows in, the disk fills
            raise sqlite3.OperationalError("database or disk is full")
        real_write(self, sql, params, last)  # type: ignore[arg-type]

    with Provider() as api:
        config = _study(tmp_path, api)
        monkeypatch.setattr(Store, "_write", fills_up)
        code, _, err = cli("run", str(config), "--out", str(tmp_path / "run"))
        assert code == 4 and "the disk is full: what was committed stays" in err, err
        assert "/dualjudge/" not in err and "this is a bug" not in err  # no traceback of ours (the fake server may
        assert len([line for line in err.splitlines() if "disk is full" in line]) == 1  # log its reset sockets)
        monkeypatch.setattr(Store, "_write", real_write)
        code, _, err = cli("run", str(config), "--out", str(tmp_path / "run"))
    assert code == 0, err
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:
        assert dict(con.execute("SELECT status, COUNT(*) FROM answers GROUP BY status")) == {"ok": 2}
        assert dict(con.execute("SELECT status, COUNT(*) FROM verdicts GROUP BY status")) == {"ok": 4}
        # sent twice at most: replies of the batch that met the full disk were never stored, so they are asked again
        assert (
            con.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM request_log WHERE ok = 1 GROUP BY key)").fetchone()[0] <= 2
        )


def test_a_damaged_store_is_one_line_naming_the_recovery(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        code, _, err = cli("run", str(_study(tmp_path, api)), "--out", str(tmp_path / "run"))
    assert code == 0, err
    db = tmp_path / "run" / "results.sqlite"
    data = bytearray(db.read_bytes())
    page = 4096
    for n in (2, 3):  # two pages overwritten, the header left intact
        data[n * page : (n + 1) * page] = b"\xff" * page
    db.write_bytes(bytes(data))
    code, out, err = cli("status", str(tmp_path / "run"))
    assert code == 2 and "the store is damaged" in err and ".recover" in err, (out, err)
    assert "Traceback" not in err


def test_an_interrupted_analysis_leaves_its_folder_as_it_was(cli, tmp_path, monkeypatch):
    from dualjudge.analysis.simulated.simulate import simulate

    table = tmp_path / "t.csv"
    simulate(n_signs=4, items_per_sign=3, repeats=1, seed=5).to_csv(table, index=False)
    out = tmp_path / "a"
    assert cli("analyze", str(table), "--out", str(out), "--resamples", "200")[0] == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # Ctrl-C while the report is being written

    monkeypatch.setattr("dualjudge.report.build.render_report", interrupted)
    code, _, err = cli("analyze", str(table), "--out", str(out), "--resamples", "200", "--seed", "9")
    assert code == 130 and "is as it was" in err
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # no partial output


def test_a_dead_endpoint_beside_a_healthy_one_is_left_out_and_the_run_finishes(tmp_path):
    from dualjudge.config import RunConfig
    from dualjudge.studies.job import run_job

    with Provider(served=("gemma-3-270m",)) as api:
        config = RunConfig(
            **{
                "run": {"name": "pool", "seed": 1},
                "testbed": {
                    "signs": ["616"],
                    "visibilities": [1.0],
                    "modes": ["bottom_up"],
                    "repeats": 1,
                    "modality": "text",
                    "size": 64,
                },
                "systems": {"models": ["gemma-3-270m"], "strategies": ["sa"], "max_tokens": 64},
                "judges": {"models": ["gemma-3-270m"], "max_tokens": 160},
                "probes": {"order": False, "padding": False},
                "engine": {"retries": 1, "endpoints": {"gemma-3-270m": ["http://127.0.0.1:9/v1", api.url]}},
            }
        )
        result = run_job(config, tmp_path / "run")  # the dead endpoint is named first: it used to stop the run
    assert (result.table["quality_status"] == "ok").all() and len(result.table) == 1
    assert all(body.get("model") == "gemma-3-270m" for body in api.bodies)
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM answers WHERE status = 'ok'").fetchone()[0] == 1


def test_a_store_whose_pages_are_still_in_its_wal_is_not_called_truncated(tmp_path):
    """A run folder copied after a stop on a full disk: the header counts pages that are still in the
    write-ahead log. SQLite reads it whole, so the size check must not refuse it; alone, it still does."""
    import shutil

    import pytest

    from dualjudge.errors import DualjudgeError
    from dualjudge.storage.store import check_sqlite_file

    db = tmp_path / "live" / "results.sqlite"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")  # every page stays in the WAL, as after a checkpoint failed
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(str(i), "x" * 500) for i in range(400)])
    con.commit()
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.sqlite", "results.sqlite-wal"):
        shutil.copy(db.parent / name, copy / name)
    con.close()
    data = bytearray((copy / "results.sqlite").read_bytes())
    data[28:32] = (len(data) // 4096 + 50).to_bytes(4, "big")  # the header counts pages the file does not hold
    (copy / "results.sqlite").write_bytes(bytes(data))
    assert check_sqlite_file(copy / "results.sqlite", "store")  # the WAL holds them: not refused
    with sqlite3.connect(copy / "results.sqlite") as check:
        assert check.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 400
    (copy / "results.sqlite-wal").unlink()
    with pytest.raises(DualjudgeError, match="is truncated"):
        check_sqlite_file(copy / "results.sqlite", "store")


def test_an_endpoint_that_refuses_everything_rests_and_its_requests_go_to_the_healthy_one():
    import asyncio

    from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine
    from dualjudge.inference.types import GenerationRequest, Message, Sampling

    def request(i: int) -> GenerationRequest:
        return GenerationRequest((Message("user", f"judge {i}"),), Sampling(temperature=0.0, max_tokens=64, seed=i))

    with Provider(served=("m",)) as refusing, Provider(served=("m",)) as healthy:
        refusing.always = "404"  # a misconfigured replica: every request answered 4xx

        async def go() -> tuple[list[bool], bool]:
            pool = EndpointEngine(
                "m", [Endpoint(refusing.url), Endpoint(healthy.url)], "m@0", retries=2, backoff_s=0.01, concurrency=2
            )
            alone = EndpointEngine("m", [Endpoint(refusing.url)], "m@0", retries=2, backoff_s=0.01)
            try:
                results = [await pool.generate(request(i)) for i in range(8)]
                lone = await alone.generate(request(99))
                return [r.ok for r in results], not lone.ok and lone.tries == 1  # the request itself: no retry
            finally:
                await pool.close()
                await alone.close()

        oks, lone_refused = asyncio.run(go())
    assert all(oks) and lone_refused
    assert len(healthy.bodies) == 8


def test_a_replica_that_ignores_the_constraint_is_rested_and_nothing_is_cached_as_a_parse_failure(tmp_path):
    from dualjudge.config import RunConfig
    from dualjudge.studies.job import run_job

    def config(endpoints: list[str]) -> RunConfig:
        return RunConfig(
            **{
                "run": {"name": "pool", "seed": 1},
                "testbed": {
                    "signs": ["616", "602"],
                    "visibilities": [1.0],
                    "modes": ["bottom_up"],
                    "repeats": 1,
                    "modality": "text",
                    "size": 64,
                },
                "systems": {"models": ["gemma-3-270m"], "strategies": ["sa"], "max_tokens": 64},
                "judges": {"models": ["gemma-3-270m"], "max_tokens": 160},
                "probes": {"order": False, "padding": False},
                "engine": {"retries": 1, "endpoints": {"gemma-3-270m": endpoints}},
            }
        )

    with Provider(served=("gemma-3-270m",)) as ignoring, Provider(served=("gemma-3-270m",)) as healthy:
        ignoring.always = "unconstrained"  # answers prose to the SIGN_TYPE regex and to the verdict schemas
        alone = run_job(config([ignoring.url]), tmp_path / "alone")
        with sqlite3.connect(tmp_path / "alone" / "results.sqlite") as con:
            first = con.execute("SELECT status, error FROM answers").fetchall()
        pooled = run_job(config([ignoring.url, healthy.url]), tmp_path / "pool")
        assert ignoring.bodies and all("structured_outputs" in b for b in ignoring.bodies)
        healthy.bodies.clear()
        rerun = run_job(config([healthy.url]), tmp_path / "alone")  # the lone replica's work, redone elsewhere
    # alone: every request failed as the endpoint's fault (an error a rerun redoes), none as the model's answer
    assert len(first) == 2 and all(status == "error" and "ignored the request's constraint" in error for status, error in first), (
        first
    )
    assert not alone.table.isin(["parse_failed"]).any().any()  # no row blames the model
    assert (pooled.table["quality_status"] == "ok").all() and (pooled.table["equivalence_status"] == "ok").all()
    assert len(pooled.table) == 2 and pooled.table["format_ok"].all()  # each answer ends in its SIGN_TYPE line
    assert (rerun.table["quality_status"] == "ok").all() and len(rerun.table) == 2
    assert len(healthy.bodies) == 2 + 2 * 2  # the two answers and their verdicts: nothing was cached as an answer
