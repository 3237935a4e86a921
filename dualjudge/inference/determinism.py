"""What decides whether a request sent again gets the same tokens, and how its identity names it.

A rerun answered from the cache is identical by construction. A regenerated one is identical only when the
server computes the same numbers: vLLM's GPU kernels reduce in an order that depends on the batch a request
lands in (another concurrency, replicas, another job beside it, prefix-cache hits), so the same greedy or
seeded request can come back with other tokens. Two things decide it, and every request's identity names
both, so that a cache never answers a request made under another setting:

- batch invariance (`engine.batch_invariant`): vLLM's batch-invariant kernels (`VLLM_BATCH_INVARIANT=1`;
  vLLM 0.33 and newer, NVIDIA GPUs of compute capability 9.0 or newer: H100, H200, B200; beta upstream).
  "auto" turns it on where the installed vLLM and every GPU the run may use support it and says which in
  one line; `true` where it cannot be had is refused in one line; every local vLLM server is started with
  the resolved value, whatever the environment said;
- the environment the servers inherit: every vLLM and SGLang variable (VLLM_*, SGLANG_*, SGL_*) that is set,
  except those known to leave answers alone (logging, paths, ports, timeouts, telemetry: `NEUTRAL_ENV`)
  and those dualjudge sets itself, and the torch and CUDA variables that change numerics (`NUMERIC_ENV`),
  go into the identity by name and value; a variable dualjudge decides through a setting
  (VLLM_BATCH_INVARIANT) is refused when inherited, naming the setting.
docs/protocol.md lists which is which.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from dualjudge.errors import DualjudgeError
from dualjudge.inference.gpus import Gpu
from dualjudge.inference.vllm_api import ENV_API_KEY, ENV_BATCH_INVARIANT, ENV_CPU_BIND, ENV_CPU_KV_CACHE, NEUTRAL_ENV

BatchInvariant = Literal["auto"] | bool
SINCE = (0, 33)  # the first vLLM GPU build whose batch-invariant kernels dualjudge relies on
CAPABILITY = (9, 0)  # Hopper and newer
PREFIXES = ("VLLM_", "SGLANG_", "SGL_")
# set by dualjudge for every local server (its own value wins), so an inherited one changes nothing
SET_BY_DUALJUDGE = frozenset({ENV_API_KEY, ENV_CPU_KV_CACHE, ENV_CPU_BIND})
# decided by a setting, which names it in the identity: inherited, it is refused
DECIDED_BY = {ENV_BATCH_INVARIANT: "engine.batch_invariant"}
# outside the prefixes, what changes the numbers a server computes
NUMERIC_ENV = frozenset(
    {
        "CUBLAS_WORKSPACE_CONFIG",
        "CUBLASLT_WORKSPACE_SIZE",
        "NVIDIA_TF32_OVERRIDE",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "TORCH_CUDNN_V8_API_DISABLED",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
    }
)


@dataclass(frozen=True)
class Regeneration:
    """The resolved settings that decide whether answers regenerate identically, and one line saying so."""

    batch_invariant: bool
    line: str
    environment: tuple[tuple[str, str], ...] = ()

    def record(self) -> dict[str, object]:
        """As the manifest keeps it."""
        return {"batch_invariant": self.batch_invariant, "line": self.line, "environment": dict(self.environment)}

    def identity(self) -> str:
        """What goes into each request's identity ("" when nothing departs from the defaults, so that the
        identities of runs from before it stay as they were)."""
        parts = ["batch-invariant"] if self.batch_invariant else []
        if self.environment:
            parts.append("env:" + ",".join(f"{k}={v}" for k, v in self.environment))
        return "".join(f"|{p}" for p in parts)


def answer_environment(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """The inherited variables that can change an answer, sorted by name."""
    environ = os.environ if environ is None else environ
    found = []
    for name, value in environ.items():
        if name in NEUTRAL_ENV or name in SET_BY_DUALJUDGE or name in DECIDED_BY:
            continue
        if name.startswith(PREFIXES) or name in NUMERIC_ENV:
            found.append((name, value))
    return tuple(sorted(found))


def refused_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """One line when the environment sets what a setting decides; None otherwise."""
    environ = os.environ if environ is None else environ
    for name, setting in DECIDED_BY.items():
        if name in environ:
            return (
                f"{name} is set in the environment: unset it and set {setting} in the configuration "
                "(which names it in every request's identity)"
            )
    return None


def cannot(backend: str, installed: str | None, gpus: Sequence[Gpu], local: bool = True) -> str | None:
    """Why batch invariance cannot be had for this run, or None when it can."""
    if not local:
        return "every model is served elsewhere (attached endpoints or a hosted API): their servers' settings are not ours"
    if backend != "vllm":
        return f"engine.backend = {backend!r}: batch invariance is vLLM's (VLLM_BATCH_INVARIANT)"
    if installed is None:
        return "vLLM is not installed"
    build, _, number = installed.partition(" ")
    if build != "vllm":
        return f"{installed} is vLLM's CPU build; batch-invariant kernels need NVIDIA GPUs"
    try:
        release = tuple(int(x) for x in number.split(".")[:2])
    except ValueError:
        return f"the installed vLLM's version {number!r} could not be read"
    if release < SINCE:
        return f"{installed} predates vLLM {SINCE[0]}.{SINCE[1]}'s batch-invariant kernels"
    if not gpus:
        return "no GPU is visible"
    for g in gpus:
        if g.capability is None:
            return f"the compute capability of GPU {g.index} ({g.name}) could not be read"
        if g.capability < CAPABILITY:
            return (
                f"GPU {g.index} ({g.name}) has compute capability {g.capability[0]}.{g.capability[1]}; vLLM's "
                f"batch-invariant kernels need {CAPABILITY[0]}.{CAPABILITY[1]} or newer (H100, H200, B200)"
            )
    return None


def resolve(asked: BatchInvariant, backend: str, installed: str | None, gpus: Sequence[Gpu], local: bool = True) -> Regeneration:
    """The run's regeneration settings: batch invariance as asked ("auto": where it can be had), the
    environment's answer-changing variables. A one-line error when `true` cannot be had, or when the
    environment sets what a setting decides."""
    refused = refused_environment()
    if refused is not None:
        raise DualjudgeError(refused)
    why_not = cannot(backend, installed, gpus, local)
    if asked is True and why_not is not None:
        raise DualjudgeError(f'engine.batch_invariant = true cannot be had here: {why_not}; set it to "auto" or false')
    on = asked is True or (asked == "auto" and why_not is None)
    if on:
        how = "asked for" if asked is True else "auto"
        line = f"batch invariance: on ({how}; {installed}, every GPU of compute capability 9.0 or newer)"
    elif asked is False:
        line = "batch invariance: off (engine.batch_invariant = false): regenerated answers may differ with the batch they land in"
    else:
        line = f"batch invariance: off (auto: {why_not})"
    return Regeneration(on, line, answer_environment() if local else ())
