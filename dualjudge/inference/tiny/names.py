"""The tiny architectures' names, apart from their builders: what a model card may name as its processor (cards.py)
without importing the builders, which read the cards' templates."""

from __future__ import annotations

from typing import Literal

ArchName = Literal["llava", "qwen2.5-vl", "gemma3", "idefics3", "smolvlm", "internvl", "pixtral"]
