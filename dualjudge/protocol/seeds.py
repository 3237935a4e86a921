"""Per-request seeds derived from the run seed, so repeats differ and reruns are identical; and seeded
ranks, which order samples (probe pairs, the human check) the same way on every rerun."""

from __future__ import annotations

import hashlib


def _digest(seed: int, parts: tuple[object, ...]) -> bytes:
    return hashlib.sha256("|".join([str(seed), *(str(p) for p in parts)]).encode()).digest()


def derive_seed(run_seed: int, *parts: object) -> int:
    """A 31-bit seed (vLLM and torch accept it) from the run seed and the request's identity."""
    return int.from_bytes(_digest(run_seed, parts)[:4], "big") & 0x7FFFFFFF


def seeded_rank(seed: int, *parts: object) -> str:
    """A sort key from the seed and an item's identity: independent of row order, stable across reruns."""
    return _digest(seed, parts).hex()
