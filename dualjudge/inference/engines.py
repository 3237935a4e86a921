"""Open the engine for a model card: a vLLM server started for it, vLLM endpoints the user already
runs, or the in-process transformers engine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import HubWeights, ModelCard
from dualjudge.inference.types import Engine
from dualjudge.inference.vllm_engine import Endpoint, VllmEngine
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.weights import locate, require

Backend = Literal["vllm", "transformers"]


@dataclass(frozen=True)
class EngineSettings:
    backend: Backend = "vllm"
    concurrency: int = 32  # per endpoint (vLLM) or batch size (transformers)
    endpoints: dict[str, tuple[str, ...]] = field(default_factory=dict)  # model name -> running server URLs
    api_key: str = "EMPTY"  # for attached endpoints
    structured_backend: str = "xgrammar"  # vLLM server's grammar backend
    grammar_backend: str = "xgrammar"  # Outlines backend of the transformers engine
    startup_timeout_s: float = 900.0
    retries: int = 4
    seed: int = 0
    log_dir: Path = Path("logs")
    device: str | None = None


def model_identity(card: ModelCard) -> str:
    """The identity that goes into cache keys: weights revision/hash when present locally."""
    found = locate(card)
    if found is not None:
        return found.identity
    rev = card.weights.revision if isinstance(card.weights, HubWeights) else "unknown"
    return f"{card.name}@{rev}@attached"


async def check_endpoint(url: str, api_key: str, served_name: str) -> None:
    """An attached endpoint must answer and serve this model under this name (/v1/models)."""
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            resp = await client.get(f"{url.rstrip('/')}/models", headers={"Authorization": f"Bearer {api_key}"})
            resp.raise_for_status()
            names = [m["id"] for m in resp.json().get("data", [])]
    except (httpx.HTTPError, ValueError) as e:
        raise DualjudgeError(f"endpoint {url} is unreachable or not OpenAI-compatible ({type(e).__name__})") from None
    if served_name not in names:
        raise DualjudgeError(f"endpoint {url} serves {names}, not {served_name!r}; start vLLM with "
                             f"--served-model-name {served_name}")


@asynccontextmanager
async def open_engine(card: ModelCard, settings: EngineSettings,
                      on_event: Callable[[str], None] = lambda _: None) -> AsyncIterator[Engine]:
    """Yield a ready engine for `card`; a server started here is stopped (and has exited) on exit."""
    if settings.backend == "transformers":
        from dualjudge.inference.transformers_engine import TransformersEngine

        on_event(f"loading {card.name} in-process (transformers)")
        engine = await asyncio.to_thread(TransformersEngine, card, require(card), device=settings.device,
                                         max_batch=settings.concurrency, grammar_backend=settings.grammar_backend)
        try:
            yield engine
        finally:
            await engine.close()
        return
    urls = settings.endpoints.get(card.name)
    if urls:
        for url in urls:
            await check_endpoint(url, settings.api_key, card.name)
        engine = VllmEngine(card.name, [Endpoint(u, settings.api_key) for u in urls], model_identity(card),
                            concurrency=settings.concurrency, retries=settings.retries)
        on_event(f"attached to {len(urls)} endpoint(s) for {card.name}")
        try:
            yield engine
        finally:
            await engine.close()
        return
    server = VllmServer(card, require(card), log_dir=settings.log_dir, seed=settings.seed,
                        structured_backend=settings.structured_backend, startup_timeout=settings.startup_timeout_s)
    on_event(f"starting vLLM for {card.name} (log: {server.log_path})")
    try:
        server.launch()  # in this (long-lived) thread: the server dies with the process that started it
        await asyncio.to_thread(server.wait_ready)
        on_event(f"vLLM for {card.name} ready in {server.started_s:.0f} s")
        engine = VllmEngine(card.name, [Endpoint(server.base_url, server.api_key)], server.weights.identity,
                            concurrency=settings.concurrency, retries=settings.retries)
        try:
            yield engine
        finally:
            await engine.close()
    finally:
        await asyncio.to_thread(server.stop)
