"""`dualjudge analyze` of a 1,000,000-row pairwise table with 2,000 bootstrap resamples: time and peak memory.

    python benchmarks/perf/pairwise_scale.py [--rows 1000000]

Target (issue 56): within 60 s of CPU on a 2-core machine. The table: 10 systems of 10 families, each a judge
too, every pair in both orders (900 comparisons an item), answers carrying labels (so the decomposition runs as
well), planted quality, first-slot, decisiveness, tie and own-family terms (analysis/pairwise/simulate.py).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from dualjudge.analysis.pairwise.simulate import PlantedPairs, simulate_pairs
from dualjudge.report.build import analyze_pairwise

MODELS = [f"m{i}" for i in range(10)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    rows = ap.parse_args().rows
    per_item = len(MODELS) * len(MODELS) * (len(MODELS) - 1)  # judges x ordered pairs
    families = {m: f"family{i}" for i, m in enumerate(MODELS)}
    planted = PlantedPairs(
        systems=families,
        judges=families,
        strength={m: (i - 4.5) / 5 for i, m in enumerate(MODELS)},
        position={m: 0.3 * ((i % 3) - 1) for i, m in enumerate(MODELS)},
        decisiveness={m: 0.6 + 0.1 * i for i, m in enumerate(MODELS)},
        own={"m0": 0.5, "m5": 0.3},
        tie={m: 0.2 for m in MODELS[::2]},
        n_items=max(1, round(rows / per_item)),
        answer_sd=0.3,
        labels=5,
        agree={"m1": 0.5},
    )
    t0 = time.perf_counter()
    frame = simulate_pairs(planted, seed=0)
    made = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        table = Path(d) / "pairwise.parquet"
        frame.to_parquet(table)
        n = len(frame)
        del frame
        t0, c0 = time.perf_counter(), time.process_time()
        result = analyze_pairwise(table, Path(d) / "out", n_resamples=2000)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    estimated = sum(j.own_logit is not None for j in result.judges)
    print(
        f"{n:,} pairwise rows (simulated in {made:.0f} s): analysis with 2,000 resamples (decomposition included) "
        f"and report in {elapsed:.1f} s wall, {cpu:.1f} s CPU, peak memory {peak:.2f} GiB; own-family term "
        f"estimated for {estimated} of {len(result.judges)} judges; target: 60 s of CPU"
    )


if __name__ == "__main__":
    main()
