"""Runner overhead: the runner's path (EndpointEngine + caching caller + SQLite store + ordered workers)
against a plain asyncio loop of OpenAI-client calls, same server, same kind of requests, same
concurrency. Reports the throughput ratio (target >= 0.95).

    python benchmarks/perf/runner_overhead.py [--requests 96] [--concurrency 32]
    python benchmarks/perf/runner_overhead.py --json [--requests 4000] [--concurrency 64]

With --json, no model runs: the whole runner path (requests built as a judges step builds them, the
engine's HTTP path, the caching caller, the store's batched commits, the ordered workers) sends
--requests judge requests to an endpoint that answers at once (instant_endpoint.py, in another
process), and prints {"requests_per_s": R, "cpu_ms_per_request": C} (C: this process's CPU time per
request). Goal R >= 1,500 on the 2-core CPU machine: the runner then never caps eight GPU servers.

Both sides send the same requests: each request set is run by both, once with the plain loop first
and once with the runner first (so vLLM's prefix cache, which favours whoever comes second, is
balanced), over --rounds pairs of sets; the ratio compares the summed times. The
runner's own CPU cost per request (cache key, SQLite lookups and writes, worker queue) is also
measured against an instant in-memory engine, which isolates it from server noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

from dualjudge.inference.cards import get_card
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine, openai_messages, structured_outputs
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.weights import fetch
from dualjudge.protocol.judges import build_judge_request
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.progress import QuietProgress, run_in_order
from dualjudge.storage.rows import VerdictRow
from dualjudge.storage.store import Store
from dualjudge.testbed.catalogue import default_catalogue


def requests(tag: str, n: int):  # type: ignore[no-untyped-def]
    signs = default_catalogue().signs
    return [
        build_judge_request("quality", signs[i % len(signs)], f"Answer {tag}-{i}: {signs[(i * 7) % 30].caption}.") for i in range(n)
    ]


async def plain(server: VllmServer, name: str, reqs, concurrency: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0)
    slots = asyncio.Semaphore(concurrency)

    async def one(r):  # type: ignore[no-untyped-def]
        async with slots:
            resp = await client.chat.completions.create(
                model=name,
                messages=openai_messages(r),
                temperature=r.sampling.temperature,
                max_tokens=r.sampling.max_tokens,
                seed=r.sampling.seed,
                extra_body=structured_outputs(r),
            )
            return resp.usage.completion_tokens

    t0 = time.perf_counter()
    tokens = sum(await asyncio.gather(*[one(r) for r in reqs]))
    elapsed = time.perf_counter() - t0
    await client.close()
    return elapsed, tokens


async def runner_path(server: VllmServer, name: str, identity: str, reqs, concurrency: int, db: Path):  # type: ignore[no-untyped-def]
    engine = EndpointEngine(name, [Endpoint(server.base_url, server.api_key)], identity, concurrency=concurrency)
    store = Store(db)
    caller = CachingCaller(store, name, identity, "bench", engine)

    async def work(r) -> int:  # type: ignore[no-untyped-def]
        res = await caller(r)
        store.record(
            VerdictRow(
                variant_id=r.messages[1].text[:40],
                repeat=0,
                system_model="m",
                strategy="sa",
                judge_model=name,
                judge_variant="holistic",
                kind="quality",
                status="ok",
                completion_tokens=res.completion_tokens,
            )
        )
        return res.completion_tokens

    t0 = time.perf_counter()
    await run_in_order(reqs, work, concurrency, QuietProgress().stage("bench", len(reqs)))
    elapsed = time.perf_counter() - t0
    tokens = caller.usage.completion_tokens
    await engine.close()
    store.close()
    return elapsed, tokens


async def runner_cost(db: Path, n: int) -> float:
    """Seconds per request the runner path adds, with an engine that answers instantly."""
    from dualjudge.inference.types import GenerationResult

    class Instant:
        model_identity = "instant"

        async def generate(self, request):  # type: ignore[no-untyped-def]
            return GenerationResult(
                '{"reasoning":"r","accuracy":7,"completeness":7,"relevance":7}',
                finish_reason="stop",
                prompt_tokens=900,
                completion_tokens=40,
                constraint_kind="json",
            )

    store = Store(db)
    caller = CachingCaller(store, "m", "instant", "bench", Instant())  # type: ignore[arg-type]

    async def work(r) -> int:  # type: ignore[no-untyped-def]
        res = await caller(r)
        store.record(
            VerdictRow(
                variant_id=r.messages[1].text[:40],
                repeat=0,
                system_model="m",
                strategy="sa",
                judge_model="m",
                judge_variant="holistic",
                kind="quality",
                status="ok",
                completion_tokens=res.completion_tokens,
            )
        )
        return 0

    reqs = requests("cost", n)
    t0 = time.perf_counter()
    await run_in_order(reqs, work, 32, QuietProgress().stage("bench", len(reqs)))
    store.close()
    return (time.perf_counter() - t0) / n


async def instant_path(url: str, n: int, concurrency: int, db: Path) -> tuple[float, float]:
    """Wall and CPU seconds for `n` judge requests through the runner's path to an instant endpoint."""
    engine = EndpointEngine("instant", [Endpoint(url)], "instant", concurrency=concurrency)
    store = Store(db)
    caller = CachingCaller(store, "instant", "instant", "bench", engine)
    signs = default_catalogue().signs

    async def work(i: int) -> int:
        request = build_judge_request("quality", signs[i % len(signs)], f"Answer {i}: {signs[(i * 7) % 30].caption}.")
        res = await caller(request)
        store.record(
            VerdictRow(
                variant_id=f"v{i}",
                repeat=0,
                system_model="m",
                strategy="sa",
                judge_model="instant",
                judge_variant="holistic",
                kind="quality",
                status="ok",
                completion_tokens=res.completion_tokens,
            )
        )
        return res.completion_tokens

    t0, c0 = time.perf_counter(), time.process_time()
    await run_in_order(list(range(n)), work, engine.capacity, QuietProgress().stage("bench", n))
    store.flush()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await engine.close()
    store.close()
    return wall, cpu


