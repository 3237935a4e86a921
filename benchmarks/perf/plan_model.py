"""The plan's per-model GPU minutes beside an independent first-principles simulation of the same work.

    python benchmarks/perf/plan_model.py [--config benchmarks/cross-family.toml] [--gpu H100] [--json]

The plan (`dualjudge plan`, runs/roofline.py) prices each model's job in closed form from the card's
parameter count: the longer of its compute and its memory traffic. This script prices the same requests
(the plan's own count of them: requests, tokens to prefill, expected completion tokens, images) another
way, from the published config.json shapes in SHAPES below (not the cards): parameters rebuilt from the
layer shapes (attention, gated MLP, LM head), attention FLOPs over each sequence's growing context, and
a step-by-step simulation of a vLLM engine: up to `max_num_seqs` sequences decode together, prompts are
prefilled in chunks of at most `max_num_batched_tokens` tokens a step beside them (chunked prefill), and
each step takes the longer of its FLOPs and its bytes (weights once, every running sequence's KV cache)
at the same efficiencies as the plan. Loading: the weights' bytes from disk plus the engine start.

Prints a table per model (plan minutes, simulated minutes, their ratio) and fails (exit 1) when a model's
plan is off by more than 25 %.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from dualjudge.config import load_config
from dualjudge.inference.engines import gpu_server_concurrency
from dualjudge.runs.estimate import estimate
from dualjudge.runs.roofline import BANDWIDTH_EFFICIENCY, COMPUTE_EFFICIENCY, GPUS, GpuSpec

TOLERANCE = 0.25
MAX_BATCHED_TOKENS = 8192  # vLLM's default token budget of a step for online serving on a data-centre GPU


@dataclass(frozen=True)
class Published:
    """A model's config.json text backbone, and its vision encoder's size and patches per testbed image."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool  # the LM head shares the embedding matrix
    vision_b: float
    patches: int


# config.json of each repository (text_config where nested); the vision encoders' parameter counts from their
# model cards (SigLIP so400m 0.43 B, CLIP ViT-L/14 0.30 B, Qwen2.5-VL's ViT 0.67 B, Pixtral's 0.40 B)
SHAPES: dict[str, Published] = {
    "qwen2.5-vl-7b-instruct": Published(28, 3584, 28, 4, 128, 18944, 152064, False, 0.67, 1296),
    "qwen2.5-vl-3b-instruct": Published(36, 2048, 16, 2, 128, 11008, 151936, True, 0.67, 1296),
    "gemma-3-4b-it": Published(34, 2560, 8, 4, 256, 10240, 262208, True, 0.42, 4096),
    "gemma-3-12b-it": Published(48, 3840, 16, 8, 256, 15360, 262208, True, 0.42, 4096),
    "phi-3.5-vision-instruct": Published(32, 3072, 32, 32, 96, 8192, 32064, False, 0.30, 2880),
    "pixtral-12b": Published(40, 5120, 32, 8, 128, 14336, 131072, False, 0.40, 1024),
    "idefics3-8b-llama3": Published(32, 4096, 32, 8, 128, 14336, 128259, False, 0.43, 11492),
    "minicpm-v-2.6": Published(28, 3584, 28, 4, 128, 18944, 151666, False, 0.40, 3072),
}


def parameters(s: Published) -> tuple[float, float]:
    """(parameters a token's matmuls use, parameters read from memory each step): layers and LM head; the
    embedding table is read only by rows, so it counts once only where the LM head shares it."""
    attention = s.hidden * s.heads * s.head_dim * 2 + s.hidden * s.kv_heads * s.head_dim * 2
    mlp = 3 * s.hidden * s.intermediate
    head = s.vocab * s.hidden
    per_token = s.layers * (attention + mlp) + head
    return per_token, per_token + s.vision_b * 1e9


