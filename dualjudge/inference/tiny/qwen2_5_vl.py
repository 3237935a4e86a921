"""Qwen2.5-VL: Qwen's ViT (14 px patches merged 2 x 2, windowed attention, M-RoPE) and a Qwen2.5 decoder.
The image processor keeps the published pixel bounds, so a 512 px image is resized to 504 px: 324 tokens."""

from __future__ import annotations

from typing import Any

from dualjudge.inference.tiny.architecture import Ids, TinyArchitecture, Tokens

# the image sits between <|vision_start|> and <|vision_end|>, where the published template puts it
TEMPLATE = (
    "{% for m in messages %}{% if loop.first and m['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] in ('image', 'image_url') %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _config(ids: Ids) -> Any:
    from transformers import Qwen2_5_VLConfig

    # M-RoPE splits the 64-wide head's 32 rotary frequencies over time, height and width
    rope = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [8, 12, 12]}
    return Qwen2_5_VLConfig(
        text_config=ARCH.text_config(ids, rope_parameters=rope),
        vision_config={
            "depth": 2,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_heads": 2,
            "out_hidden_size": 128,
            "fullatt_block_indexes": [1],  # one windowed block, one full-attention block, as the published ViT mixes them
            "window_size": 112,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )


def _processor(tok: Any, template: str) -> Any:
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    # preprocessor_config.json of Qwen/Qwen2.5-VL-7B-Instruct (and -3B): 56 x 56 to 28 x 28 x 16384 pixels
    images = Qwen2VLImageProcessor(min_pixels=3136, max_pixels=12845056, patch_size=14, temporal_patch_size=2, merge_size=2)
    return Qwen2_5_VLProcessor(  # type: ignore[no-untyped-call]  # an untyped library
        image_processor=images, tokenizer=tok, video_processor=Qwen2VLVideoProcessor(), chat_template=template
    )


ARCH = TinyArchitecture(
    name="qwen2.5-vl",
    model_class="Qwen2_5_VLForConditionalGeneration",
    published="Qwen/Qwen2.5-VL-7B-Instruct",
    tokens=Tokens(
        specials=(
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|image_pad|>",
            "<|video_pad|>",
        ),
        roles={"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    ),
    chat_template=lambda: TEMPLATE,
    config=_config,
    processor=_processor,
)
