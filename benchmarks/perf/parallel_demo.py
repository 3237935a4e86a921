"""`make demo`'s run with models side by side (the default device groups) against one group at a time.

    python benchmarks/perf/parallel_demo.py [--rounds 2] [--out /tmp/parallel-demo]

Each round runs `dualjudge run benchmarks/demo.toml` twice into fresh run directories (so nothing is
answered from a cache), once with `engine.devices = "auto"` (on a 2-core machine: two groups of one core,
so the two models run at once) and once with `engine.devices = [[0]]` (one group: one model after the
other, on the core vLLM's own binding picks). The order alternates between rounds. Reported: each run's
wall time, the ratio parallel / one group per round, and whether both runs made the same work: the same
request keys, answers and verdicts (counts and keys), and how many texts differ (vLLM's batching is not
bit-invariant across batch compositions, and sampled answers then diverge).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from cli_child import ROOT, reset_signals  # beside this script

PLACEMENTS = {"parallel": '"auto"', "one group": "[[0]]"}
KEYS = {
    "answers": "variant_id, repeat, system_model, strategy",
    "verdicts": "variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind",
    "order_probe": "variant_id, repeat, judge_model, judge_variant, first_model, first_strategy, second_model, second_strategy",
    "padding_texts": "variant_id, repeat, system_model, strategy",
    "padding_probe": "variant_id, repeat, system_model, strategy, judge_model, judge_variant, kind",
}


def run(placement: str, folder: Path) -> dict[str, object]:
    config = folder / "demo.toml"
    text = (ROOT / "benchmarks" / "demo.toml").read_text()
    config.write_text(text.replace("[engine]\n", f"[engine]\ndevices = {PLACEMENTS[placement]}\n"))
    out = folder / "run"
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dualjudge.cli", "run", str(config), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=reset_signals,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{placement} run failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "placement": placement,
        "wall_s": round(wall, 1),
        "out": str(out),
        "jobs": manifest["jobs"],
        "requests": manifest["requests"],
    }


def contents(out: Path) -> dict[str, dict[tuple, object]]:
    with sqlite3.connect(out / "results.sqlite") as con:
        tables = {t: {tuple(r[:-1]): r[-1] for r in con.execute(f"SELECT {cols}, status FROM {t}")} for t, cols in KEYS.items()}
        tables["request keys"] = {(k,): None for (k,) in con.execute("SELECT DISTINCT key FROM request_log WHERE ok = 1")}
        tables["answer texts"] = {tuple(r[:4]): r[4] for r in con.execute(f"SELECT {KEYS['answers']}, text FROM answers")}
        tables["verdict values"] = {
            tuple(r[:7]): (r[7], r[8]) for r in con.execute(f"SELECT {KEYS['verdicts']}, overall, equivalent FROM verdicts")
        }
    return tables


def compare(a: Path, b: Path) -> dict[str, object]:
    x, y = contents(a), contents(b)
    out: dict[str, object] = {}
    for name in KEYS:
        out[name] = {"counts": (len(x[name]), len(y[name])), "same keys": set(x[name]) == set(y[name])}
    out["request keys"] = {
        "counts": (len(x["request keys"]), len(y["request keys"])),
        "same keys": set(x["request keys"]) == set(y["request keys"]),
        "only in one": len(set(x["request keys"]) ^ set(y["request keys"])),
    }
    shared = set(x["answer texts"]) & set(y["answer texts"])
    out["answer texts differing"] = sum(x["answer texts"][k] != y["answer texts"][k] for k in shared)
    shared = set(x["verdict values"]) & set(y["verdict values"])
    out["verdict values differing"] = sum(x["verdict values"][k] != y["verdict values"][k] for k in shared)
    return out


def overlap(jobs: list[dict[str, object]]) -> float:
    """Seconds during which at least two jobs ran at once."""
    spans = sorted((float(j["started_at"]), float(j["ended_at"])) for j in jobs if j["ended_at"])  # type: ignore[arg-type]
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    busy, last, total = 0, 0.0, 0.0
    for t, step in events:
        if busy >= 2:
            total += t - last
        busy += step
        last = t
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("/tmp/parallel-demo"))
    args = ap.parse_args()
    results = []
    for r in range(args.rounds):
        order = ["parallel", "one group"] if r % 2 == 0 else ["one group", "parallel"]
        pair = {}
        for placement in order:
            folder = args.out / f"round{r + 1}-{placement.replace(' ', '-')}"
            folder.mkdir(parents=True, exist_ok=False)
            pair[placement] = run(placement, folder)
            print(f"round {r + 1}, {placement}: {pair[placement]['wall_s']} s", flush=True)
        same = compare(Path(str(pair["parallel"]["out"])), Path(str(pair["one group"]["out"])))
        results.append(
            {
                "round": r + 1,
                "order": order,
                "runs": pair,
                "ratio": round(float(pair["parallel"]["wall_s"]) / float(pair["one group"]["wall_s"]), 3),  # type: ignore[arg-type]
                "parallel overlap_s": round(overlap(pair["parallel"]["jobs"]), 1),
                "same work": same,
            }
        )  # type: ignore[arg-type]
        print(json.dumps(results[-1], indent=1, default=str), flush=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print(f"\n{'round':>5} {'order':<22} {'parallel s':>10} {'one group s':>11} {'ratio':>6}")
    for res in results:
        runs = res["runs"]
        print(
            f"{res['round']:>5} {' then '.join(res['order']):<22} {runs['parallel']['wall_s']:>10} "
            f"{runs['one group']['wall_s']:>11} {res['ratio']:>6}"
        )


if __name__ == "__main__":
    main()
