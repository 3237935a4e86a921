"""The performance scripts that tests can run in seconds do run, and print what their documentation
promises (their figures are measured, never asserted: these machines are shared)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_runner_overhead_json_measures_the_whole_runner_against_an_instant_endpoint():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "perf" / "runner_overhead.py"), "--json",
                           "--requests", "300"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result) >= {"requests_per_s", "cpu_ms_per_request"} and result["requests"] == 300
    assert result["requests_per_s"] > 0 and result["cpu_ms_per_request"] > 0
