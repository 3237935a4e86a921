"""Make PyPI's torchvision importable beside torch's CPU build (for vLLM's image processors on CPU).

PyPI's torchvision wheel is a CUDA build: next to torch `+cpu` its compiled ops cannot load and
`import torchvision` dies registering a fake kernel for `torchvision::nms`. Defining the two op
schemas before torchvision loads lets the pure-Python parts (the image transforms vLLM uses)
import. This module installs that fix into a virtual environment as a `.pth` start-up hook (it is
run by `make` on CPU machines; GPU installs never need it) and removes torchaudio and torchcodec,
whose CUDA builds cannot load either and which no dualjudge path uses.

    python -m dualjudge.inference.cpu_shim          # install into the running interpreter's venv
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

HOOK_MODULE = "_dualjudge_tv_shim"
HOOK_SOURCE = '''"""Installed by dualjudge (python -m dualjudge.inference.cpu_shim): lets torchvision import on torch +cpu."""
import importlib.abc
import sys


class _TorchvisionOnCpu(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch

        if torch.version.cuda is None:
            global _LIB
            try:
                _LIB = torch.library.Library("torchvision", "DEF")
                _LIB.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
                _LIB.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            except RuntimeError:
                pass  # already defined (a working torchvision build)
        return None


sys.meta_path.insert(0, _TorchvisionOnCpu())
'''


def install(site_packages: Path | None = None) -> list[str]:
    site = site_packages or Path(sysconfig.get_paths()["purelib"])
    (site / f"{HOOK_MODULE}.py").write_text(HOOK_SOURCE)
    (site / f"{HOOK_MODULE}.pth").write_text(f"import {HOOK_MODULE}\n")
    removed = []
    for dist in ("torchaudio", "torchcodec"):
        done = subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", dist], capture_output=True, text=True)
        if done.returncode == 0 and "Skipping" not in done.stderr + done.stdout:
            removed.append(dist)
    return removed


def main() -> None:
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to do")
        return
    if torch.version.cuda is not None:
        print(f"torch {torch.__version__} is a CUDA build: no shim needed")
        return
    removed = install()
    check = subprocess.run(
        [sys.executable, "-c", "import torchvision, torchvision.transforms; print(torchvision.__version__)"],
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        print("torchvision still fails to import:\n" + check.stderr[-2000:], file=sys.stderr)
        sys.exit(1)
    extra = f"; removed {', '.join(removed)}" if removed else ""
    print(f"torchvision {check.stdout.strip()} imports beside torch {torch.__version__}{extra}")


if __name__ == "__main__":
    main()