def simulate(
    s: Published,
    gpu: GpuSpec,
    requests: int,
    prefill: float,
    completion: float,
    images: float,
    width: int,
    bytes_per_value: float = 2.0,
) -> float:
    """Seconds a vLLM engine takes for `requests` requests of mean `prefill` prompt tokens to compute and
    `completion` tokens to generate, `width` at a time, by stepping through the schedule."""
    if requests <= 0:
        return 0.0
    matmul, weights = parameters(s)
    kv_per_token = 2 * s.layers * s.kv_heads * s.head_dim * bytes_per_value
    flops_s = gpu.tflops * 1e12 * COMPUTE_EFFICIENCY
    bytes_s = gpu.bandwidth_gbs * 1e9 * BANDWIDTH_EFFICIENCY
    vision = 2 * s.vision_b * 1e9 * s.patches * images / requests  # per request, at its prefill
    gen = max(1, round(completion))
    waiting, seconds = requests, 0.0
    # each running sequence: [prompt tokens still to prefill, tokens generated, context]
    running: list[list[float]] = []
    while waiting or running:
        while waiting and len(running) < width:
            running.append([prefill, 0, 0.0])
            waiting -= 1
        budget = MAX_BATCHED_TOKENS
        flops = nbytes = 0.0
        decoding = [r for r in running if r[0] <= 0]
        for r in decoding:  # one token each; attention reads the whole context
            flops += 2 * matmul + 4 * s.layers * s.heads * s.head_dim * r[2]
            nbytes += kv_per_token * r[2]
            r[1] += 1
            r[2] += 1
        budget -= len(decoding)
        for r in (r for r in running if r[0] > 0):
            if budget <= 0:
                break
            chunk = min(r[0], budget)
            if r[2] == 0:
                flops += vision
            flops += 2 * matmul * chunk + 4 * s.layers * s.heads * s.head_dim * chunk * (r[2] + chunk / 2)
            r[0] -= chunk
            r[2] += chunk
            budget -= chunk
        nbytes += weights * bytes_per_value
        seconds += max(flops / flops_s, nbytes / bytes_s)
        running = [r for r in running if r[1] < gen]
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=Path("benchmarks/cross-family.toml"))
    ap.add_argument("--gpu", default="H100", help="a GPU of the plan's table: " + ", ".join(g.name for g in GPUS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    gpu = next((g for g in GPUS if g.name.lower() == args.gpu.lower()), None)
    if gpu is None:
        raise SystemExit(f"--gpu {args.gpu}: not in the table ({', '.join(g.name for g in GPUS)})")
    config = load_config(args.config)
    config = config.model_copy(update={"engine": config.engine.model_copy(update={"cache": None})})
    plan = estimate(config, Path("/nonexistent/plan-model"), for_gpu=gpu.name)  # nothing cached: the whole study
    rows = []
    for cost in plan.models:
        card = config.card(cost.model)
        mine = [r for r in plan.rows if r.model == cost.model]
        requests = sum(r.to_send for r in mine)
        prefill = sum(r.prefill_tokens for r in mine) / max(1, requests)
        images = sum(r.images for r in mine)
        completion = cost.expected_completion_tokens / max(1, requests)
        shape = SHAPES.get(cost.model)
        if shape is None or cost.seconds is None:
            continue
        first = simulate(shape, gpu, requests, prefill, completion, images, gpu_server_concurrency(card, config.engine))
        plan_s = cost.seconds  # the plan's own roofline, on the GPU asked for
        rows.append(
            {
                "model": cost.model,
                "requests": requests,
                "prefill_per_request": round(prefill),
                "completion_per_request": round(completion),
                "plan_min": round(plan_s / 60, 1),
                "first_principles_min": round(first / 60, 1),
                "ratio": round(plan_s / first, 3) if first else None,
                "plan_load_s": cost.load_seconds,
            }
        )
    off = [r for r in rows if r["ratio"] is None or abs(r["ratio"] - 1) > TOLERANCE]
    if args.json:
        print(json.dumps({"config": str(args.config), "gpu": gpu.name, "rows": rows, "within": not off}, indent=2))
    else:
        print(f"{args.config} on one {gpu.name}: the plan's minutes beside a step simulation from published shapes")
        print(
            "| model | requests | prefill/request | completion/request | plan (min) | first principles (min) "
            "| plan / first principles | one load (s) |\n|---|---|---|---|---|---|---|---|"
        )
        for r in rows:
            print(
                f"| {r['model']} | {r['requests']:,} | {r['prefill_per_request']} | {r['completion_per_request']} "
                f"| {r['plan_min']} | {r['first_principles_min']} | {r['ratio']} | {r['plan_load_s']} |"
            )
        total_plan = sum(r["plan_min"] for r in rows)
        total_first = sum(r["first_principles_min"] for r in rows)
        print(f"| all | | | | {total_plan:.1f} | {total_first:.1f} | {total_plan / total_first:.3f} | |")
    for r in off:
        print(f"{r['model']}: the plan is off by more than {TOLERANCE:.0%} (ratio {r['ratio']})", file=sys.stderr)
    return 1 if off else 0


if __name__ == "__main__":
    raise SystemExit(main())
