"""How to place vLLM-CPU servers on this machine's cores (the measurement behind the CPU default of
`engine.devices`).

    python benchmarks/perf/cpu_binding.py [--requests 48]

Three placements, each serving real quality-judge requests (JSON-schema constrained, greedy, 32 in
flight) from the two small models:
- `auto`: vLLM's own binding (one core per server on x86 with SMT off, the other core reserved), one
  model after the other (what the runner did before device groups);
- `all cores`: each server bound to every core, one model after the other;
- `one core each`: both servers at once, each bound to its own core.
Reported: the wall time of serving both models' requests (start-up excluded, measured separately) and
the ratio of each placement to `auto`, all in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from engine_throughput import requests  # the same quality-judge requests (same folder)

from dualjudge.inference.cards import get_card
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine
from dualjudge.inference.types import GenerationRequest
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.weights import fetch

MODELS = ("smollm2-135m-instruct", "gemma-3-270m")


async def serve(server: VllmServer, reqs: list[GenerationRequest]) -> tuple[float, int]:
    engine = EndpointEngine(server.card.name, [Endpoint(server.base_url, server.api_key)], server.card.name, concurrency=32)
    t0 = time.perf_counter()
    try:
        results = await asyncio.gather(*[engine.generate(r) for r in reqs])
    finally:
        await engine.close()
    return time.perf_counter() - t0, sum(not r.ok for r in results)


def server(name: str, logs: Path, bind: str | None) -> VllmServer:
    card = get_card(name)
    return VllmServer(
        card, fetch(card, log=lambda _: None), log_dir=logs, placement={"VLLM_CPU_OMP_THREADS_BIND": bind} if bind else {}
    )


def one_after_the_other(logs: Path, bind: str | None, reqs: list[GenerationRequest]) -> tuple[float, float, int]:
    serving = starting = 0.0
    failed = 0
    for name in MODELS:
        s = server(name, logs, bind)
        s.start()
        starting += s.started_s or 0.0
        try:
            took, bad = asyncio.run(serve(s, reqs))
        finally:
            s.stop()
        serving += took
        failed += bad
    return serving, starting, failed


def side_by_side(logs: Path, reqs: list[GenerationRequest]) -> tuple[float, float, int]:
    cores = sorted(os.sched_getaffinity(0))
    servers = [server(name, logs, str(cores[i % len(cores)])) for i, name in enumerate(MODELS)]
    for s in servers:
        s.launch()
    try:
        for s in servers:
            s.wait_ready()
        starting = max(s.started_s or 0.0 for s in servers)

        async def both() -> list[tuple[float, int]]:
            return await asyncio.gather(*[serve(s, reqs) for s in servers])

        t0 = time.perf_counter()
        outcomes = asyncio.run(both())
        return time.perf_counter() - t0, starting, sum(bad for _, bad in outcomes)
    finally:
        for s in servers:
            s.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=48, help="requests per model")
    args = ap.parse_args()
    reqs = requests(args.requests)
    logs = Path(tempfile.mkdtemp(prefix="bench-binding-"))
    cores = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    rows = [
        ("auto (one core), one model at a time", *one_after_the_other(logs, None, reqs)),
        (f"all cores ({cores}), one model at a time", *one_after_the_other(logs, cores, reqs)),
        ("one core each, both models at once", *side_by_side(logs, reqs)),
    ]
    base = rows[0][1]
    print(f"{len(reqs)} quality-judge requests per model, {len(MODELS)} models, {os.cpu_count()} cores; logs {logs}")
    print(f"{'placement':<42} {'serving s':>9} {'ratio':>6} {'start-up s':>10} {'failed':>6}")
    for name, serving, starting, failed in rows:
        print(f"{name:<42} {serving:9.1f} {serving / base:6.2f} {starting:10.1f} {failed:>6}")


if __name__ == "__main__":
    main()
