"""The engine settings: the `[engine]` section of a run configuration, declared once.

Which of them can change a result is part of each field's schema (dualjudge.schema.setting): the
backend always; the grammar backend of the backend in use; concurrency, timeouts, retries, the API key
of attached endpoints, the endpoints themselves and the shared cache file never.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, SecretStr, field_serializer, field_validator, model_validator

from dualjudge.inference.dialects import DialectName, ServerBackend
from dualjudge.inference.urls import redacted, short_key_problem, url_problem
from dualjudge.schema import Bool, Distinct, Float, Int, Str, result_fields, setting

# "vllm" and "sglang" start a model server per model (vllm_server.py, sglang_server.py); "transformers"
# loads the model in this process
Backend = Literal[ServerBackend, "transformers"]
StructuredBackend = Literal["xgrammar", "guidance", "outlines", "lm-format-enforcer", "auto"]
STRUCTURED_BACKENDS: tuple[str, ...] = get_args(StructuredBackend)
# the in-process engine's Outlines names the same grammar engines otherwise
OUTLINES_BACKENDS: dict[str, str] = {
    "xgrammar": "xgrammar",
    "guidance": "llguidance",
    "outlines": "outlines_core",
    "auto": "xgrammar",
}


def _device_groups(value: object) -> object:
    """`devices`: "auto", or at least one group of device ids (integers >= 0), none empty, no device twice."""
    if value == "auto":
        return value
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(g, (list, tuple)) for g in value):
        raise ValueError('give "auto" or a list of device groups, e.g. [[0], [1], [2, 3]]')
    seen: set[int] = set()
    for g in value:
        if not g:
            raise ValueError("a device group is empty")
        if not all(type(i) is int and i >= 0 for i in g):
            raise ValueError(f"device ids are integers >= 0, not {list(g)}")
        twice = (seen & set(g)) or {i for i in g if list(g).count(i) > 1}
        if twice:
            raise ValueError(f"device {min(twice)} is in two groups (or twice in one)")
        seen |= set(g)
    return tuple(tuple(g) for g in value)


DeviceGroups = Annotated[Literal["auto"] | tuple[tuple[int, ...], ...], BeforeValidator(_device_groups)]


def _endpoint_urls(value: object) -> object:
    """Attached endpoints: each an http(s) URL with a host, e.g. http://host:8000/v1."""
    if isinstance(value, dict):
        for model, urls in value.items():
            for url in urls if isinstance(urls, (list, tuple)) else [urls]:
                why = url_problem(url) if isinstance(url, str) else "not a URL"
                if why is not None:
                    raise ValueError(f"{model}: {redacted(url) if isinstance(url, str) else url!r} cannot be an endpoint: {why}")
    return value


class EngineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = setting("vllm")
    # requests in flight per endpoint (replicas multiply it), or the in-process batch size; unset: what suits
    # the device (inference/engines.py endpoint_concurrency); a card's own `concurrency` wins over both
    concurrency: Int | None = setting(None, affects_results=False, ge=1, le=4096)
    # the grammar engine of every backend, in vLLM's names: sglang_server.py maps them to SGLang's, and the
    # in-process engine to Outlines' (OUTLINES_BACKENDS)
    structured_backend: StructuredBackend = setting("xgrammar")  # changes results on every backend, a new one too
    # vLLM's batch-invariant kernels: "auto" (on where the installed vLLM and every GPU support them), true
    # (refused in one line where they cannot be had) or false. Resolved per run (inference/determinism.py);
    # when on it is part of every local request's identity, so a cache never answers across the setting
    batch_invariant: Literal["auto"] | Bool = setting("auto", affects_results=False)
    startup_timeout_s: Float = setting(900.0, affects_results=False, gt=0)
    retries: Int = setting(4, affects_results=False, ge=0, le=20)
    # seconds one request may take before it counts as failed (and, for a local server, as a hang)
    request_timeout_s: Float = setting(600.0, affects_results=False, gt=0)
    # a local server holding requests while producing no token this long is hung, and is restarted
    # (inference/watch.py: its /metrics token counters, read every 5 s)
    stall_s: Float = setting(60.0, affects_results=False, gt=0, le=86400)
    # how often a model's server that died, hangs or does not start is started again before its job stops
    server_restarts: Int = setting(1, affects_results=False, ge=0, le=10)
    # for attached endpoints; never written to the store or the manifest
    api_key: SecretStr = setting(SecretStr("EMPTY"), affects_results=False)
    cache: Str | None = setting(None, affects_results=False)  # a shared response cache file, reused across runs
    endpoints: Annotated[dict[Str, Annotated[tuple[Str, ...], Distinct]], BeforeValidator(_endpoint_urls)] = setting(
        {}, affects_results=False
    )
    # how each attached model's endpoints take constraints (inference/dialects.py): "vllm" when not named
    # here, "sglang" for SGLang servers, "openai" for other OpenAI-compatible servers (no regex)
    endpoint_dialects: dict[Str, DialectName] = setting({}, affects_results=False)
    # where models run side by side: "auto" or groups of GPU ids (CPU core ids without a GPU), e.g.
    # [[0], [1], [2, 3]]; inference/devices.py. Placement changes batching, never what is asked.
    devices: DeviceGroups = setting("auto", affects_results=False)
    # a group no waiting job could use serves a running job as one more server (a replica), and a judge may
    # start early on one (runs/schedule.py); never more servers than groups, never a changed result
    replicas: Bool = setting(True, affects_results=False)
    # a replica is started only when each server would still have this much work (seconds, as measured so
    # far): its load must pay off
    replica_min_s: Float = setting(180.0, affects_results=False, ge=0)
    # a Ray cluster to place the model servers on (inference/ray_cluster.py): HOST:PORT of its head, ray://HOST:PORT,
    # or "auto" (the cluster `ray start --head` started on this machine); unset: this machine's devices
    ray: Str | None = setting(None, affects_results=False)
    ray_cpus: Int = setting(1, affects_results=False, ge=1, le=1024)  # cores per server on a cluster without GPUs

    @model_validator(mode="before")
    @classmethod
    def _one_grammar_setting(cls, data: Any) -> Any:
        if isinstance(data, dict) and "grammar_backend" in data:
            if data["grammar_backend"] == "xgrammar":  # the old default, as every earlier run's stored config holds it
                return {k: v for k, v in data.items() if k != "grammar_backend"}
            raise ValueError(
                "engine.grammar_backend is gone: engine.structured_backend names the grammar engine of every backend, "
                f"in-process included ({', '.join(n for n in OUTLINES_BACKENDS if n != 'auto')}, or auto)"
            )
        return data

    @model_validator(mode="after")
    def _dialects_of_endpoints(self) -> EngineSettings:
        stray = sorted(set(self.endpoint_dialects) - set(self.endpoints))
        if stray:
            raise ValueError(f"endpoint_dialects names {', '.join(stray)}, which has no endpoints (engine.endpoints)")
        if self.ray is not None and self.backend == "transformers":
            raise ValueError("engine.ray places model servers; the transformers backend runs in this process (use vllm)")
        if self.ray is not None and self.devices != "auto":
            raise ValueError("engine.ray: Ray places the servers on the cluster's nodes; leave engine.devices out")
        return self

    @field_validator("api_key")
    @classmethod
    def _key_long_enough(cls, key: SecretStr) -> SecretStr:
        problem = short_key_problem(key.get_secret_value(), "engine.api_key")
        if problem:
            raise ValueError(problem)
        return key

    def dialect(self, model: str) -> DialectName:
        """How the attached endpoints of `model` take constraints."""
        return self.endpoint_dialects.get(model, "vllm")

    def result_fields(self) -> dict[str, object]:
        """The settings that can change this backend's results (part of every request's identity)."""
        return result_fields(self, self.backend)

    @field_serializer("api_key", when_used="json")
    def _shown_key(self, key: SecretStr) -> str:
        """The key as the store and manifest keep it: masked, except the placeholder "EMPTY" (no key), so a
        command resumed from the store knows whether the endpoints need one."""
        value = key.get_secret_value()
        return value if value == "EMPTY" else "**********"
