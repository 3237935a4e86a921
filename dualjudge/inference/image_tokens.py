"""How many prompt tokens one image becomes for a model: what `dualjudge plan` and the preflight's KV-cache
check count an image request with.

In order of trust:
- the model's own processor, once its weights are here: exactly what vLLM inserts (vLLM expands an image
  with the same processor);
- the processor of the card's architecture with the published checkpoint's image settings (`processor` in
  the card, inference/tiny/): the same image placeholders; the few framing tokens around them (newlines,
  tile markers) are counted by a stand-in tokenizer, so the count may differ from the real one by those;
- the card's `image_tokens`, for a model transformers has no processor of (a repository's own code): an
  estimate, and said so;
- a 24 x 24 LLaVA-style grid (576) for a card that says nothing.
The count is what an image adds to a one-line prompt through the chat template: its placeholders and the
tokens the template puts around it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dualjudge.inference.cards import ModelCard
from dualjudge.inference.weights import locate

DEFAULT_IMAGE_TOKENS = 576  # a 24 x 24 LLaVA-style grid, for a card that does not say


@dataclass(frozen=True)
class ImageTokens:
    count: int
    method: str  # how it was counted, in words
    estimate: bool  # not counted by a processor of this architecture


def processor_image_tokens(processor: Any, px: int) -> int | None:
    """The prompt tokens one px x px image adds through `processor` (a one-line prompt with and without the
    image); None when the processor cannot say (no image processor, no image token, no chat template)."""
    try:
        from PIL import Image as PILImage

        if not hasattr(processor, "image_processor"):
            return None
        image = PILImage.new("RGB", (px, px), (255, 255, 255))

        def prompt(with_image: bool) -> str:
            content = [{"type": "image"}] if with_image else []
            messages = [{"role": "user", "content": [*content, {"type": "text", "text": "What sign is this?"}]}]
            return str(processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with_image = len(processor(text=[prompt(True)], images=[image])["input_ids"][0])
            without = len(processor(text=[prompt(False)])["input_ids"][0])
    except Exception:  # any processor's own failure means "cannot say": the next source is used
        return None
    return with_image - without if with_image > without else None


def _own_processor(path: Path) -> Any:
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(path))  # type: ignore[no-untyped-call]  # an untyped library


@lru_cache(maxsize=64)
def _counted(card_json: str, weights: str | None, identity: str | None, px: int) -> ImageTokens:
    """(`identity` keys the cache: other weights at the same folder are counted again.)"""
    card = ModelCard.model_validate_json(card_json)
    if weights is not None:
        try:
            counted = processor_image_tokens(_own_processor(Path(weights)), px)
        except Exception:  # a folder whose processor cannot load: the next source
            counted = None
        if counted is not None:
            return ImageTokens(counted, f"{counted} a image (the model's own processor, {px} px)", estimate=False)
    arch = card.processor_arch
    if arch is not None:
        from dualjudge.inference.tiny import architecture, processor

        counted = processor_image_tokens(processor(arch), px)
        if counted is not None:
            published = architecture(arch).published
            return ImageTokens(
                counted,
                f"{counted} a image ({type(processor(arch)).__name__} with {published}'s settings, {px} px; "
                f"framing tokens by a stand-in tokenizer)",
                estimate=False,
            )
    if card.image_tokens:
        return ImageTokens(
            card.image_tokens, f"{card.image_tokens} a image (an estimate: {card.image_tokens_source or 'the card'})", estimate=True
        )
    return ImageTokens(DEFAULT_IMAGE_TOKENS, f"{DEFAULT_IMAGE_TOKENS} a image (an estimate: the card says nothing)", estimate=True)


def image_tokens(card: ModelCard, px: int) -> ImageTokens:
    """The prompt tokens one px x px image becomes for the card's model, and how that was counted."""
    found = locate(card)
    if found is None:
        return _counted(card.model_dump_json(), None, None, px)
    return _counted(card.model_dump_json(), str(found.path), found.identity, px)
