"""The endpoint engine: requests to one or more OpenAI-compatible endpoints serving one model (a vLLM
server dualjudge started, vLLM endpoints the user runs, or a hosted API).

Requests carry images as base64 data URLs and constraints as `structured_outputs` (json or regex;
never the removed `guided_*` fields, which vLLM silently ignores), or, for a hosted OpenAI-style API
(dialect "openai"), JSON schemas as `response_format` (such APIs cannot enforce a regex: that
request fails without being sent). Concurrency is bounded per endpoint, requests go to the endpoint
with the fewest outstanding requests, and transient failures (connection errors, timeouts, 5xx,
429) are retried with exponential backoff, or after the Retry-After a 429 names; 429s are counted.
A request that still fails comes back as an error result with its attempt count; it is never turned
into text.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import random
import time
from dataclasses import dataclass, field
from typing import Any

from dualjudge.inference import vllm_api
from dualjudge.inference.chat_http import ChatClient, MalformedReply, RateLimited, RequestTimeout, StatusError, Transient
from dualjudge.inference.dialects import Dialect, DialectName, dialect
from dualjudge.inference.reply_bounds import constraint_problem, content_text, count_problem, text_problem
from dualjudge.inference.types import EngineDown, GenerationRequest, GenerationResult


class ConstraintIgnored(MalformedReply):
    """A reply that cannot have been decoded under the request's constraint from an endpoint whose dialect
    enforces it: that endpoint's fault (started without structured outputs, or behind a proxy that drops the
    field), never cached as the model's parse failure."""


TRANSIENT = (Transient,)  # connection lost or refused, timeouts, 5xx, 429, replies that are not chat completions


@dataclass(frozen=True)
class EndpointPolicy:
    """When an endpoint is taken out of rotation: `failures` transient failures in a row with no success
    for `quiet_s`; it then rests for `cooldown_s` before it is tried again."""

    failures: int = 5
    quiet_s: float = 10.0
    cooldown_s: float = 30.0


@dataclass
class Endpoint:
    base_url: str
    api_key: str = "EMPTY"
    outstanding: int = 0
    failures: int = 0  # transient failures since its last success
    last_ok: float = field(default_factory=time.monotonic)
    resting_until: float = 0.0  # out of rotation until then (monotonic seconds)
    last_failed: float = 0.0  # its last transient failure (monotonic seconds)

    def available(self, now: float) -> bool:
        return now >= self.resting_until

    def suspect(self, now: float, policy: EndpointPolicy) -> bool:
        """A streak of `policy.failures` failures, the last within the cooldown: still in rotation (it may not
        have failed long enough to rest), but sent work only when no other endpoint is available."""
        return self.failures >= policy.failures and now - self.last_failed < policy.cooldown_s

    def succeeded(self) -> None:
        self.failures = 0
        self.last_ok = time.monotonic()

    def failed(self, policy: EndpointPolicy) -> bool:
        """Count a transient failure; True when it takes the endpoint out of rotation for a cooldown."""
        self.failures += 1
        now = time.monotonic()
        self.last_failed = now
        if self.failures >= policy.failures and now - self.last_ok >= policy.quiet_s:
            self.resting_until = now + policy.cooldown_s
            self.failures = 0
            return True
        return False


def openai_messages(request: GenerationRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in request.messages:
        if m.image is None:
            out.append({"role": m.role, "content": m.text})
        else:
            url = "data:image/png;base64," + base64.b64encode(m.image.png).decode()
            out.append(
                {"role": m.role, "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": m.text}]}
            )
    return out


def structured_outputs(request: GenerationRequest) -> dict[str, Any]:
    c = request.constraint
    if c is None:
        return {}
    return vllm_api.structured_outputs(c.kind, c.schema if c.kind == "json" else c.spec)


def response_format(request: GenerationRequest) -> dict[str, Any]:
    """A JSON constraint as an OpenAI-style `response_format` (hosted APIs; vLLM accepts it too)."""
    c = request.constraint
    if c is None or c.kind != "json":
        return {}
    schema = c.schema
    name = str(schema.get("title", "verdict"))
    return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}}


