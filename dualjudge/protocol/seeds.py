"""Per-request seeds derived from the run seed, so repeats differ and reruns are identical."""

from __future__ import annotations

import hashlib


def derive_seed(run_seed: int, *parts: object) -> int:
    """A 31-bit seed (vLLM and torch accept it) from the run seed and the request's identity."""
    key = "|".join([str(run_seed), *(str(p) for p in parts)]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF
