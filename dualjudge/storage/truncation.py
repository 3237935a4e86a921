"""Answers cut at max_tokens: per system model, how many of its answers had a call that stopped at the token limit
(the engine's finish reason "length"), and what max_tokens would have let 95% of its calls finish.

A model whose answers are cut is graded on half an answer, and a constrained final line may be forced in before the
model was done: a run, `status` and the report say so, with the bound that would have sufficed."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dualjudge.storage.store import Store

SHARE = 0.95  # the share of calls the suggested max_tokens lets finish


@dataclass(frozen=True)
class Truncation:
    """One system model's answers against its max_tokens."""

    answers: int  # answers with text
    cut: int  # of them, answers one of whose calls stopped at max_tokens
    max_tokens: int
    suffices: int | None  # the max_tokens that lets 95% of its calls finish (None: over 5% were cut, so it is not known)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def words(self, model: str) -> str:
        share = f"{self.cut} of {self.answers} answers of {model} were cut at max_tokens = {self.max_tokens}"
        if self.suffices is not None:
            return f"{share}; max_tokens = {self.suffices} would have let 95% of its calls finish"
        return f"{share}; over 5% of its calls were cut, so raise max_tokens well above {self.max_tokens} and run again"


def truncation(store: Store, max_tokens: int) -> dict[str, Truncation]:
    """Per system model with answers, from the run's answers and the replies its cache kept for them."""
    calls: dict[str, list[str]] = defaultdict(list)
    answers: dict[str, list[list[str]]] = defaultdict(list)
    for model, keys in store.db.execute("SELECT system_model, request_keys FROM answers WHERE text IS NOT NULL"):
        own = [k for k in json.loads(keys or "[]") if isinstance(k, str)]
        answers[model].append(own)
        calls[model] += own
    out = {}
    for model, per_answer in sorted(answers.items()):
        finished = store.cache_finish(calls[model])  # key -> (finish reason, completion tokens)
        cut = sum(any(finished.get(k, ("", 0))[0] == "length" for k in keys) for keys in per_answer)
        tokens = np.array([t for reason, t in finished.values()], dtype=float)
        suffices = None
        if len(tokens):
            p95 = float(np.quantile(tokens, SHARE, method="higher"))
            if p95 < max_tokens:  # below the limit, the quantile is observed, not censored
                suffices = max(1, math.ceil(p95))
        out[model] = Truncation(len(per_answer), int(cut), max_tokens, suffices if cut else None)
    return out
