"""`dualjudge plan` of each example study beside the run it plans: wall time and loads, on this machine.

    python benchmarks/perf/plan_examples.py [--out /tmp/plan-examples] [--bound 0.25] [--only capitals]

For each example study (examples/capitals.toml, examples/arithmetic.toml): `dualjudge plan --json` for a fresh run
directory (nothing cached), then `dualjudge run` into it, and the plan's wall time (the runner's schedule simulated
on this machine's device groups, loads included: `placed.seconds`) and loads per model set beside the run's
(its jobs' span in manifest.json, from the first job's start to the last one's end, and the loads its jobs
record). Exit 1 when a plan is further than `--bound` (a share: 0.25 is 25%) from its run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("capitals", "arithmetic")
BOUND = 0.25


def reset_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def dualjudge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dualjudge.cli", *args], cwd=ROOT, capture_output=True, text=True, preexec_fn=reset_signals
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("/tmp/plan-examples"))
    ap.add_argument("--bound", type=float, default=BOUND)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rows, off = [], []
    for name in (n for n in EXAMPLES if args.only in n):
        out = args.out / name
        shutil.rmtree(out, ignore_errors=True)
        config = str(ROOT / "examples" / f"{name}.toml")
        planned = dualjudge("plan", config, "--out", str(out), "--json")
        if planned.returncode != 0:
            raise SystemExit(f"plan of {name} failed: {planned.stderr[-2000:]}")
        placed = json.loads(planned.stdout)["placed"]
        ran = dualjudge("run", config, "--out", str(out))
        if ran.returncode not in (0, 4):
            raise SystemExit(f"run of {name} failed ({ran.returncode}): {ran.stderr[-2000:]}")
        jobs = json.loads((out / "manifest.json").read_text())["jobs"]
        wall = max(j["ended_at"] for j in jobs) - min(j["started_at"] for j in jobs)
        loads: dict[str, int] = {}
        for j in jobs:
            loads[j["model"]] = loads.get(j["model"], 0) + int(bool(j.get("loaded")))
        gap = placed["seconds"] / wall - 1
        rows.append((name, placed["seconds"], wall, gap, placed["loads"], loads))
        if abs(gap) > args.bound:
            off.append(name)
    print(f"the plan (before the run) beside the run, on this machine (bound {args.bound:.0%})")
    print("| study | plan wall (s) | run wall (s) | plan / run - 1 | plan loads | run loads |")
    print("|---|---|---|---|---|---|")
    for name, plan_s, run_s, gap, planned_loads, run_loads in rows:
        print(f"| {name} | {plan_s:.0f} | {run_s:.0f} | {gap:+.0%} | {planned_loads} | {run_loads} |")
    for name in off:
        print(f"{name}: the plan is further than {args.bound:.0%} from its run", file=sys.stderr)
    return 1 if off else 0


if __name__ == "__main__":
    raise SystemExit(main())
