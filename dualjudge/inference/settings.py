"""The engine settings: the `[engine]` section of a run configuration, declared once.

Which of them can change a result is part of each field's schema (dualjudge.schema.setting): the
backend always; the grammar backend of the backend in use; concurrency, timeouts, retries, the API key
of attached endpoints, the endpoints themselves and the shared cache file never.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, SecretStr

from dualjudge.schema import Distinct, Float, Int, Str, result_fields, setting

Backend = Literal["vllm", "transformers"]
BACKENDS: tuple[str, ...] = get_args(Backend)
StructuredBackend = Literal["xgrammar", "guidance", "outlines", "lm-format-enforcer", "auto"]
STRUCTURED_BACKENDS: tuple[str, ...] = get_args(StructuredBackend)
GrammarBackend = Literal["xgrammar", "llguidance", "outlines_core"]
GRAMMAR_BACKENDS: tuple[str, ...] = get_args(GrammarBackend)


class EngineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = setting("vllm")
    concurrency: Int = setting(32, affects_results=False, ge=1, le=1024)  # per endpoint, or batch size
    structured_backend: StructuredBackend = setting("xgrammar", affects_results="vllm")  # vLLM's grammar backend
    grammar_backend: GrammarBackend = setting("xgrammar", affects_results="transformers")  # in-process Outlines
    startup_timeout_s: Float = setting(900.0, affects_results=False, gt=0)
    retries: Int = setting(4, affects_results=False, ge=0, le=20)
    # for attached endpoints; never written to the store or the manifest
    api_key: SecretStr = setting(SecretStr("EMPTY"), affects_results=False)
    cache: Str | None = setting(None, affects_results=False)  # a shared response cache file, reused across runs
    endpoints: dict[Str, Annotated[tuple[Str, ...], Distinct]] = setting({}, affects_results=False)

    def result_fields(self) -> dict[str, object]:
        """The settings that can change this backend's results (part of every request's identity)."""
        return result_fields(self, self.backend)
