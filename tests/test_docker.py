"""The Docker image holds every folder the package reads at run time, bakes in no offline switch, and is
built on the vLLM image of the version the `gpu` extra pins (docker itself cannot run here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _copied() -> set[str]:
    """The destinations (relative to WORKDIR) of the Dockerfile's COPY lines."""
    out: set[str] = set()
    for line in DOCKERFILE.splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"]:
            sources, dest = parts[1:-1], parts[-1]
            out |= set(sources) if dest.endswith("/") and dest in ("./", ".") else {dest.removeprefix("./")}
    return out


def _project_root_folders() -> set[str]:
    """Every `project_root() / "name"` the package opens (its first path segment)."""
    found: set[str] = set()
    for path in (ROOT / "dualjudge").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Div)
                and isinstance(node.left, ast.Call)
                and getattr(node.left.func, "id", None) == "project_root"
                and isinstance(node.right, ast.Constant)
            ):
                found.add(str(node.right.value).split("/")[0])
    return found


def test_the_image_copies_every_folder_the_package_reads_at_run_time():
    used = _project_root_folders()
    assert {"data", "prompts", "models", "web"} <= used  # the scan itself finds them
    assert used <= _copied(), f"missing from the Dockerfile: {used - _copied()}"
    assert {"dualjudge", "benchmarks", "pyproject.toml"} <= _copied()  # the package and the shipped configs


def test_the_image_does_not_forbid_fetching_weights():
    env_lines = [line for line in DOCKERFILE.splitlines() if line.startswith("ENV") or line.startswith("    ")]
    assert not any("HF_HUB_OFFLINE" in line for line in env_lines)


def test_the_image_runs_unprivileged_under_an_init_and_keeps_vllms_compile_cache():
    assert re.search(r"^USER 1000:1000$", DOCKERFILE, re.M)  # never root
    assert re.search(r'^ENTRYPOINT \["tini", "--", "dualjudge"\]$', DOCKERFILE, re.M)
    cache_root = re.search(r"VLLM_CACHE_ROOT=(\S+)", DOCKERFILE)
    assert cache_root and f":{cache_root.group(1)}" in DOCKERFILE  # the documented run mounts it
    readme = (ROOT / "docs" / "models.md").read_text()
    assert '--user "$(id -u):$(id -g)"' in readme and "--init" in readme


def test_the_image_is_the_vllm_the_gpu_extra_pins():
    pinned = re.search(r'gpu\s*=\s*\["vllm==([^"]+)"\]', (ROOT / "pyproject.toml").read_text())
    image = re.search(r"^FROM vllm/vllm-openai:v(\S+)$", DOCKERFILE, re.M)
    assert pinned and image and image.group(1) == pinned.group(1)


def test_the_documented_volumes_hold_the_shared_response_cache():
    cache = re.search(r'^cache = "([^"]+)"', (ROOT / "benchmarks" / "cross-family.toml").read_text(), re.M)
    assert cache is not None
    mounted = re.findall(r"-v \S+:(\S+)", DOCKERFILE)
    home = cache.group(1).replace("~", "/home/dualjudge")
    assert any(home.startswith(m.rstrip("/") + "/") for m in mounted), (home, mounted)
    readme = (ROOT / "docs" / "models.md").read_text()  # the container's page
    assert all(m in readme for m in mounted)
