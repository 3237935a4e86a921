"""The schedule of the cross-family study on 1, 2, 4 and 8 GPUs (simulated; no model loads).

    python benchmarks/perf/placement.py [--config benchmarks/cross-family.toml] [--gpu H100] [--gpu-gb 80] [--json]

Each (model, stage) job's length comes from `dualjudge plan`'s own estimate for the configuration: the
model's time (measured, a card hint, or the roofline of the card on the GPU, with image tokens and
expected completion tokens; the plan says which), split over its stages by their share of the model's
tokens (prefill and expected completion), plus each load's time: the plan's own (the weights read from disk,
then the engine's start; roofline.load_seconds), or `--load-s` seconds for every load. The runner's own
schedule (dualjudge/runs/schedule.py) then places the jobs on the simulated GPUs, early judges and
replicas included (--no-replicas: without them): reported per inventory: each group's jobs in order
(replicas marked), the makespan, the loads, the speedup over one GPU, and the share of the makespan the
most idle GPU spent neither loading nor working. With --json: {"gpus": {"1": {"makespan_h": H,
"speedup": 1.0, "loads": L, "max_idle_share": I}, "2": {...}, "4": {...}, "8": {...}}, "gpus_without_replicas":
{... the same without replicas and early judges}}.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from dualjudge.config import load_config
from dualjudge.inference.devices import DeviceGroup, check_placement
from dualjudge.inference.gpus import Gpu
from dualjudge.runs.estimate import estimate
from dualjudge.runs.jobs import study_jobs
from dualjudge.runs.schedule import Stage, simulate

STAGE_OF: dict[str, Stage] = {"answers": "systems", "padding": "systems"}  # every other plan row is a judges stage
PROBES = ("order probe", "padding judged", "stability passes")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=Path("benchmarks/cross-family.toml"))
    ap.add_argument("--gpu", default="H100", help="the GPU the plan prices each job on (a name of its roofline table)")
    ap.add_argument("--gpu-gb", type=float, default=80.0, help="memory of each simulated GPU")
    ap.add_argument(
        "--load-s", type=float, default=None, help="seconds to load any model (default: the plan's load time of each model)"
    )
    ap.add_argument("--json", action="store_true", help="print the makespans and speedups as JSON only")
    ap.add_argument("--no-replicas", action="store_true", help="no replicas and no early judges (the old schedule)")
    args = ap.parse_args()
    config = load_config(args.config)
    config = config.model_copy(update={"engine": config.engine.model_copy(update={"cache": None})})
    plan = estimate(config, Path("/nonexistent/placement-sim"), for_gpu=args.gpu)
    tokens: dict[tuple[str, Stage], float] = defaultdict(float)
    probe_tokens = judge_tokens = 0.0
    expected = {m.model: m for m in plan.models}
    for row in plan.rows:
        stage = STAGE_OF.get(row.stage, "judges")
        bound = row.completion_tokens or 1
        share = expected[row.model].expected_completion_tokens / max(
            1, sum(r.completion_tokens for r in plan.rows if r.model == row.model)
        )
        work = row.prefill_tokens + bound * share  # prefill and expected completion tokens
        tokens[(row.model, stage)] += work
        if stage == "judges":
            judge_tokens += work
            probe_tokens += work if row.stage in PROBES else 0.0
    per_model = defaultdict(float)
    for (m, _), t in tokens.items():
        per_model[m] += t
    cards = {m: config.card(m) for m in config.all_models()}
    seconds = {(m, s): (expected[m].seconds or 0.0) * t / per_model[m] for (m, s), t in tokens.items() if per_model[m]}
    loads = args.load_s if args.load_s is not None else {m.model: m.load_seconds or 0.0 for m in plan.models}
    jobs, last = study_jobs(config, 1)  # the runner's own jobs and ranking (the item count scales all alike)
    say = (lambda *a, **k: None) if args.json else print
    say(
        f"{args.config}: {len(config.systems.models)} system models, {len(config.judges.models)} judges, "
        f"{plan.total_requests:,} requests, {sum(m.expected_completion_tokens for m in plan.models) / 1e6:.1f} M "
        f"completion tokens expected; {args.gpu} GPUs of {args.gpu_gb:g} GB; job and load times from the plan"
        + (f" ({args.load_s:g} s a load)" if args.load_s is not None else "")
        + ":"
    )
    for m in plan.models:
        say(f"  {m.model}: {m.seconds or 0:.0f} s, a load {m.load_seconds or 0:.0f} s ({m.time_basis.split(';')[0]})")
    say()
    rows = _schedules(
        jobs,
        cards,
        seconds,
        loads,
        last,
        probe_tokens / judge_tokens if judge_tokens else 0.0,
        args.gpu_gb,
        replicas=not args.no_replicas,
        say=say,
    )
    if args.json:

        def table(found: list[tuple[int, float, int, float, float]]) -> dict[str, dict[str, float]]:
            return {
                str(n): {
                    "makespan_h": round(makespan / 3600, 3),
                    "speedup": round(speedup, 3),
                    "loads": loads,
                    "max_idle_share": round(idle, 3),
                }
                for n, makespan, loads, speedup, idle in found
            }

        plain = (
            rows
            if args.no_replicas
            else _schedules(
                jobs, cards, seconds, loads, last, probe_tokens / judge_tokens if judge_tokens else 0.0, args.gpu_gb, replicas=False
            )
        )
        print(json.dumps({"gpus": table(rows), "gpus_without_replicas": table(plain)}))
        return
    print("| GPUs | makespan (h) | loads | speedup over 1 GPU | most idle GPU |\n|---|---|---|---|---|")
    for n, makespan, loads, speedup, idle in rows:
        print(f"| {n} | {makespan / 3600:.2f} | {loads} | {speedup:.2f} | {idle:.1%} |")


def _schedules(
    jobs: Any,
    cards: dict[str, Any],
    seconds: dict[tuple[str, Stage], float],
    loads: Any,
    last: Any,
    probe_share: float,
    gpu_gb: float,
    replicas: bool,
    say: Any = lambda *a, **k: None,
) -> list[tuple[int, float, int, float, float]]:
    """The runner's schedule on 1, 2, 4 and 8 simulated GPUs: (GPUs, makespan s, loads, speedup, most idle share)."""
    base = None
    rows = []
    for n in (1, 2, 4, 8):
        groups = [DeviceGroup("gpu", (i,), (Gpu("simulated", gpu_gb, gpu_gb, i),)) for i in range(n)]
        check_placement(groups, list(cards.values()))
        run = simulate(
            jobs,
            groups,
            lambda m, g: g.holds(cards[m]),
            seconds,
            probe_share=probe_share,
            load_s=loads,
            last_system=last,
            replicas=replicas,
        )
        base = base or run.makespan
        idle = max(run.idle_share(g) for g in groups)
        rows.append((n, run.makespan, run.loads, base / run.makespan, idle))
        say(
            f"{n} GPU(s): makespan {run.makespan / 3600:.2f} h, {run.loads} loads, speedup {base / run.makespan:.2f}, "
            f"most idle GPU {idle:.1%} of the makespan"
        )
        for g in groups:
            spans = [s for s in run.spans if s.group == g]
            line = "; ".join(
                f"{s.job.model} {s.job.stage}{' replica' if s.replica else ''} "
                f"{s.start / 3600:.2f}-{s.end / 3600:.2f} h{'' if s.loaded else ' (same load)'}"
                for s in spans
            )
            say(f"  {g.label} (idle {run.idle_share(g):.1%}): {line}")
        say()
    return rows


if __name__ == "__main__":
    main()