def constraint_fields(d: Dialect, request: GenerationRequest) -> dict[str, Any]:
    """The request fields that carry the request's constraint in dialect `d` (none when it cannot be sent)."""
    c = request.constraint
    if c is None:
        return {}
    where = d.json_field if c.kind == "json" else d.regex_field
    if where == "structured_outputs":
        return structured_outputs(request)
    if where == "response_format":
        return response_format(request)
    return {where: c.spec} if where is not None else {}


class EndpointEngine:
    """Requests to the endpoints of one model, with their health watched: an endpoint that keeps failing
    rests for a cooldown, and when none is left (or `fail()` is called: the server died or hangs) every
    request waiting on this engine ends with EngineDown at once instead of being retried into an error."""

    def __init__(
        self,
        served_name: str,
        endpoints: list[Endpoint],
        model_identity: str,
        *,
        concurrency: int = 32,
        retries: int = 4,
        backoff_s: float = 1.0,
        timeout_s: float = 600.0,
        dialect: DialectName = "vllm",
        policy: EndpointPolicy = EndpointPolicy(),
    ) -> None:
        if not endpoints:
            raise ValueError("at least one endpoint")
        self.served_name = served_name
        self.dialect = dialect
        self.rate_limited = 0  # 429 answers received (each retried)
        self.endpoints = endpoints
        self.model_identity = model_identity
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.policy = policy
        self._clients = {e.base_url: ChatClient(e.base_url, e.api_key, timeout_s) for e in endpoints}
        self._slots = {e.base_url: asyncio.Semaphore(concurrency) for e in endpoints}
        self.capacity = concurrency * len(endpoints)  # requests worth keeping in flight: every endpoint's slots
        self._rng = random.Random(0)
        self.down: str | None = None  # why the engine can no longer answer
        self._down: asyncio.Future[None] | None = None
        self.last_progress = time.monotonic()  # the last completed request, or the start of the first
        self._completed = 0  # requests answered, and the seconds they took (the requests' expected duration)
        self._latency_s = 0.0

    # -- health ------------------------------------------------------------------------------------
    def _down_future(self) -> asyncio.Future[None]:
        if self._down is None:
            self._down = asyncio.get_running_loop().create_future()
            if self.down is not None:
                self._down.set_result(None)
        return self._down

    def fail(self, reason: str) -> None:
        """Stop answering: every waiting request ends with EngineDown(reason), and so does every new one."""
        if self.down is not None:
            return
        self.down = reason
        if self._down is not None and not self._down.done():
            self._down.set_result(None)

    @property
    def outstanding(self) -> int:
        return sum(e.outstanding for e in self.endpoints)

    def expected_s(self) -> float | None:
        """The mean seconds a request has taken here so far; None before the first answer."""
        return self._latency_s / self._completed if self._completed else None

    def stalled_for(self) -> float:
        """Seconds requests have been outstanding with none completing (0 when none is outstanding)."""
        return time.monotonic() - self.last_progress if self.outstanding else 0.0

    def _pick(self, avoid: Endpoint | None = None) -> Endpoint:
        """The available endpoint with the fewest outstanding requests, endpoints on a streak of failures
        last; a retry avoids the endpoint that just failed it when another is available."""
        now = time.monotonic()
        available = [e for e in self.endpoints if e.available(now)]
        if not available:
            self.fail(f"every endpoint of {self.served_name} kept failing ({', '.join(e.base_url for e in self.endpoints)})")
            raise EngineDown(self.down)
        others = [e for e in available if e is not avoid]
        return min(others or available, key=lambda e: (e.suspect(now, self.policy), e.outstanding))

    async def _or_down(self, work: Any) -> Any:
        """Await `work` unless the engine goes down first (then `work` is cancelled and EngineDown raised)."""
        down = self._down_future()
        call = asyncio.ensure_future(work)
        try:
            await asyncio.wait((call, down), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            raise
        if not call.done():
            call.cancel()
            raise EngineDown(self.down)
        return call.result()

    async def _rest(self, seconds: float) -> None:
        """Back off for `seconds`, or less when the engine goes down meanwhile."""
        await asyncio.wait((self._down_future(),), timeout=seconds)
        if self.down is not None:
            raise EngineDown(self.down)

    # -- requests ----------------------------------------------------------------------------------
    async def _once(self, endpoint: Endpoint, request: GenerationRequest) -> GenerationResult:
        s = request.sampling
        kwargs: dict[str, Any] = {
            "model": self.served_name,
            "messages": openai_messages(request),
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
        }
        if s.top_p < 1.0:  # 1.0 is vLLM's default: sent only when it changes sampling
            kwargs["top_p"] = s.top_p
        if s.seed is not None:
            kwargs["seed"] = s.seed
        kwargs.update(constraint_fields(dialect(self.dialect), request))
        started = time.perf_counter()
        resp = await self._clients[endpoint.base_url].create(kwargs)
        choices = resp.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(first, dict) or not isinstance(message, dict):
            raise MalformedReply(f"the reply is not a chat completion ({len(choices) if isinstance(choices, list) else 0} choices)")
        content = content_text(message.get("content"))
        found = resp.get("usage")
        usage: dict[str, Any] = found if isinstance(found, dict) else {}
        json_expected = request.constraint is not None and request.constraint.kind == "json"
        why = (
            text_problem(content, json_expected)
            or count_problem("prompt_tokens", usage.get("prompt_tokens"))
            or count_problem("completion_tokens", usage.get("completion_tokens"))
        )
        if why is not None:
            raise MalformedReply(f"the reply is outside the bounds a reply must keep: {why}")
        enforced = request.constraint is not None and dialect(self.dialect).enforces(request.constraint.kind)
        ignored = constraint_problem(request.constraint, content, first.get("finish_reason")) if enforced else None
        if ignored is not None:
            raise ConstraintIgnored(f"{endpoint.base_url} ignored the request's constraint: {ignored}")
        return GenerationResult(
            content,
            finish_reason=first.get("finish_reason"),
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            latency_s=time.perf_counter() - started,
            constraint_kind=request.constraint.kind if request.constraint else None,
        )

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if self.down is not None:
            raise EngineDown(self.down)
        if request.constraint is not None and request.constraint.kind == "regex" and not dialect(self.dialect).enforces("regex"):
            return GenerationResult(
                None,
                error='this API cannot enforce a regex constraint; use systems.sign_type = "parsed" with hosted models',
                tries=0,
            )
        last = "no attempt"
        wait: float | None = None
        failed_at: Endpoint | None = None
        refused_by: set[str] = set()  # endpoints that answered this request with a 4xx or ignored its constraint
        for attempt in range(1, self.retries + 2):
            endpoint = self._pick(avoid=failed_at)
            if not self.outstanding:
                self.last_progress = time.monotonic()
            endpoint.outstanding += 1
            try:
                async with self._slots[endpoint.base_url]:
                    result = await self._or_down(self._once(endpoint, request))
                endpoint.succeeded()
                self.last_progress = time.monotonic()
                self._completed += 1
                self._latency_s += result.latency_s or 0.0
                done: GenerationResult = dataclasses.replace(result, tries=attempt)
                return done
            except TRANSIENT as e:
                failed_at = endpoint
                last = f"{type(e).__name__}: {e}"
                if isinstance(e, RequestTimeout):
                    last = f"no answer within engine.request_timeout_s = {self.timeout_s:g} s (raise it for slow models)"
                wait = None
                if isinstance(e, RateLimited):
                    self.rate_limited += 1
                    wait = e.retry_after
                elif endpoint.failed(self.policy) and len(self.endpoints) > 1:
                    wait = 0.0  # that endpoint rests: try another one now
            except (StatusError, ConstraintIgnored) as e:  # a 4xx other than 429, or a reply that ignores the
                refused_by.add(endpoint.base_url)  # constraint: the request is wrong, or this endpoint is
                others = [x for x in self.endpoints if x.base_url not in refused_by]
                if not others:  # every endpoint refuses it: the request itself is wrong (or no endpoint enforces it)
                    if isinstance(e, StatusError):
                        endpoint.succeeded()  # the endpoint answered
                    return GenerationResult(None, error=str(e), tries=attempt)
                endpoint.failed(self.policy)  # only this endpoint refuses it so far: it rests, another is asked
                failed_at, last, wait = endpoint, f"{type(e).__name__}: {e}", 0.0
            finally:
                endpoint.outstanding -= 1
            if attempt <= self.retries:
                await self._rest(wait if wait is not None else self.backoff_s * 2 ** (attempt - 1) * (0.5 + self._rng.random()))
        return GenerationResult(None, error=last, tries=self.retries + 1)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
