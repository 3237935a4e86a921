"""Write the simulated cross-family verdict table that `make demo` analyses, and its planted truth.

    python benchmarks/simulated/make.py [--check]

The demo's two real models are two families, so their run can show neither a self-preference index nor
a calibrated system ranking. This table, made by the project's simulator (benchmarks/stats/simulator.py),
has four system models of four families, each also a judge, four strategies, and one judge with a strong
self-preference that turns the naive ranking around. planted.json beside it states what was planted and
the truth the estimates should recover (for the systems: each system's expected verdict, with every bias
taken out, over the answers this seed drew, averaged over the judges); the analysis reads it and labels the report as simulated.
With --check, nothing is written: the files are compared with a fresh simulation (exit 1 if they differ).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "stats"))
from simulator import Scenario, sample_system_truth, simulate, system_scenarios  # noqa: E402

TABLE = HERE / "cross-family.parquet"
PLANTED = HERE / "planted.json"
SEED = 7


def scenario() -> Scenario:
    strong = next(s for s in system_scenarios() if s.name == "one strong self-preferring judge")
    return replace(
        strong,
        slope={"qwen-7b": 1.0, "gemma-12b": 1.2, "llama-11b": 0.8, "pixtral-12b": 1.0},
        noise={"qwen-7b": 1.0, "gemma-12b": 0.8, "llama-11b": 1.2, "pixtral-12b": 1.0},
    )


def build() -> tuple[pd.DataFrame, dict[str, object]]:
    sc = scenario()
    frame, truth = simulate(sc, SEED)
    judges = list(sc.judges)
    planted = {
        "system model quality (points above a base of 6)": dict(sc.quality),
        "strategy effect (points)": dict(sc.strategies),
        "judge leniency (points)": {j: sc.leniency.get(j, 0.0) for j in judges},
        "judge scale (slope)": {j: sc.slope.get(j, 1.0) for j in judges},
        "judge noise (sd, points)": {j: sc.noise.get(j, 1.0) for j in judges},
        "self-preference on own answers (points)": {j: sc.self_effect.get(j, 0.0) for j in judges},
    }
    record = {
        "description": (
            f"{len(sc.generators)} system models of {len(set(sc.generators.values()))} families, each also a "
            f"judge, {len(sc.strategies)} strategies, {sc.n_signs} signs x {sc.items_per_sign} variants; "
            f"{sc.note}"
        ),
        "made_by": "python benchmarks/simulated/make.py (benchmarks/stats/simulator.py)",
        "scenario": sc.name,
        "seed": SEED,
        "planted": planted,
        "truth_self_preference": {o: {j: t["estimate"] for j, t in per.items()} for o, per in truth.items()},
        "truth_systems": sample_system_truth(sc, SEED),
    }
    return frame, record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    frame, record = build()
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    if args.check:
        same = TABLE.is_file() and PLANTED.is_file() and PLANTED.read_text() == text and pd.read_parquet(TABLE).equals(frame)
        print("the shipped simulated table matches the simulator" if same else "the shipped simulated table differs")
        sys.exit(0 if same else 1)
    frame.to_parquet(TABLE, index=False)
    PLANTED.write_text(text)
    print(f"wrote {TABLE} ({len(frame)} rows) and {PLANTED}")


if __name__ == "__main__":
    main()
