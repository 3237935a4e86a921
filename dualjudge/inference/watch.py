"""Watching a local vLLM server while its engine is in use.

A server that dies or hangs must not turn every remaining request into a retried error. The watcher
looks at the server process every second and at `/health` every few seconds, and tracks whether
requests still complete. When the process has exited, `/health` has failed `health_failures` times
in a row, or requests have been outstanding for `stall_s` with none completing, it takes the engine
down (`EndpointEngine.fail`) with one line: what happened and the last lines of the server's log. Requests
in flight then end at once with EngineDown, and the runner decides what follows (restart or stop).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from dualjudge.inference.endpoint_engine import EndpointEngine
from dualjudge.inference.vllm_server import VllmServer


@dataclass(frozen=True)
class WatchSettings:
    interval_s: float = 1.0  # how often the process is looked at
    health_every_s: float = 5.0  # how often /health is asked
    health_timeout_s: float = 5.0
    health_failures: int = 3  # /health failures in a row that mean the server hangs
    stall_s: float = 600.0  # outstanding requests with none completing this long: the server hangs


async def watch_server(server: VllmServer, engine: EndpointEngine, settings: WatchSettings = WatchSettings()) -> str:
    """Watch until the server fails (then the engine is down and the reason is returned) or the
    watcher is cancelled (the engine is being closed)."""
    failures = 0
    since_health = 0.0
    async with httpx.AsyncClient(timeout=settings.health_timeout_s) as client:
        while True:
            await asyncio.sleep(settings.interval_s)
            reason = None
            if not server.alive():
                code = server.process.returncode if server.process is not None else None
                reason = f"the server process exited (status {code})"
            elif engine.stalled_for() > settings.stall_s:
                reason = f"no request completed in {settings.stall_s:.0f} s while {engine.outstanding} were outstanding"
            else:
                since_health += settings.interval_s
                if since_health >= settings.health_every_s:
                    since_health = 0.0
                    failures = 0 if await _healthy(client, server) else failures + 1
                    if failures >= settings.health_failures:
                        reason = (f"/health failed {failures} times in a row "
                                  f"(about {failures * settings.health_every_s:.0f} s)")
            if reason is not None:
                reason = f"{reason}; server log: {server.log_tail(3)}"
                engine.fail(reason)
                return reason


async def _healthy(client: httpx.AsyncClient, server: VllmServer) -> bool:
    try:
        return (await client.get(f"http://127.0.0.1:{server.port}/health")).status_code == 200
    except httpx.HTTPError:
        return False
