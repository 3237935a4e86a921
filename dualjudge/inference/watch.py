"""Watching a local vLLM server while its engine is in use.

A server that dies or hangs must not turn every remaining request into a retried error, nor cost the
ten minutes of a request timeout. The watcher looks at the server process every second and at the
server every few seconds: `/health` (which fails only when the API server itself is stuck or its engine
has died) and `/metrics`, whose token counters (tokens prefilled and generated, the server's `progress_counters`)
move at every engine step. A server is hung when requests are outstanding and:
- no token was produced for `stall_s` (an engine core that is stuck answers /health with 200, but its
  counters stand still), unless the server says its requests wait for a grammar to compile (vLLM's
  `vllm:num_requests_waiting_by_reason{reason="deferred"}` above 0 while nothing runs: xgrammar compiling a
  verdict schema over a 262k-token vocabulary took 73-83 s on a loaded core, with no token produced);
  a compile may take up to `request_timeout_s`, the bound on any request; or, where the counters cannot be read,
- no request completed for three times the requests' measured duration, at least `stall_s` and at most
  `request_timeout_s` (before the first completion: `request_timeout_s`).
When the process has exited, `/health` has failed `health_failures` times in a row, or the server hangs,
the engine is taken down (`EndpointEngine.fail`) with one line: what happened and the last lines of the
server's log. Requests in flight then end at once with EngineDown, and the runner decides what follows
(restart or stop).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

import httpx

from dualjudge.inference.endpoint_engine import EndpointEngine
from dualjudge.inference.server_process import Server, WaitGauges
from dualjudge.inference.vllm_api import PROGRESS_COUNTERS

COMPLETIONS_FACTOR = 3.0  # without token counters: no completion for this many requests' durations is a hang
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)")


@dataclass(frozen=True)
class WatchSettings:
    interval_s: float = 1.0  # how often the process is looked at
    health_every_s: float = 5.0  # how often /health and /metrics are asked
    health_timeout_s: float = 5.0
    health_failures: int = 3  # /health failures in a row that mean the server hangs
    stall_s: float = 60.0  # requests outstanding and no token produced this long: the server hangs
    request_timeout_s: float = 600.0  # the longest a request may take: bounds the window without token counters


def grammar_waiting(metrics: str, gauges: WaitGauges | None) -> bool:
    """Whether a /metrics page says requests wait for a grammar to compile and none is running."""
    if gauges is None:
        return False
    waiting = running = 0.0
    for line in metrics.splitlines():
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if m.group(1) == gauges.waiting and f'reason="{gauges.reason}"' in (m.group(2) or ""):
            waiting += value
        elif m.group(1) == gauges.running:
            running += value
    return waiting > 0 and running == 0


def progress_tokens(metrics: str, counters: tuple[str, ...] = PROGRESS_COUNTERS) -> float | None:
    """Tokens prefilled plus generated so far, from a /metrics page (Prometheus text); None when the page
    has none of the counters (vLLM's by default)."""
    wanted = {f"{name}_total" for name in counters}
    total, found = 0.0, False
    for line in metrics.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) in wanted:
            try:
                total += float(m.group(3))
            except ValueError:
                continue
            found = True
    return total if found else None


class Pace:
    """When the server last made progress: its token counters moved, or a request completed; and since when
    what it waits for is a grammar compile (a compile counts as progress: the stall clock starts after it)."""

    def __init__(self) -> None:
        self.tokens: float | None = None
        self.moved_at = time.monotonic()
        self.compiling_since: float | None = None

    def observe(self, tokens: float | None, compiling: bool = False) -> None:
        now = time.monotonic()
        if compiling:
            self.compiling_since = self.compiling_since or now
            self.moved_at = now
        else:
            self.compiling_since = None
        if tokens is not None and tokens != self.tokens:
            self.tokens, self.moved_at = tokens, now

    def hung(self, engine: EndpointEngine, settings: WatchSettings) -> str | None:
        """Why the server counts as hung now, or None."""
        outstanding = engine.outstanding
        if not outstanding:
            return None
        if self.compiling_since is not None:  # no token is due before the grammar is compiled, within a request's bound
            compiling = time.monotonic() - self.compiling_since
            if compiling > settings.request_timeout_s:
                return (
                    f"{outstanding} request(s) waited {compiling:.0f} s for a grammar to compile "
                    f"(engine.request_timeout_s = {settings.request_timeout_s:g})"
                )
            return None
        if self.tokens is not None:
            idle = time.monotonic() - max(self.moved_at, engine.last_progress)
            if idle > settings.stall_s:
                return (
                    f"no token produced in {idle:.0f} s while {outstanding} request(s) were outstanding (its "
                    f"/metrics counters stood still; engine.stall_s = {settings.stall_s:g})"
                )
            return None
        expected = engine.expected_s()
        window = (
            settings.request_timeout_s
            if expected is None
            else min(settings.request_timeout_s, max(settings.stall_s, COMPLETIONS_FACTOR * expected))
        )
        if engine.stalled_for() > window:
            return f"no request completed in {window:.0f} s while {outstanding} were outstanding"
        return None


async def watch_server(server: Server, engine: EndpointEngine, settings: WatchSettings = WatchSettings()) -> str:
    """Watch until the server fails (then the engine is down and the reason is returned) or the
    watcher is cancelled (the engine is being closed)."""
    failures = 0
    since_health = 0.0
    pace = Pace()
    headers = {"Authorization": f"Bearer {server.api_key}"}
    async with httpx.AsyncClient(timeout=settings.health_timeout_s, headers=headers) as client:
        while True:
            await asyncio.sleep(settings.interval_s)
            reason = None
            if not server.alive():
                reason = server.gone()
            else:
                since_health += settings.interval_s
                if since_health >= settings.health_every_s:
                    since_health = 0.0
                    failures = 0 if await _healthy(client, server) else failures + 1
                    if failures >= settings.health_failures:
                        reason = f"/health failed {failures} times in a row (about {failures * settings.health_every_s:.0f} s)"
                    else:
                        pace.observe(*await _progress(client, server))
                reason = reason or pace.hung(engine, settings)
            if reason is not None:
                reason = f"{reason}; server log: {server.log_tail(3)}"
                engine.fail(reason)
                return reason


async def _healthy(client: httpx.AsyncClient, server: Server) -> bool:
    try:
        return (await client.get(server.health_url)).status_code == 200
    except httpx.HTTPError:
        return False


async def _progress(client: httpx.AsyncClient, server: Server) -> tuple[float | None, bool]:
    """The server's token count and whether its requests wait for a grammar compile, from /metrics."""
    try:
        resp = await client.get(server.metrics_url)
    except httpx.HTTPError:
        return None, False
    if resp.status_code != 200:
        return None, False
    return progress_tokens(resp.text, server.progress_counters), grammar_waiting(resp.text, server.grammar_wait)
