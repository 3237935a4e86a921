"""Run configuration: a TOML file validated with pydantic.

Unknown keys and bad values are one-line errors that name the key and the file. The part of the
configuration that decides results (everything but engine plumbing) has a fingerprint; a run
directory refuses to resume under a configuration with a different fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import get_card
from dualjudge.protocol.judges import JudgeKind
from dualjudge.protocol.systems import Strategy
from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.occlusion import MODES, VISIBILITIES
from dualjudge.tomlfile import first_error, read_toml


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunSection(_Section):
    name: str = Field(default="run", pattern=r"^[A-Za-z0-9_.-]+$")
    seed: int = Field(default=0, ge=0)


class TestbedSection(_Section):
    signs: Literal["all"] | tuple[str, ...] = "all"
    visibilities: tuple[float, ...] = VISIBILITIES
    modes: tuple[Literal["random_block", "bottom_up"], ...] = MODES
    repeats: int = Field(default=3, ge=1, le=100)
    modality: Literal["image", "text"] = "image"
    size: int = Field(default=512, ge=32, le=2048)
    images: str | None = None  # folder of official artwork to use instead of renders

    @field_validator("signs")
    @classmethod
    def _known_signs(cls, v: object) -> object:
        if v != "all":
            known = set(default_catalogue().codes)
            for code in v:  # type: ignore[union-attr]
                if code not in known:
                    raise ValueError(f"unknown sign code {code!r}")
        return v

    @field_validator("visibilities")
    @classmethod
    def _levels(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        for x in v:
            if not 0 < x <= 1:
                raise ValueError(f"visibility {x} is outside (0, 1]")
        return v

    def codes(self) -> tuple[str, ...] | None:
        return None if self.signs == "all" else tuple(self.signs)


class SystemsSection(_Section):
    models: tuple[str, ...] = Field(min_length=1)
    strategies: tuple[Strategy, ...] = ("sa", "cot", "coi", "ma")
    sign_type: Literal["constrained", "parsed"] = "constrained"
    temperature: float = Field(default=0.7, ge=0, le=2)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=768, ge=64, le=8192)


class JudgesSection(_Section):
    models: tuple[str, ...] = Field(min_length=1)
    kinds: tuple[JudgeKind, ...] = ("quality", "equivalence")
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=384, ge=64, le=4096)


class ProbesSection(_Section):
    order: bool = False
    order_pairs: int = Field(default=50, ge=1)
    padding: bool = False
    padding_samples: int = Field(default=50, ge=1)
    padding_max_tokens: int = Field(default=512, ge=64, le=4096)


class EngineSection(_Section):
    backend: Literal["vllm", "transformers"] = "vllm"
    concurrency: int = Field(default=32, ge=1, le=1024)
    structured_backend: Literal["xgrammar", "guidance", "outlines", "lm-format-enforcer", "auto"] = "xgrammar"
    grammar_backend: Literal["xgrammar", "llguidance", "outlines_core"] = "xgrammar"
    startup_timeout_s: float = Field(default=900.0, gt=0)
    retries: int = Field(default=4, ge=0, le=20)
    api_key: str = "EMPTY"
    cache: str | None = None  # a shared response cache file, reused across runs
    endpoints: dict[str, tuple[str, ...]] = Field(default_factory=dict)


class RunConfig(_Section):
    run: RunSection = RunSection()
    testbed: TestbedSection = TestbedSection()
    systems: SystemsSection
    judges: JudgesSection
    probes: ProbesSection = ProbesSection()
    engine: EngineSection = EngineSection()

    @model_validator(mode="after")
    def _models_exist(self) -> RunConfig:
        for name in (*self.systems.models, *self.judges.models, *self.engine.endpoints):
            get_card(name)  # raises a DualjudgeError naming the unknown model
        if self.testbed.modality == "image":
            for name in self.systems.models:
                if "image" not in get_card(name).modalities:
                    raise ValueError(f"systems.models: {name} is text-only; set testbed.modality = \"text\"")
        return self

    def fingerprint(self) -> str:
        """Hash of everything that decides results (not concurrency, endpoints, timeouts or cache file)."""
        data = self.model_dump(mode="json")
        for key in ("concurrency", "startup_timeout_s", "retries", "api_key", "cache", "endpoints"):
            data["engine"].pop(key, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def all_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.systems.models, *self.judges.models)))


def load_config(path: Path) -> RunConfig:
    raw = read_toml(path, "config file")
    try:
        return RunConfig(**raw)
    except ValidationError as e:
        where, msg = first_error(e)
        raise DualjudgeError(f"{path}: {where}: {msg}") from None
