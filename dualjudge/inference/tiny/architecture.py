"""What a tiny architecture declares, and how one is built.

A tiny instance is the real transformers model class with a small random-weight config, the real
processor class with the image settings of the published checkpoint it stands for, a byte-level BPE
tokenizer trained here that holds the architecture's special tokens, and a chat template that places
the image where the published one does. vLLM, transformers and Outlines load it like the published
model, so the image path (processor, placeholders, position encoding, tiling) and the grammar backends
run for real; its output is noise by design.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Ids = Mapping[str, int]  # each special or added token -> its id in the tiny tokenizer

# the text decoder every tiny instance shares: head_dim 64 is a head size vLLM's CPU attention supports
VOCAB = 512
TEXT: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
}
# and its vision tower: two layers, width 64
VISION: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2}
# what the tokenizer is trained on: any byte can still be written (the byte-level alphabet is always kept)
CORPUS = [
    "A sign with a red ring and black figures.\nSIGN_TYPE: no_entry\n\n",
    '{"reasoning": "the same rule", "accuracy": 7, "completeness": 6, "relevance": 8, "equivalent": true}',
    "system user assistant model: describe the picture of the road sign",
]


@dataclass(frozen=True)
class Tokens:
    """The tokenizer's special tokens (ids 0, 1, ... in this order), the roles some of them play, the
    special tokens a processor reads by name, and ordinary tokens the published vocabulary holds whole."""

    specials: tuple[str, ...]
    roles: Mapping[str, str]  # bos_token / eos_token / pad_token / unk_token -> one of the specials
    named: Mapping[str, str] = field(default_factory=dict)  # e.g. image_token -> "<|image_pad|>"
    added: tuple[str, ...] = ()  # e.g. Gemma's "\n\n": vLLM's Gemma 3 processing looks them up


@dataclass(frozen=True)
class TinyArchitecture:
    """One architecture a model card can use, as a tiny instance. `config` makes the model config from the
    token ids; `processor` makes the processor class with the published settings from a tokenizer and the
    chat template. `nested_tower`: transformers saves a CLIP or SigLIP tower flat (`vision_tower.embeddings`)
    where the published checkpoints, and vLLM's loader, have `vision_tower.vision_model.embeddings`."""

    name: str
    model_class: str  # the transformers class, config.json's architectures[0], what vLLM's registry loads
    published: str  # the checkpoint whose processor settings and image placement the instance copies
    tokens: Tokens
    chat_template: Callable[[], str]
    config: Callable[[Ids], Any]
    processor: Callable[[Any, str], Any]
    nested_tower: bool = False

    def text_config(self, ids: Ids, **changes: Any) -> dict[str, Any]:
        """The shared tiny decoder, with this tokenizer's bos, eos and pad ids."""
        roles = self.tokens.roles
        return {
            **TEXT,
            "num_key_value_heads": 2,
            "head_dim": 64,
            "max_position_embeddings": 8192,
            "bos_token_id": ids[roles["bos_token"]] if "bos_token" in roles else None,
            "eos_token_id": ids[roles["eos_token"]],
            "pad_token_id": ids[roles["pad_token"]],
            "tie_word_embeddings": False,
            **changes,
        }


def tokenizer(arch: TinyArchitecture) -> Any:
    """A byte-level BPE tokenizer trained here (deterministic) that holds the architecture's tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - len(arch.tokens.added) - 32,  # room for the added tokens below the model's vocabulary
        special_tokens=list(arch.tokens.specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(CORPUS * 50, trainer)
    bpe.add_tokens([AddedToken(text, normalized=False) for text in arch.tokens.added])
    tok = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # an untyped library
        tokenizer_object=bpe, extra_special_tokens=dict(arch.tokens.named), **arch.tokens.roles
    )
    tok.chat_template = arch.chat_template()
    if len(tok) > VOCAB:
        raise AssertionError(f"{arch.name}: {len(tok)} tokens do not fit the tiny vocabulary of {VOCAB}")
    return tok


def token_ids(arch: TinyArchitecture, tok: Any) -> dict[str, int]:
    """Each special and added token's id; every one must be a single token."""
    ids = {text: tok.convert_tokens_to_ids(text) for text in (*arch.tokens.specials, *arch.tokens.added)}
    missing = [text for text, i in ids.items() if not isinstance(i, int) or tok.convert_ids_to_tokens(i) != text]
    if missing:
        raise AssertionError(f"{arch.name}: tokens {missing} are not single tokens")
    return ids


def processor(arch: TinyArchitecture) -> Any:
    """The architecture's processor with the published settings, in memory (what the plan counts images with)."""
    tok = tokenizer(arch)
    return arch.processor(tok, tok.chat_template)


def build(arch: TinyArchitecture, out: Path, seed: int = 0) -> Path:
    """Write the model, processor, tokenizer and chat template to `out`; the same seed writes the same bytes."""
    import torch
    import transformers
    from transformers import GenerationConfig

    tok = tokenizer(arch)
    ids = token_ids(arch, tok)
    config = arch.config(ids)
    torch.manual_seed(seed)
    model = getattr(transformers, arch.model_class)(config).eval()
    text = config.get_text_config()
    model.generation_config = GenerationConfig(
        bos_token_id=text.bos_token_id,
        eos_token_id=text.eos_token_id,  # type: ignore[no-untyped-call]  # an untyped library
        pad_token_id=text.pad_token_id,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    if arch.nested_tower:
        _nest_tower(out / "model.safetensors")
    arch.processor(tok, tok.chat_template).save_pretrained(out)
    return out


def _nest_tower(weights: Path) -> None:
    """`vision_tower.*` -> `vision_tower.vision_model.*`, the published layout; transformers reloads either."""
    from safetensors.torch import load_file, save_file

    state = load_file(weights)
    prefix, nested = "vision_tower.", "vision_tower.vision_model."
    renamed = {(nested + k[len(prefix) :] if k.startswith(prefix) and not k.startswith(nested) else k): v for k, v in state.items()}
    save_file(renamed, weights, metadata={"format": "pt"})
