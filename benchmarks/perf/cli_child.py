"""The dualjudge CLI as a child of a benchmark script (plan_cpu.py, plan_examples.py, parallel_demo.py import it
from beside them): started from the repository with SIGINT and SIGTERM at their defaults, whatever the caller
inherited (a benchmark started in the background has them ignored, and so would its children)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def reset_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def dualjudge(*args: str) -> subprocess.CompletedProcess[str]:
    """`dualjudge ARGS`, run to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "dualjudge.cli", *args], cwd=ROOT, capture_output=True, text=True, preexec_fn=reset_signals
    )
