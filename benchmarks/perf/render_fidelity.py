"""Render fidelity benchmark: each rendered sign against the official DfT artwork of its code.

    python benchmarks/perf/render_fidelity.py [../shared/signs/png]

Targets (issue 2): for >= 80 % of the catalogue signs that have artwork, the nearest of all
official signs to the render is its own code; mean SSIM >= 0.75.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.fidelity import measure


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/signs/png")
    if not folder.is_dir():
        print(f"no artwork folder at {folder}; pass the folder of official PNGs")
        return 2
    rows = measure(list(default_catalogue().codes), folder)
    print(f"{'code':<8} {'SSIM own':>8}  {'nearest':<8} {'SSIM':>6}")
    for r in rows:
        mark = "" if r.own_is_nearest else "  <- not own"
        print(f"{r.code:<8} {r.ssim_own:8.3f}  {r.nearest:<8} {r.ssim_nearest:6.3f}{mark}")
    n_own = sum(r.own_is_nearest for r in rows)
    mean = sum(r.ssim_own for r in rows) / len(rows)
    print(
        f"\nsigns with artwork: {len(rows)}; nearest is own code: {n_own}/{len(rows)} "
        f"({100 * n_own / len(rows):.0f} %, target >= 80 %); mean SSIM {mean:.3f} (target >= 0.75)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
