"""Time to build all 390 variants at 512 px (issue 2 target: under 15 s on a 2-core machine).

python benchmarks/perf/build_time.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from dualjudge.testbed.variants import build_variants


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        frame = build_variants(Path(d) / "tb", size=512, seed=0)
        elapsed = time.perf_counter() - t0
    print(f"built {len(frame)} variants at 512 px in {elapsed:.2f} s ({len(frame) / elapsed:.0f} variants/s; target < 15 s)")


if __name__ == "__main__":
    main()
