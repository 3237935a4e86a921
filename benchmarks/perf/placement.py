"""The schedule of the cross-family study on 1, 2, 4 and 8 GPUs (simulated; no model loads).

    python benchmarks/perf/placement.py [--config benchmarks/cross-family.toml] [--gpu-gb 80]

Each (model, stage) job's length comes from `dualjudge plan`'s counts for the configuration: the
completion tokens still to send (at max_tokens: an upper bound), over a decoding rate that falls with
the model's size (decoding is memory-bound: `--rate` tokens/s for an 8B model, scaled by 8 / billions of
parameters; the rate sets the hours, not the ratios), plus `--load-s` seconds per model load. The
runner's own schedule (dualjudge/runs/schedule.py) then places the jobs on the simulated GPUs:
reported per inventory: each group's jobs in order, the makespan, the loads, and the speedup over one GPU.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from dualjudge.config import load_config
from dualjudge.inference.devices import DeviceGroup, check_placement
from dualjudge.runs.estimate import estimate
from dualjudge.runs.runner import study_jobs
from dualjudge.runs.schedule import Stage, simulate

STAGE_OF: dict[str, Stage] = {"answers": "systems", "padding": "systems"}  # every other plan row is a judges stage
PROBES = ("order probe", "padding judged", "stability passes")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=Path("benchmarks/cross-family.toml"))
    ap.add_argument("--gpu-gb", type=float, default=80.0, help="memory of each simulated GPU")
    ap.add_argument("--rate", type=float, default=2000.0, help="completion tokens/s of an 8B model on one GPU")
    ap.add_argument("--load-s", type=float, default=90.0, help="seconds to load a model")
    args = ap.parse_args()
    config = load_config(args.config)
    config = config.model_copy(update={"engine": config.engine.model_copy(update={"cache": None})})
    plan = estimate(config, Path("/nonexistent/placement-sim"))
    tokens: dict[tuple[str, Stage], float] = defaultdict(float)
    probe_tokens = judge_tokens = 0.0
    for row in plan.rows:
        stage = STAGE_OF.get(row.stage, "judges")
        tokens[(row.model, stage)] += row.completion_tokens
        if stage == "judges":
            judge_tokens += row.completion_tokens
            probe_tokens += row.completion_tokens if row.stage in PROBES else 0.0
    cards = {m: config.card(m) for m in config.all_models()}
    seconds = {(m, s): t / (args.rate * 8.0 / (cards[m].parameters_b or 8.0)) for (m, s), t in tokens.items()}
    jobs, last = study_jobs(config, 1)  # the runner's own jobs and ranking (the item count scales all alike)
    print(f"{args.config}: {len(config.systems.models)} system models, {len(config.judges.models)} judges, "
          f"{plan.total_requests:,} requests, {sum(tokens.values()) / 1e6:.1f} M completion tokens at most; "
          f"GPUs of {args.gpu_gb:g} GB; {args.rate:g} tok/s for 8B; {args.load_s:g} s a load\n")
    base = None
    rows = []
    for n in (1, 2, 4, 8):
        groups = [DeviceGroup("gpu", (i,), args.gpu_gb * 0.9) for i in range(n)]
        check_placement(groups, list(cards.values()))
        run = simulate(jobs, groups, lambda m, g: g.holds(cards[m]), seconds,
                       probe_share=probe_tokens / judge_tokens if judge_tokens else 0.0, load_s=args.load_s,
                       last_system=last)
        base = base or run.makespan
        rows.append((n, run.makespan, run.loads, base / run.makespan))
        print(f"{n} GPU(s): makespan {run.makespan / 3600:.2f} h, {run.loads} loads, speedup {base / run.makespan:.2f}")
        for g in groups:
            spans = [s for s in run.spans if s.group == g]
            line = "; ".join(f"{s.job.model} {s.job.stage} {s.start / 3600:.2f}-{s.end / 3600:.2f} h"
                             f"{'' if s.loaded else ' (same load)'}" for s in spans)
            print(f"  {g.label}: {line}")
        print()
    print("| GPUs | makespan (h) | loads | speedup over 1 GPU |\n|---|---|---|---|")
    for n, makespan, loads, speedup in rows:
        print(f"| {n} | {makespan / 3600:.2f} | {loads} | {speedup:.2f} |")


if __name__ == "__main__":
    main()
