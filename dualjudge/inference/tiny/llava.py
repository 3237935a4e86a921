"""LLaVA: a CLIP vision tower and a Llama decoder, at 32 px (16 image tokens): the fast model of the image
path's tests. No shipped card uses this processor; Pixtral's HF layout is LLaVA with another tower (pixtral.py)."""

from __future__ import annotations

from typing import Any

from dualjudge.inference.tiny.architecture import VISION, Ids, TinyArchitecture, Tokens

IMAGE_SIZE, PATCH = 32, 8
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] in ('image', 'image_url') %}<image>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _config(ids: Ids) -> Any:
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    vision = CLIPVisionConfig(image_size=IMAGE_SIZE, patch_size=PATCH, projection_dim=64, **VISION)
    return LlavaConfig(
        text_config=LlamaConfig(**ARCH.text_config(ids)),
        vision_config=vision,
        image_token_index=ids["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=(IMAGE_SIZE // PATCH) ** 2,
        projector_hidden_act="gelu",
        tie_word_embeddings=False,
    )


def _processor(tok: Any, template: str) -> Any:
    from transformers import CLIPImageProcessor, LlavaProcessor

    return LlavaProcessor(  # type: ignore[no-untyped-call]  # an untyped library
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
        ),
        tokenizer=tok,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # the CLS token: makes the processor's image-token count match vLLM's
        chat_template=template,
    )


ARCH = TinyArchitecture(
    name="llava",
    model_class="LlavaForConditionalGeneration",
    published="none: a test model (CLIP at 32 px, 8 px patches)",
    tokens=Tokens(
        specials=("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<pad>"),
        roles={"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<pad>"},
        named={"image_token": "<image>"},
    ),
    chat_template=lambda: TEMPLATE,
    config=_config,
    processor=_processor,
    nested_tower=True,
)
