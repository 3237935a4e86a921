"""Device groups: the GPUs (or, on a machine without GPUs, the CPU cores) one model's server runs on.

`[engine] devices` names the groups: "auto", or a list of groups of device ids such as
`[[0], [1], [2, 3]]`. Ids are GPU indices as this process sees them when a GPU is visible, CPU core
ids otherwise. "auto" is one group per visible GPU; without a GPU, the allowed cores split into
contiguous, near-equal groups, one per model that runs here (never more groups than cores): on a
2-core machine with two models, one core each (benchmarks/perf/cpu_binding.py measured that placement
against vLLM's own binding and against all cores for one server; see the README).

A server is given its group through its environment: `CUDA_VISIBLE_DEVICES` (translated through this
process's own CUDA_VISIBLE_DEVICES) or vLLM's `VLLM_CPU_OMP_THREADS_BIND` (with tensor parallelism on
CPU, the cores split per rank with "|"). A CPU group of every allowed core is left to vLLM's own binding,
which keeps a core for the server's front end: binding every core to the engine measured slower.

A group holds a card when it has at least the card's tensor_parallel_size devices and, on GPUs, vLLM
would start the card's server there by vLLM's own memory rule (inference/gpus.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.gpus import Gpu, refusal, visible_gpus
from dualjudge.inference.vllm_api import cpu_binding

DeviceKind = Literal["gpu", "cpu", "ray"]  # ray: a slot of a Ray cluster (inference/ray_cluster.py)


@dataclass(frozen=True)
class DeviceGroup:
    kind: DeviceKind
    ids: tuple[int, ...]
    gpus: tuple[Gpu, ...] = ()  # the GPUs' memory, when known (GPU placement)
    bind: bool = True  # False: a CPU group of every allowed core, left to vLLM's own binding
    ray_gpus: int = 0  # a Ray slot: the GPUs its server asks Ray for (one node's), or
    ray_cpus: int = 0  # ... the CPU cores, on a cluster without GPUs
    accelerator: str | None = None  # a Ray slot's GPU kind, as Ray reports it (H100, ...)

    @property
    def label(self) -> str:
        """ "gpu:2,3" or "cpu:0": what progress lines and the manifest call the group."""
        return f"{self.kind}:{','.join(str(i) for i in self.ids)}"

    def refuses(self, card: ModelCard) -> str | None:
        """Why a server for `card` cannot run on this group, or None when it can."""
        tp = int(card.vllm.tensor_parallel_size or 1)
        if self.kind == "ray":
            return f"needs {tp} GPUs on one node, a slot has {self.ray_gpus}" if self.ray_gpus and tp > self.ray_gpus else None
        if len(self.ids) < tp:
            return f"needs {tp} device(s) per server (tensor_parallel_size {tp}), the group has {len(self.ids)}"
        if self.kind == "gpu" and self.gpus and card.parameters_b is not None:
            return refusal(card, self.gpus)
        return None

    def holds(self, card: ModelCard) -> bool:
        """Whether a server for `card` can run on this group."""
        return self.refuses(card) is None

    def environment(self, card: ModelCard) -> dict[str, str]:
        """The variables that place a vLLM server for `card` on this group."""
        if self.kind == "gpu":
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            mapped = [visible.split(",")[i].strip() for i in self.ids] if visible else [str(i) for i in self.ids]
            return {"CUDA_VISIBLE_DEVICES": ",".join(mapped)}
        if not self.bind or self.kind == "ray":  # a Ray slot's node is Ray's to choose, and its server binds itself
            return {}
        tp = max(1, int(card.vllm.tensor_parallel_size or 1))
        ranks = [self.ids[r::tp] for r in range(tp)]  # one core list per tensor-parallel rank
        return cpu_binding(ranks)

    def torch_device(self) -> str | None:
        """The device an in-process (transformers) engine uses on this group; None: its own default."""
        return f"cuda:{self.ids[0]}" if self.kind == "gpu" else None  # (an in-process engine is never on Ray)


def split(cores: Sequence[int], parts: int) -> list[tuple[int, ...]]:
    """Cores in contiguous, near-equal groups (the first groups take the remainder)."""
    parts = max(1, min(parts, len(cores)))
    size, extra = divmod(len(cores), parts)
    out, start = [], 0
    for i in range(parts):
        n = size + (1 if i < extra else 0)
        out.append(tuple(cores[start : start + n]))
        start += n
    return out


def machine_gpus() -> list[Gpu]:
    """The GPUs this process sees, with their memory; [] on a machine without one."""
    return visible_gpus()


def allowed_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def resolve(
    devices: str | Sequence[Sequence[int]],
    local_models: int,
    *,
    gpus: Sequence[Gpu] | None = None,
    cores: Sequence[int] | None = None,
    in_process: bool = False,
) -> list[DeviceGroup]:
    """The device groups of a run.

    `gpus`: the visible GPUs with their memory, [] on a machine without one (read from the machine
    when None); `cores`: the allowed CPU cores; `local_models`: how many models run here (not at an
    attached endpoint or a hosted API); `in_process`: the transformers backend, whose CPU threads are
    one pool per process, so on CPU it has one group of every core.
    """
    gpus = list(gpus) if gpus is not None else machine_gpus()
    cores = list(cores) if cores is not None else allowed_cores()
    kind: DeviceKind = "gpu" if gpus else "cpu"
    if devices == "auto":
        if kind == "gpu":
            return [DeviceGroup("gpu", (i,), (gpus[i],)) for i in range(len(gpus))]
        parts = split(cores, 1 if in_process else max(1, local_models))
        return [DeviceGroup("cpu", g, bind=len(parts) > 1) for g in parts]
    groups = [tuple(int(i) for i in g) for g in devices]
    known = range(len(gpus)) if kind == "gpu" else cores
    for g in groups:
        unknown = [i for i in g if i not in known]
        if unknown:
            what = (
                f"{len(gpus)} visible GPU(s), ids 0-{len(gpus) - 1}"
                if kind == "gpu"
                else f"allowed CPU cores {','.join(str(c) for c in cores)}"
            )
            raise DualjudgeError(f"engine.devices: {unknown} not on this machine ({what})")
    if kind == "cpu" and in_process and len(groups) > 1:
        raise DualjudgeError(
            "engine.devices: the transformers backend runs in this process, whose CPU threads are one "
            'pool: give one CPU group (or use backend = "vllm")'
        )
    if kind == "gpu":
        return [DeviceGroup(kind, g, tuple(gpus[i] for i in g)) for g in groups]
    return [DeviceGroup(kind, g, bind=set(g) != set(cores)) for g in groups]


def check_placement(groups: Sequence[DeviceGroup], cards: Sequence[ModelCard]) -> None:
    """Every card must fit some group; otherwise one line naming the card and why each group refuses it."""
    for card in cards:
        reasons = {g.label: g.refuses(card) for g in groups}
        if all(reasons.values()):
            tp = int(card.vllm.tensor_parallel_size or 1)
            why = "; ".join(f"[{label}] {reason}" for label, reason in reasons.items())
            raise DualjudgeError(
                f"{card.name}: no device group can serve it ({why}); set engine.devices, "
                f"e.g. [{list(range(max(tp, 1)))}], or see `dualjudge models check`"
            )
