"""What earlier sessions measured, for `dualjudge plan`: a model's seconds per request (the time it was busy
over the requests it answered) and its mean completion tokens per kind of request (from the caches), with
the stated defaults where nothing was measured."""

from __future__ import annotations

import math
from collections.abc import Iterable

from dualjudge.config import RunConfig
from dualjudge.runs.counting import StageCount
from dualjudge.storage.store import Store

# completion tokens a request is expected to take when no cache has measured the model: a description and
# a SIGN_TYPE line (CoT and MA steps run longer, answers average out near this); a JSON verdict whose
# reasoning is bounded; a padding restatement
KIND_DEFAULTS = {"answers": 160, "padding": 120, "judge": 110}
FREE_TEXT_STAGES = ("answers", "padding")
MIN_MEASURED = 5  # requests a session must have sent before its pace counts


def busy_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """Wall time covered by (start, end) intervals: the time a model was answering, however many at once."""
    total, end = 0.0, -math.inf
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def measured_pace(stores: list[Store], model: str) -> tuple[float, int, int] | None:
    """Seconds per request for a model in earlier sessions: the time it was busy (the union of its
    requests' [sent, answered] intervals, so other models' stages and loading do not count) over the
    requests it answered, with the requests and sessions it rests on."""
    seconds, requests, sessions = 0.0, 0, 0
    for store in stores:
        if not store.has_table("request_log"):
            continue
        by_session: dict[str, list[tuple[float, float]]] = {}
        for session, at, latency in store.db.execute(
            "SELECT session, at, latency_s FROM request_log WHERE model = ? AND ok = 1", (model,)
        ):
            by_session.setdefault(session, []).append((at - (latency or 0.0), at))
        for spans in by_session.values():
            busy = busy_seconds(spans)
            if len(spans) >= MIN_MEASURED and busy > 0:
                seconds, requests, sessions = seconds + busy, requests + len(spans), sessions + 1
    return (seconds / requests, requests, sessions) if requests else None


def measured_completion(stores: list[Store], model: str) -> dict[str, tuple[float, int]]:
    """Mean completion tokens of the model's cached responses, per kind ("answers": free text and
    regex-constrained; "judge": JSON), with how many responses each rests on."""
    out: dict[str, tuple[float, int]] = {}
    for kind, where in (
        ("judge", "constraint_kind = 'json'"),
        ("answers", "(constraint_kind IS NULL OR constraint_kind != 'json')"),
    ):
        total, n = 0.0, 0
        for store in stores:
            tokens, replies = store.cached_tokens(model, where)
            total, n = total + tokens, n + replies
        if n >= MIN_MEASURED:
            out[kind] = (total / n, n)
    return out


def expected_answer_tokens(config: RunConfig, stores: list[Store]) -> int:
    """Tokens an answer not yet generated is expected to hold: the systems' cached mean, else the default."""
    total, n = 0.0, 0
    for model in config.systems.models:
        mean, count = measured_completion(stores, model).get("answers", (0.0, 0))
        total, n = total + mean * count, n + count
    expected = total / n if n else KIND_DEFAULTS["answers"]
    return max(1, min(round(expected), config.systems.max_tokens))


def expected_completion(rows: list[StageCount], measured: dict[str, tuple[float, int]]) -> tuple[int, str]:
    """Completion tokens the rows' requests still to send are expected to take, and from what."""
    total, bases = 0.0, set()
    for r in rows:
        if r.to_send <= 0:
            continue
        kind = "answers" if r.stage == "answers" else "padding" if r.stage == "padding" else "judge"
        mean_of = "answers" if kind in FREE_TEXT_STAGES else "judge"
        if mean_of in measured:
            mean, n = measured[mean_of]
            bases.add(f"{mean_of}: measured mean {mean:.0f} tokens over {n} cached responses")
        else:
            mean = KIND_DEFAULTS[kind]
            bases.add(f"{kind}: default {mean} tokens")
        bound = r.completion_tokens / r.to_send if r.completion_tokens else mean
        total += r.to_send * min(mean, bound)
    return round(total), "; ".join(sorted(bases)) or "nothing to send"