def instant(n: int, concurrency: int) -> dict[str, float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("instant_endpoint.py")), str(port)])
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(200):
            try:
                httpx.get(f"{url}/models", timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        with tempfile.TemporaryDirectory() as d:
            asyncio.run(instant_path(url, 200, concurrency, Path(d) / "warm.sqlite"))  # imports, connections
            wall, cpu = asyncio.run(instant_path(url, n, concurrency, Path(d) / "store.sqlite"))
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {
        "requests_per_s": round(n / wall, 1),
        "cpu_ms_per_request": round(1000 * cpu / n, 3),
        "requests": n,
        "concurrency": concurrency,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=None)
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="the whole runner against an instant endpoint; prints JSON")
    args = ap.parse_args()
    if args.json:
        print(json.dumps(instant(args.requests or 4000, args.concurrency or 64)))
        return
    args.requests = args.requests or 96
    args.concurrency = args.concurrency or 32
    card = get_card("smollm2-135m-instruct")
    weights = fetch(card, log=lambda _: None)
    with tempfile.TemporaryDirectory() as d:
        server = VllmServer(card, weights, log_dir=Path(d))
        server.start()
        try:
            asyncio.run(plain(server, card.name, requests("warm", 16), args.concurrency))
            totals = {"plain": [0.0, 0], "runner": [0.0, 0]}
            schedule = []
            for r in range(args.rounds):
                schedule += [(f"a{r}", "plain"), (f"a{r}", "runner"), (f"b{r}", "runner"), (f"b{r}", "plain")]
            for i, (tag, kind) in enumerate(schedule):
                reqs = requests(tag, args.requests)
                if kind == "plain":
                    t, n = asyncio.run(plain(server, card.name, reqs, args.concurrency))
                else:
                    t, n = asyncio.run(
                        runner_path(server, card.name, weights.identity, reqs, args.concurrency, Path(d) / f"r{i}.sqlite")
                    )
                totals[kind][0] += t
                totals[kind][1] += n
                print(f"pass {i + 1} {kind:<6} set {tag}: {args.requests} requests in {t:.1f} s ({n / t:.1f} tok/s)")
        finally:
            server.stop()
    own = asyncio.run(runner_cost(Path(tempfile.mkdtemp()) / "cost.sqlite", 2000))
    print(f"runner's own cost: {own * 1000:.3f} ms per request (instant engine, 2,000 requests)")
    rps = {k: 2 * args.rounds * args.requests / v[0] for k, v in totals.items()}
    tps = {k: v[1] / v[0] for k, v in totals.items()}
    print(
        f"throughput ratio runner/plain: requests {rps['runner'] / rps['plain']:.3f}, "
        f"tokens {tps['runner'] / tps['plain']:.3f} (target >= 0.95)"
    )


if __name__ == "__main__":
    main()
