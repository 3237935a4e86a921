"""The vLLM engine: requests to one or more OpenAI-compatible endpoints serving one model.

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
from dataclasses import dataclass
from typing import Any, Literal

import openai

from dualjudge.inference import vllm_api
from dualjudge.inference.types import GenerationRequest, GenerationResult

TRANSIENT = (openai.APIConnectionError, openai.APITimeoutError, openai.InternalServerError, openai.RateLimitError)


@dataclass
class Endpoint:
    base_url: str
    api_key: str = "EMPTY"
    outstanding: int = 0


def openai_messages(request: GenerationRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in request.messages:
        if m.image is None:
            out.append({"role": m.role, "content": m.text})
        else:
            url = "data:image/png;base64," + base64.b64encode(m.image.png).decode()
            out.append({"role": m.role, "content": [{"type": "image_url", "image_url": {"url": url}},
                                                    {"type": "text", "text": m.text}]})
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


def retry_after(error: Exception) -> float | None:
    """Seconds a 429 asks the client to wait (its Retry-After header), when it says."""
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(value), 120.0) if value is not None else None
    except ValueError:
        return None


class VllmEngine:
    def __init__(self, served_name: str, endpoints: list[Endpoint], model_identity: str, *,
                 concurrency: int = 32, retries: int = 4, backoff_s: float = 1.0, timeout_s: float = 600.0,
                 dialect: Literal["vllm", "openai"] = "vllm") -> None:
        if not endpoints:
            raise ValueError("at least one endpoint")
        self.served_name = served_name
        self.dialect = dialect
        self.rate_limited = 0  # 429 answers received (each retried)
        self.endpoints = endpoints
        self.model_identity = model_identity
        self.retries = retries
        self.backoff_s = backoff_s
        self._clients = {e.base_url: openai.AsyncOpenAI(base_url=e.base_url, api_key=e.api_key, max_retries=0,
                                                        timeout=timeout_s) for e in endpoints}
        self._slots = {e.base_url: asyncio.Semaphore(concurrency) for e in endpoints}
        self._rng = random.Random(0)

    def _pick(self) -> Endpoint:
        return min(self.endpoints, key=lambda e: e.outstanding)

    async def _once(self, endpoint: Endpoint, request: GenerationRequest) -> GenerationResult:
        s = request.sampling
        kwargs: dict[str, Any] = {"model": self.served_name, "messages": openai_messages(request),
                                  "temperature": s.temperature, "max_tokens": s.max_tokens}
        if s.top_p < 1.0:  # 1.0 is vLLM's default: sent only when it changes sampling
            kwargs["top_p"] = s.top_p
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if self.dialect == "openai":
            kwargs.update(response_format(request))
        else:
            extra = structured_outputs(request)
            if extra:
                kwargs["extra_body"] = extra
        started = time.perf_counter()
        resp = await self._clients[endpoint.base_url].chat.completions.create(**kwargs)
        choice = resp.choices[0]
        usage = resp.usage
        return GenerationResult(choice.message.content, finish_reason=choice.finish_reason,
                                prompt_tokens=usage.prompt_tokens if usage else 0,
                                completion_tokens=usage.completion_tokens if usage else 0,
                                latency_s=time.perf_counter() - started,
                                constraint_kind=request.constraint.kind if request.constraint else None)

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        if self.dialect == "openai" and request.constraint is not None and request.constraint.kind == "regex":
            return GenerationResult(None, error="this API cannot enforce a regex constraint; use "
                                                "systems.sign_type = \"parsed\" with hosted models", tries=0)
        last = "no attempt"
        wait: float | None = None
        for attempt in range(1, self.retries + 2):
            endpoint = self._pick()
            endpoint.outstanding += 1
            try:
                async with self._slots[endpoint.base_url]:
                    result = await self._once(endpoint, request)
                return dataclasses.replace(result, tries=attempt)
            except TRANSIENT as e:
                last = f"{type(e).__name__}: {e}"
                wait = None
                if isinstance(e, openai.RateLimitError):
                    self.rate_limited += 1
                    wait = retry_after(e)
            except openai.APIStatusError as e:  # 4xx other than 429: the request itself is wrong
                return GenerationResult(None, error=f"HTTP {e.status_code}: {e.message}", tries=attempt)
            finally:
                endpoint.outstanding -= 1
            if attempt <= self.retries:
                await asyncio.sleep(wait if wait is not None else
                                    self.backoff_s * 2 ** (attempt - 1) * (0.5 + self._rng.random()))
        return GenerationResult(None, error=last, tries=self.retries + 1)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
