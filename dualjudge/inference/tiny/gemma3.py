"""Gemma 3: a SigLIP tower at 896 px (64 x 64 patches pooled to 256 soft tokens) and a Gemma 3 decoder with
sliding-window layers. The tokenizer holds Gemma's newline runs whole: vLLM's Gemma 3 processing looks
"\\n" to "\\n\\n\\n\\n" up in the vocabulary."""

from __future__ import annotations

from typing import Any

from dualjudge.inference.tiny.architecture import VISION, Ids, TinyArchitecture, Tokens
from dualjudge.paths import models_dir


def _template() -> str:
    return (models_dir() / "templates" / "gemma.jinja").read_text()


def _config(ids: Ids) -> Any:
    from transformers import Gemma3Config

    text = ARCH.text_config(ids, num_key_value_heads=1, query_pre_attn_scalar=64, sliding_window=512)
    text["eos_token_id"] = [ids["<eos>"], ids["<end_of_turn>"]]
    return Gemma3Config(
        text_config=text,
        vision_config={"image_size": 896, "patch_size": 14, "vision_use_head": False, **VISION},
        mm_tokens_per_image=256,
        boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
    )


def _processor(tok: Any, template: str) -> Any:
    from transformers import Gemma3ImageProcessor, Gemma3Processor

    # preprocessor_config.json of google/gemma-3-4b-it (and -12b-it): 896 x 896, bilinear, mean and std 0.5
    images = Gemma3ImageProcessor(size={"height": 896, "width": 896}, resample=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return Gemma3Processor(image_processor=images, tokenizer=tok, chat_template=template, image_seq_length=256)


ARCH = TinyArchitecture(
    name="gemma3",
    model_class="Gemma3ForConditionalGeneration",
    published="google/gemma-3-4b-it",
    tokens=Tokens(
        specials=(
            "<pad>",
            "<eos>",
            "<bos>",
            "<start_of_turn>",
            "<end_of_turn>",
            "<start_of_image>",
            "<end_of_image>",
            "<image_soft_token>",
        ),
        roles={"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"},
        named={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"},
        added=("\n", "\n\n", "\n\n\n", "\n\n\n\n"),
    ),
    chat_template=_template,
    config=_config,
    processor=_processor,
    nested_tower=True,
)
