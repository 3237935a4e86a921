"""Pixtral in its transformers layout (LLaVA with a Pixtral vision tower and a Mistral decoder, as in
mistral-community/pixtral-12b): 16 px patches at the image's own size up to 1024 px, rows of [IMG] tokens
closed by [IMG_BREAK], the last by [IMG_END]; 2D RoPE in the tower."""

from __future__ import annotations

from typing import Any

from dualjudge.inference.tiny.architecture import VISION, Ids, TinyArchitecture, Tokens

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] in ('user', 'system') %}[INST]"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] in ('image', 'image_url') %}[IMG]{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "[/INST]{% elif m['role'] == 'assistant' %}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}{{ c['text'] }}{% endfor %}{% endif %}"
    "{{ eos_token }}{% endif %}{% endfor %}"
)


def _config(ids: Ids) -> Any:
    from transformers import LlavaConfig

    return LlavaConfig(
        text_config={"model_type": "mistral", **ARCH.text_config(ids)},
        vision_config={"model_type": "pixtral", "image_size": 1024, "patch_size": 16, "head_dim": 32, **VISION},
        image_token_index=ids["[IMG]"],
        vision_feature_layer=-1,
        vision_feature_select_strategy="full",
        projector_hidden_act="gelu",
        multimodal_projector_bias=True,
        tie_word_embeddings=False,
    )


def _processor(tok: Any, template: str) -> Any:
    from transformers import PixtralImageProcessor, PixtralProcessor

    # mistral-community/pixtral-12b: the longest edge at most 1024 px (no upsampling), 16 px patches, no merge
    images = PixtralImageProcessor(size={"longest_edge": 1024}, patch_size={"height": 16, "width": 16})
    return PixtralProcessor(image_processor=images, tokenizer=tok, patch_size=16, spatial_merge_size=1, chat_template=template)


ARCH = TinyArchitecture(
    name="pixtral",
    model_class="LlavaForConditionalGeneration",
    published="mistral-community/pixtral-12b",
    tokens=Tokens(
        specials=("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]"),
        roles={"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<unk>"},
    ),
    chat_template=lambda: TEMPLATE,
    config=_config,
    processor=_processor,
)
