"""Cache replay at paper size: 4,680 system answers (390 variants x 4 systems x 3 repeats) and 9,360
verdicts per judge model, answered entirely from the response cache in a new run directory.

    python benchmarks/perf/cache_replay.py

The first pass fills a shared cache through a deterministic in-memory engine (no model involved;
this benchmark measures the runner, store and cache, not inference). The second pass is timed: a
new run directory, the same configuration and cache file, so every request is a cache hit and no
model is loaded. Target (issue 5): under 60 s.
"""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

from dualjudge.config import RunConfig
from dualjudge.inference.types import GenerationResult
from dualjudge.studies.job import run_job


class Scripted:
    def __init__(self, identity: str) -> None:
        self.model_identity = identity

    async def generate(self, request):  # type: ignore[no-untyped-def]
        if request.constraint is not None and request.constraint.kind == "json":
            title = request.constraint.schema["title"]
            text = (
                json.dumps({"reasoning": "r", "accuracy": 7, "completeness": 6, "relevance": 8})
                if title == "QualityVerdict"
                else json.dumps({"reasoning": "r", "equivalent": True})
            )
        else:
            text = f"answer {request.sampling.seed}\nSIGN_TYPE: no_entry"
        return GenerationResult(
            text,
            finish_reason="stop",
            prompt_tokens=100,
            completion_tokens=20,
            constraint_kind=request.constraint.kind if request.constraint else None,
        )

    async def close(self) -> None:
        pass


class ScriptedEngines:
    """The runner's engine factory, answering instantly."""

    async def identity(self, card):  # type: ignore[no-untyped-def]
        return f"{card.name}@bench"

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        yield Scripted(f"{card.name}@bench")


def main() -> None:
    engines = ScriptedEngines()
    with tempfile.TemporaryDirectory() as d:
        cfg = RunConfig(
            **{
                "run": {"name": "replay", "seed": 0},
                "testbed": {"repeats": 3, "modality": "image", "size": 128},
                "systems": {"models": ["qwen2.5-vl-7b-instruct"], "strategies": ["sa", "cot", "coi", "ma"]},
                "judges": {"models": ["qwen2.5-vl-7b-instruct"]},
                "engine": {"cache": str(Path(d) / "shared.sqlite"), "concurrency": 64},
            }
        )
        t0 = time.perf_counter()
        first = run_job(cfg, Path(d) / "first", engines=engines)
        fill = time.perf_counter() - t0
        t0 = time.perf_counter()
        second = run_job(cfg, Path(d) / "second", engines=engines)
        replay = time.perf_counter() - t0
    print(
        f"fill: {fill:.1f} s; replay from cache: {replay:.1f} s for {second.counts['answers']} answers and "
        f"{second.counts['verdicts']} verdicts ({second.report.cache_hits:,} cache hits, "
        f"{second.report.sessions_requests} requests sent, models loaded: {second.report.models_loaded or 'none'}); "
        f"target < 60 s"
    )
    assert first.counts == second.counts


if __name__ == "__main__":
    main()
