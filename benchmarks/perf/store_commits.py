"""The run store under concurrent jobs: commits per second with 1, 2 and 4 jobs side by side.

    python benchmarks/perf/store_commits.py [--signs 10]

Four system models and four judges (text runs) against an engine that answers instantly, so the store
and the runner are all that is measured. The device groups are 1, 2 and 4 (pretend) CPU cores, so 1,
2 or 4 jobs run at once; every result is committed as it arrives, from the event loop's one thread
(the store has one writer however many jobs run). Reported per placement: the rows committed (work
rows, request log, cache), the wall time of the runner, commits/s, the ratio to one job at a time, and
the failed rows (any store contention would show there: it must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

from cache_replay import ScriptedEngines  # the instant engine (same folder)

import dualjudge.inference.devices as devices
from dualjudge.config import RunConfig
from dualjudge.runs.context import RunContext
from dualjudge.runs.runner import Runner

MODELS = ["smollm2-135m-instruct", "gemma-3-270m", "gemma-3-4b-it", "qwen2.5-vl-3b-instruct"]
PLACEMENTS = {1: [[0]], 2: [[0], [1]], 4: [[0], [1], [2], [3]]}


def committed(db: Path) -> tuple[int, int]:
    """Rows in the store (work rows, request log, cache) and rows not ok."""
    with sqlite3.connect(db) as con:
        tables = ["answers", "verdicts", "order_probe", "padding_texts", "padding_probe", "request_log", "cache"]
        rows = sum(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)
        bad = sum(con.execute(f"SELECT COUNT(*) FROM {t} WHERE status != 'ok'").fetchone()[0] for t in tables[:5])
    return rows, bad


def measure(jobs: int, signs: list[str], folder: Path) -> tuple[int, float, int]:
    config = RunConfig(
        **{
            "run": {"name": "store", "seed": 0},
            "testbed": {"signs": signs, "repeats": 1, "modality": "text", "size": 128},
            "systems": {"models": MODELS, "strategies": ["sa", "cot"]},
            "judges": {"models": MODELS},
            "probes": {"order_pairs": 50, "padding_samples": 40},
            "engine": {"concurrency": 64, "devices": PLACEMENTS[jobs]},
        }
    )
    ctx = RunContext(config, folder / f"jobs{jobs}", engines=ScriptedEngines())
    try:
        t0 = time.perf_counter()
        asyncio.run(Runner(ctx).run())
        wall = time.perf_counter() - t0
    finally:
        ctx.store.close()
    rows, bad = committed(folder / f"jobs{jobs}" / "results.sqlite")
    return rows, wall, bad


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signs", type=int, default=10, help="signs of the catalogue in the testbed")
    args = ap.parse_args()
    devices.allowed_cores = lambda: [0, 1, 2, 3]  # pretend cores: the engine is instant, nothing is bound
    from dualjudge.testbed.catalogue import default_catalogue

    signs = [s.code for s in default_catalogue().signs][: args.signs]
    with tempfile.TemporaryDirectory() as d:
        results = {n: measure(n, signs, Path(d)) for n in PLACEMENTS}
    base = results[1][0] / results[1][1]
    print(f"{len(MODELS)} system models, {len(MODELS)} judges, {len(signs)} signs, instant engine")
    print(f"{'jobs at once':>12} {'rows':>8} {'wall s':>7} {'commits/s':>10} {'ratio':>6} {'not ok':>6}")
    for n, (rows, wall, bad) in results.items():
        print(f"{n:>12} {rows:>8} {wall:>7.1f} {rows / wall:>10.0f} {rows / wall / base:>6.2f} {bad:>6}")


if __name__ == "__main__":
    main()
