"""Idefics3 and SmolVLM (SmolVLM2): a SigLIP-style tower over tiles of the image, upsampled to the longest
edge, split into a grid of square tiles plus a global view, each tile's patches shuffled down by a scale
factor; markers name every tile (<row_1_col_1> ...). SmolVLM is the same design at 384 px tiles and a
scale factor of 3, with a video processor beside the image one."""

from __future__ import annotations

from typing import Any

from dualjudge.inference.tiny.architecture import VISION, Ids, TinyArchitecture, Tokens

TILES = tuple(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7))


def _template(bos: str) -> str:
    """The published templates' shape: `User:<image>text<end_of_utterance>` turns, then `Assistant:`."""
    return (
        bos + "{% for m in messages %}{{ m['role'] | capitalize }}"
        "{% if m['content'] is not string and m['content'][0]['type'] in ('image', 'image_url') %}{{ ':' }}"
        "{% else %}{{ ': ' }}{% endif %}"
        "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
        "{% if c['type'] == 'text' %}{{ c['text'] }}{% elif c['type'] in ('image', 'image_url') %}{{ '<image>' }}{% endif %}"
        "{% endfor %}{% endif %}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
    )


def _idefics3_config(ids: Ids) -> Any:
    from transformers import Idefics3Config

    return Idefics3Config(
        text_config={"model_type": "llama", **IDEFICS3.text_config(ids)},
        vision_config={"image_size": 364, "patch_size": 14, **VISION},  # 26 x 26 patches a tile, 169 tokens at scale 2
        scale_factor=2,
        image_token_id=ids["<image>"],
        pad_token_id=ids["<|end_of_text|>"],
        tie_word_embeddings=False,
    )


def _idefics3_processor(tok: Any, template: str) -> Any:
    from transformers import Idefics3ImageProcessor, Idefics3Processor

    # preprocessor_config.json of HuggingFaceM4/Idefics3-8B-Llama3: tiles of 364 px, the longest edge to 4 x 364
    images = Idefics3ImageProcessor(
        do_image_splitting=True,
        size={"longest_edge": 4 * 364},
        max_image_size={"longest_edge": 364},
        resample=1,
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
    )
    return Idefics3Processor(image_processor=images, tokenizer=tok, chat_template=template, image_seq_len=169)


def _smolvlm_config(ids: Ids) -> Any:
    from transformers import SmolVLMConfig

    return SmolVLMConfig(
        text_config={"model_type": "llama", **SMOLVLM.text_config(ids)},
        vision_config={"image_size": 384, "patch_size": 14, **VISION},  # 27 x 27 patches a tile, 81 tokens at scale 3
        scale_factor=3,
        image_token_id=ids["<image>"],
        pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=False,
    )


def _smolvlm_processor(tok: Any, template: str) -> Any:
    from transformers import SmolVLMImageProcessor, SmolVLMProcessor, SmolVLMVideoProcessor

    # preprocessor_config.json of HuggingFaceTB/SmolVLM2-2.2B-Instruct: tiles of 384 px, the longest edge to 4 x 384
    images = SmolVLMImageProcessor(
        do_image_splitting=True,
        size={"longest_edge": 4 * 384},
        max_image_size={"longest_edge": 384},
        resample=1,
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
    )
    return SmolVLMProcessor(
        image_processor=images, tokenizer=tok, video_processor=SmolVLMVideoProcessor(), chat_template=template, image_seq_len=81
    )


IDEFICS3 = TinyArchitecture(
    name="idefics3",
    model_class="Idefics3ForConditionalGeneration",
    published="HuggingFaceM4/Idefics3-8B-Llama3",
    tokens=Tokens(
        specials=(
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<fake_token_around_image>",
            "<image>",
            "<end_of_utterance>",
            "<global-img>",
            *TILES,
        ),
        roles={"bos_token": "<|begin_of_text|>", "eos_token": "<end_of_utterance>", "pad_token": "<|end_of_text|>"},
    ),
    chat_template=lambda: _template("<|begin_of_text|>"),
    config=_idefics3_config,
    processor=_idefics3_processor,
)

SMOLVLM = TinyArchitecture(
    name="smolvlm",
    model_class="SmolVLMForConditionalGeneration",
    published="HuggingFaceTB/SmolVLM2-2.2B-Instruct",
    tokens=Tokens(
        specials=(
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<fake_token_around_image>",
            "<image>",
            "<end_of_utterance>",
            "<global-img>",
            "<video>",
            *TILES,
        ),
        roles={"bos_token": "<|im_start|>", "eos_token": "<end_of_utterance>", "pad_token": "<|endoftext|>"},
        named={
            "fake_image_token": "<fake_token_around_image>",
            "image_token": "<image>",
            "end_of_utterance_token": "<end_of_utterance>",
            "global_image_token": "<global-img>",
            "video_token": "<video>",
        },
    ),
    chat_template=lambda: _template("<|im_start|>"),
    config=_smolvlm_config,
    processor=_smolvlm_processor,
)
