"""`dualjudge plan` of each example study beside the run it plans: wall time and loads, on this machine.

    python benchmarks/perf/plan_examples.py [--out /tmp/plan-examples] [--bound 0.25] [--only capitals] [--pilot 4]

For each example study (examples/capitals.toml, examples/arithmetic.toml), with nothing cached:
1. `dualjudge plan --json` before anything ran: the roofline with the default completion lengths;
2. a pilot: the same study on `--pilot` sampled items (testbed.sample) in a folder of its own;
3. `dualjudge plan --json --measured PILOT`: the models' pace and completion lengths measured by the pilot;
4. `dualjudge run` of the whole study.
Each plan's wall time (the runner's schedule simulated on this machine's device groups, loads included:
`placed.seconds`) and loads per model beside the run's (its jobs' span in manifest.json, from the first job's
start to the last one's end; a server start, a replica's included, counts as a load). Exit 1 when the measured
plan is further than `--bound` (a share: 0.25 is 25%) from its run; the plan before anything ran rests on
defaults that no study's own answers have tested, and is reported beside it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

from cli_child import ROOT, dualjudge  # beside this script

EXAMPLES = ("capitals", "arithmetic")
BOUND = 0.25


def pilot_config(name: str, folder: Path, items: int) -> Path:
    """The example study on `items` sampled items, its task path made absolute, written into `folder`."""
    source = ROOT / "examples" / f"{name}.toml"
    data = tomllib.loads(source.read_text())
    task = (source.parent / data["task"]["path"]).resolve()
    text = source.read_text().replace(f'path = "{data["task"]["path"]}"', f'path = "{task}"')
    text = re.sub(r"(?m)^sample(_seed)?\s*=.*\n", "", text)  # the example's own sample, if it draws one
    text = text.replace("[testbed]\n", f"[testbed]\nsample = {items}\nsample_seed = 1\n", 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-pilot.toml"
    path.write_text(text)
    return path


def planned(config: str, out: Path, *measured: Path) -> dict:
    args = [a for m in measured for a in ("--measured", str(m))]
    result = dualjudge("plan", config, "--out", str(out), "--json", *args)
    if result.returncode != 0:
        raise SystemExit(f"plan of {config} failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout)["placed"]


def ran(config: str, out: Path) -> tuple[float, dict[str, int]]:
    result = dualjudge("run", config, "--out", str(out))
    if result.returncode not in (0, 4):
        raise SystemExit(f"run of {config} failed ({result.returncode}): {result.stderr[-2000:]}")
    jobs = json.loads((out / "manifest.json").read_text())["jobs"]
    wall = max(j["ended_at"] for j in jobs) - min(j["started_at"] for j in jobs)
    ends = {(j["model"], j["group"], j["ended_at"]) for j in jobs}
    loads: dict[str, int] = {}
    for j in jobs:  # a job that goes on in its group's load starts when the model's job before it there ended
        started_server = j.get("loaded") or (j.get("replica") and (j["model"], j["group"], j["started_at"]) not in ends)
        loads[j["model"]] = loads.get(j["model"], 0) + int(bool(started_server))
    return wall, loads


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("/tmp/plan-examples"))
    ap.add_argument("--bound", type=float, default=BOUND)
    ap.add_argument("--only", default="")
    ap.add_argument("--pilot", type=int, default=4, help="items of the pilot run")
    args = ap.parse_args()
    rows, off = [], []
    for name in (n for n in EXAMPLES if args.only in n):
        out, pilot = args.out / name, args.out / f"{name}-pilot"
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(pilot, ignore_errors=True)
        config = str(ROOT / "examples" / f"{name}.toml")
        before = planned(config, out)
        ran(str(pilot_config(name, args.out, args.pilot)), pilot)
        measured = planned(config, out, pilot)
        wall, loads = ran(config, out)
        gap = measured["seconds"] / wall - 1
        rows.append((name, before, measured, wall, gap, loads))
        if abs(gap) > args.bound:
            off.append(name)
    print(f"the plan beside the run, on this machine (bound {args.bound:.0%}, on the plan measured by a {args.pilot}-item pilot)")
    print("| study | plan, defaults (s) | plan, pilot-measured (s) | run (s) | measured plan / run - 1 | plan loads | run loads |")
    print("|---|---|---|---|---|---|---|")
    for name, before, measured, wall, gap, loads in rows:
        print(
            f"| {name} | {before['seconds']:.0f} ({before['seconds'] / wall - 1:+.0%}) | {measured['seconds']:.0f} | "
            f"{wall:.0f} | {gap:+.0%} | {measured['loads']} | {loads} |"
        )
    for name in off:
        print(f"{name}: the measured plan is further than {args.bound:.0%} from its run", file=sys.stderr)
    return 1 if off else 0


if __name__ == "__main__":
    raise SystemExit(main())
