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
"""

from __future__ import annotations

import math
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from dualjudge.inference.cards import ModelCard

VLLM_DEFAULT_UTILIZATION = 0.92  # vLLM 0.33's CacheConfig.gpu_memory_utilization
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


def utilization(card: ModelCard) -> float:
    return card.vllm.gpu_memory_utilization or VLLM_DEFAULT_UTILIZATION


def refusal(card: ModelCard, gpus: Sequence[Gpu]) -> str | None:
    """Why a vLLM server for `card` would not start on these GPUs (its group, the first tensor_parallel_size
    of them serving), or None when it would."""
    tp = int(card.vllm.tensor_parallel_size or 1)
    if len(gpus) < tp:
        return f"needs {tp} GPU(s) (tensor_parallel_size {tp}), the group has {len(gpus)}"
    serving = gpus[:tp]
    util = utilization(card)
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
        out.append(Gpu(match.name, match.total_gb, match.free_gb, len(out)))
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
            out.append(
                (
                    uuid if isinstance(uuid, str) else uuid.decode(),
                    Gpu(name if isinstance(name, str) else name.decode(), memory.total / GIB, memory.free / GIB, i),
                )
            )
        return out
    finally:
        pynvml.nvmlShutdown()


def _nvidia_smi() -> list[tuple[str, Gpu]]:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,memory.free", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_nvidia_smi(done.stdout) if done.returncode == 0 else []


def parse_nvidia_smi(text: str) -> list[tuple[str, Gpu]]:
    """`nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.free --format=csv,noheader,nounits` (MiB)."""
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        index, uuid, total, free = parts[0], parts[1], parts[-2], parts[-1]
        name = ",".join(parts[2:-2])
        try:
            out.append((uuid, Gpu(name, float(total) / 1024, float(free) / 1024, int(index))))
        except ValueError:
            continue
    return out
