"""GPU check of the transformers engine with a random-weight LLaVA of real size (about 2B parameters).

    python benchmarks/perf/gpu_transformers.py [--out /tmp/llava-2b]

Builds a LLaVA-style model from configs (CLIP ViT-L/14-336 shape + a Llama text model with 2,048
hidden, 24 layers, head_dim 128, 32k vocabulary) with random bf16 weights, loads it in the
in-process engine on CUDA, and measures generated tokens/s at batch 1 and 32 (SIGN_TYPE-regex
constrained, 128 new tokens, one PNG variant per request) and the peak GPU memory. Only meaningful
on a CUDA machine; it exits with a message elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import time
from pathlib import Path


def build(out: Path) -> Path:
    import torch
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    from dualjudge.inference.tiny import make_tiny_llava

    tiny = make_tiny_llava(out / "tokenizer-source")
    processor = LlavaProcessor.from_pretrained(tiny)
    tok = processor.tokenizer
    text = LlamaConfig(
        vocab_size=32000,
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=24,
        num_attention_heads=16,
        num_key_value_heads=16,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = CLIPVisionConfig(
        image_size=336,
        patch_size=14,
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        projection_dim=768,
    )
    config = LlavaConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=(336 // 14) ** 2,
    )
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlavaForConditionalGeneration(config).to(torch.bfloat16)
    target = out / "model"
    model.save_pretrained(target)
    from transformers import CLIPImageProcessor

    LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}),
        tokenizer=tok,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=processor.chat_template,
    ).save_pretrained(target)
    params = sum(p.numel() for p in model.parameters()) / 1e9
    del model
    torch.cuda.empty_cache()
    print(f"built a random-weight LLaVA with {params:.2f} B parameters at {target}")
    return target


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU here: this benchmark needs one")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("/tmp/llava-2b"))
    path = build(ap.parse_args().out)

    from dualjudge.inference.cards import get_card
    from dualjudge.inference.transformers_engine import TransformersEngine
    from dualjudge.inference.types import Constraint, GenerationRequest, Image, Message, Sampling
    from dualjudge.inference.weights import LocalWeights
    from dualjudge.protocol import sign_type_pattern
    from dualjudge.testbed.render import render_sign

    buf = io.BytesIO()
    render_sign("670V30", 336).image.save(buf, format="PNG")
    image = Image.from_png(buf.getvalue())
    card = get_card("tiny-llava").model_copy(update={"name": "llava-2b-random"})
    pattern = Constraint.regex(sign_type_pattern(400))
    print(f"{'batch':>5} {'requests':>8} {'tokens':>7} {'seconds':>8} {'tok/s':>8} {'peak GiB':>9}")
    for batch in (1, 32):
        torch.cuda.reset_peak_memory_stats()
        engine = TransformersEngine(card, LocalWeights(path, "llava-2b-random", {}), device="cuda", max_batch=batch)
        greedy = Sampling(temperature=0.0, max_tokens=128, seed=0)
        reqs = [GenerationRequest((Message("user", f"Which sign is this? {i}", image),), greedy, pattern) for i in range(batch * 2)]

        async def go(engine):  # type: ignore[no-untyped-def]
            await engine.generate(reqs[0])  # warm-up
            t0 = time.perf_counter()
            res = await asyncio.gather(*[engine.generate(r) for r in reqs])
            await engine.close()
            return res, time.perf_counter() - t0

        results, elapsed = asyncio.run(go(engine))
        tokens = sum(r.completion_tokens for r in results)
        print(
            f"{batch:>5} {len(reqs):>8} {tokens:>7} {elapsed:8.1f} {tokens / elapsed:8.1f} "
            f"{torch.cuda.max_memory_allocated() / 2**30:9.2f}"
        )
        del engine
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
