"""Analysis of a 1,000,000-row verdict table with 2,000 bootstrap resamples: time and peak memory.

    python benchmarks/perf/analysis_scale.py [--rows 1000000]

Targets (issues 6, 32 and 54): under 60 s (of CPU) and under 4 GB on a 2-core machine, with the self-preference
decomposition in (the answers carry labels, a quarter or so of them wrong).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from dualjudge.analysis.simulated.simulate import simulate
from dualjudge.report.build import analyze


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    rows = ap.parse_args().rows
    # 4 judges x 5 generators x repeats x 30 signs x items: choose items per sign to reach the row count
    per_item = 4 * 5 * 3
    items = max(1, round(rows / (30 * per_item)))
    t0 = time.perf_counter()
    frame = simulate(items_per_sign=items, repeats=3, seed=0, labels=True)  # labels: the decomposition runs too
    made = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        table = Path(d) / "verdicts.parquet"
        frame.to_parquet(table)
        del frame
        t0, c0 = time.perf_counter(), time.process_time()
        summary = analyze(table, Path(d) / "out", n_resamples=2000)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(
        f"{summary.n_rows:,} rows (simulated in {made:.0f} s): analysis with 2,000 resamples, report and "
        f"figures in {elapsed:.1f} s ({cpu:.1f} s of CPU); peak memory {peak:.2f} GiB (targets: < 60 s, < 4 GB)"
    )


if __name__ == "__main__":
    main()
