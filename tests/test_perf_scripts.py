"""The performance scripts that tests can run in seconds do run, and print what their documentation
promises (their figures are measured, never asserted: these machines are shared)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_runner_overhead_json_measures_the_whole_runner_against_an_instant_endpoint():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "perf" / "runner_overhead.py"), "--json", "--requests", "300"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result) >= {"requests_per_s", "cpu_ms_per_request"} and result["requests"] == 300
    assert result["requests_per_s"] > 0 and result["cpu_ms_per_request"] > 0


def test_placement_json_simulates_the_cross_family_study_with_and_without_replicas():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "perf" / "placement.py"), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    both = json.loads(done.stdout.strip().splitlines()[-1])
    spare, plain = both["gpus"], both["gpus_without_replicas"]
    assert set(spare) == set(plain) == {"1", "2", "4", "8"}
    assert all(set(g) >= {"makespan_h", "speedup", "loads", "max_idle_share"} for g in spare.values())
    assert spare["1"] == plain["1"] and spare["1"]["speedup"] == 1.0  # one GPU: the same schedule
    assert 0.5 < spare["1"]["makespan_h"] < 4  # priced on an H100 (this machine's CPU would take months)
    for n in ("4", "8"):  # a simulation (no timing): spare groups shorten it and keep every GPU busy
        assert spare[n]["makespan_h"] < plain[n]["makespan_h"]
        assert spare[n]["max_idle_share"] < plain[n]["max_idle_share"]
    assert spare["4"]["speedup"] >= 3.7 and spare["8"]["speedup"] >= 6.5 and spare["8"]["max_idle_share"] <= 0.15
