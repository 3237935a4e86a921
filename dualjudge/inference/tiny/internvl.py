"""InternVL3 in its transformers layout (the `-hf` checkpoints): InternViT over 448 px tiles, a pixel
shuffle to 256 tokens a tile between <img> and </img>, and a Qwen2.5 decoder. The processor tiles an image
by its aspect ratio (one tile for a square image of 512 px)."""

from __future__ import annotations

from typing import Any

from dualjudge.inference.tiny.architecture import VISION, Ids, TinyArchitecture, Tokens

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] in ('image', 'image_url') %}<IMG_CONTEXT>\n"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _config(ids: Ids) -> Any:
    from transformers import InternVLConfig

    return InternVLConfig(
        text_config={"model_type": "qwen2", **ARCH.text_config(ids)},
        vision_config={"image_size": 448, "patch_size": 14, **VISION},
        image_token_id=ids["<IMG_CONTEXT>"],
        image_seq_length=256,
        downsample_ratio=0.5,
        tie_word_embeddings=False,
    )


def _processor(tok: Any, template: str) -> Any:
    from transformers import GotOcr2ImageProcessor, InternVLProcessor, InternVLVideoProcessor

    # OpenGVLab/InternVL3-8B-hf: 448 px tiles, 1 to 12 of them, ImageNet mean and std; the processor's own
    # call turns tiling on (InternVLProcessorKwargs), as vLLM's does
    images = GotOcr2ImageProcessor(
        size={"height": 448, "width": 448},
        min_patches=1,
        max_patches=12,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    )
    return InternVLProcessor(
        image_processor=images,
        tokenizer=tok,
        video_processor=InternVLVideoProcessor(),
        chat_template=template,
        image_seq_length=256,
    )


ARCH = TinyArchitecture(
    name="internvl",
    model_class="InternVLForConditionalGeneration",
    published="OpenGVLab/InternVL3-8B-hf",
    tokens=Tokens(
        specials=("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"),
        roles={"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        named={
            "start_image_token": "<img>",
            "end_image_token": "</img>",
            "context_image_token": "<IMG_CONTEXT>",
            "video_token": "<video>",
        },
    ),
    chat_template=lambda: TEMPLATE,
    config=_config,
    processor=_processor,
)
