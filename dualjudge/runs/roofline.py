"""A roofline estimate of a model's serving time, for `dualjudge plan` when no run has measured it.

Decoding is memory-bound: each step of a batch reads the weights once, so a step takes at least
weights / bandwidth, and at least 2 x parameters x batch FLOPs over the GPU's compute; prefill is
compute-bound (2 x parameters FLOPs per prompt token, image tokens included). Both are derated by the
efficiencies below (what serving engines reach on these GPUs in practice). KV-cache reads, a second
term of decoding, are small for these prompts (a few thousand tokens) and left out. The GPU is the
visible one when it is in the table, else an H100 SXM, and the estimate says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualjudge.inference.cards import ModelCard

BANDWIDTH_EFFICIENCY = 0.7  # share of the memory bandwidth a decode step reaches
COMPUTE_EFFICIENCY = 0.4  # share of the dense bf16 FLOPs prefill and large batches reach


@dataclass(frozen=True)
class GpuSpec:
    name: str
    bandwidth_gbs: float  # memory bandwidth, GB/s
    tflops: float  # dense bf16 tensor TFLOPs


# the vendors' data sheets (dense, no sparsity)
GPUS: tuple[GpuSpec, ...] = (
    GpuSpec("H200", 4800, 989), GpuSpec("H100", 3350, 989), GpuSpec("A100", 2039, 312), GpuSpec("L40S", 864, 362),
    GpuSpec("RTX 4090", 1008, 165), GpuSpec("A10G", 600, 125), GpuSpec("L4", 300, 121))
DEFAULT_GPU = GPUS[1]


def gpu_spec(name: str | None) -> tuple[GpuSpec, str]:
    """The spec of a GPU by its reported name, and where it came from."""
    for spec in GPUS:
        if name and spec.name.lower() in name.lower():
            return spec, f"the visible {name}"
    shown = f"{name} is not in the table" if name else "no GPU is visible"
    return DEFAULT_GPU, f"an {DEFAULT_GPU.name} ({shown})"


def bytes_per_parameter(card: ModelCard) -> float:
    return 4.0 if card.vllm.dtype == "float32" else 2.0


def serving_seconds(card: ModelCard, gpu: GpuSpec, prompt_tokens: float, completion_tokens: float,
                    requests: int, batch: int) -> float:
    """Seconds one server of `card` on `gpu` needs for these requests, `batch` sequences at a time."""
    if card.parameters_b is None or requests <= 0:
        return 0.0
    params = card.parameters_b * 1e9
    flops = gpu.tflops * 1e12 * COMPUTE_EFFICIENCY
    width = max(1, min(batch, requests))
    step = max(params * bytes_per_parameter(card) / (gpu.bandwidth_gbs * 1e9 * BANDWIDTH_EFFICIENCY),
               2 * params * width / flops)
    decode = completion_tokens / width * step
    prefill = 2 * params * prompt_tokens / flops
    return decode + prefill
