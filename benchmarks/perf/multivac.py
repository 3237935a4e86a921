"""Analysis of the Multivac peer matrix (46 judges x 46 systems, 21,413 verdicts, two disconnected blocks) with
200 resamples: CPU time, peak memory, and where the time went, part by part.

    python benchmarks/perf/multivac.py [--resamples 200]

Target (issue 45): within 60 s of CPU and 1 GB on a 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from dualjudge.report.build import analyze

TABLE = Path(__file__).resolve().parents[1] / "real" / "multivac" / "verdicts.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resamples", type=int, default=200)
    resamples = ap.parse_args().resamples
    parts: list[tuple[str, float]] = []

    def progress(part: str) -> None:
        parts.append((part, time.process_time()))

    with tempfile.TemporaryDirectory() as d:
        c0 = time.process_time()
        analyze(TABLE, Path(d) / "out", n_resamples=resamples, progress=progress, aliases=(("judge_gpt54", "gpt_5_4"),))
        cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    ends = [t for _, t in parts[1:]] + [c0 + cpu]
    print(f"Multivac, {resamples} resamples: {cpu:.1f} s of CPU, peak memory {peak:.2f} GiB (targets: 60 s, 1 GB)")
    for (part, start), end in zip(parts, ends):
        print(f"  {end - start:6.1f} s  {part}")


if __name__ == "__main__":
    main()
