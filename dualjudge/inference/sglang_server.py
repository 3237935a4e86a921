"""The SGLang backend of a model server (`engine.backend = "sglang"`; server_process.py does the process,
port, log and stop).

The server runs as `python -m sglang.launch_server` with the card's serving facts (its `[vllm]` table's
dtype, context length, tensor parallelism, chat template, memory share and batch, so a card states them
once) and its `[sglang]` table. SGLang takes its API key only as a flag, so the key travels in a YAML file
passed with `--config` (mode 0600, in a private folder, removed as soon as the server has read it or
stopped): never on the command line. Requests use the "sglang" dialect (dialects.py): a JSON schema as
`response_format`, a regex in SGLang's own `regex` field, both enforced during decoding; the hang watch
reads SGLang's token counters on /metrics (`--enable-metrics`).

SGLang lives in an environment of its own: it pins other releases of what dualjudge pins (outlines 0.1.11
against 1.3.3, its own torch), so the two cannot share one. `make sglang-env` (scripts/sglang-env.sh) makes
`.venv-sglang` with the pinned release; DUALJUDGE_SGLANG_PYTHON names that environment's Python, which
starts the server (`sglang_python`; without it, this Python). `--resolve` checks that the pinned release
resolves in a fresh environment (pip's resolver, no download of the packages themselves).

SGLang does not run on this project's CPU machines, so its use is checked statically, the way vLLM's GPU
wheel is (vllm_check.py): `python -m dualjudge.inference.sglang_server --check` downloads the pinned wheel
without dependencies and finds, by parsing its sources, every flag (SGLang derives its flags from the
dataclass fields of `sglang/srt/arg_groups/fields/`), request field, route and metric used here.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard
from dualjudge.inference.server_process import ServerProcess
from dualjudge.inference.vllm_api import Use
from dualjudge.inference.vllm_check import Sources, download_wheel, found_in, parsed, string_constants

SGLANG_PIN = "0.5.23"  # the release this module is checked against and scripts/sglang-env.sh installs
PYTHON_ENV = "DUALJUDGE_SGLANG_PYTHON"  # the Python of the environment SGLang is installed in
LAUNCH_MODULE = "sglang.launch_server"
PROGRESS_COUNTERS = ("sglang:prompt_tokens", "sglang:generation_tokens")
# engine.structured_backend takes vLLM's names; SGLang's --grammar-backend names the same engines so
GRAMMAR_BACKENDS = {"xgrammar": "xgrammar", "guidance": "llguidance", "outlines": "outlines"}
FIELDS_PACKAGE = "sglang.srt.arg_groups.fields"  # each field of its classes is a --flag
SERVER_ARGS_MODULE = "sglang.srt.server_args"  # the flags added by hand (--config among them)

# every flag command() and card_flags() can pass
SERVER_FLAGS: tuple[str, ...] = (
    "--model-path",
    "--served-model-name",
    "--host",
    "--port",
    "--random-seed",
    "--enable-metrics",
    "--config",
    "--grammar-backend",
    "--dtype",
    "--context-length",
    "--mem-fraction-static",
    "--tp-size",
    "--max-running-requests",
    "--trust-remote-code",
    "--chat-template",
    "--tokenizer-mode",
    "--load-format",
    "--attention-backend",
)

USES: tuple[Use, ...] = (
    Use("module", LAUNCH_MODULE, (LAUNCH_MODULE,), "the server: SGLang's launch command"),
    Use("name", "prepare_server_args", (SERVER_ARGS_MODULE,), "the launch command parses the flags with it"),
    Use("field", "Serving.api_key", ("sglang.srt.arg_groups.fields.serving",), "the key, read from the --config file"),
    Use("field", "ChatCompletionRequest.regex", ("sglang.srt.entrypoints.openai.protocol",), "the SIGN_TYPE line"),
    Use(
        "field",
        "ChatCompletionRequest.response_format",
        ("sglang.srt.entrypoints.openai.protocol",),
        "JSON-schema verdicts",
    ),
    *(
        Use("route", route, ("sglang.srt.entrypoints",), "readiness and every request")
        for route in ("/health", "/v1/chat/completions")
    ),
    *(
        Use("metric", f"{name}_total", ("sglang.srt.observability.metrics_collector",), "the hang watch reads these")
        for name in PROGRESS_COUNTERS
    ),
)


def card_flags(card: ModelCard, structured_backend: str = "xgrammar") -> list[str]:
    """The card's serving arguments for SGLang (its `[vllm]` facts in SGLang's names, then `[sglang]`)."""
    v, s = card.vllm, card.sglang
    if structured_backend != "auto" and structured_backend not in GRAMMAR_BACKENDS:
        raise DualjudgeError(
            f"SGLang has no {structured_backend!r} grammar backend; set engine.structured_backend to one of "
            f"{', '.join(GRAMMAR_BACKENDS)} or auto"
        )
    args = ["--dtype", v.dtype, "--context-length", str(v.max_model_len)]
    if structured_backend != "auto":
        args += ["--grammar-backend", GRAMMAR_BACKENDS[structured_backend]]
    if v.trust_remote_code:
        args.append("--trust-remote-code")
    template = card.chat_template_path()
    for flag, value in (
        ("--mem-fraction-static", s.mem_fraction_static or v.gpu_memory_utilization),
        ("--tp-size", v.tensor_parallel_size),
        ("--max-running-requests", v.max_num_seqs),
        ("--chat-template", template),
        ("--tokenizer-mode", v.tokenizer_mode),
        ("--load-format", v.load_format),
        ("--attention-backend", s.attention_backend),
    ):
        if value is not None:
            args += [flag, str(value)]
    return args + list(s.extra_args)


def sglang_python() -> str:
    """The Python that runs SGLang: DUALJUDGE_SGLANG_PYTHON, else this one."""
    return os.environ.get(PYTHON_ENV) or sys.executable


@lru_cache(maxsize=4)
def _version_in(python: str) -> str | None:
    done = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('sglang'))"], capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def installed_version() -> str | None:
    """ "sglang 0.5.23" as the Python that runs SGLang has it; None when it has none."""
    python = sglang_python()
    if python == sys.executable:
        try:
            return f"sglang {importlib.metadata.version('sglang')}"
        except importlib.metadata.PackageNotFoundError:
            return None
    try:
        version = _version_in(python)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return f"sglang {version}" if version else None


def not_installed() -> str:
    """What to do when SGLang is missing, in one line."""
    where = os.environ.get(PYTHON_ENV)
    return (
        f"SGLang is not installed for {where} ({PYTHON_ENV})"
        if where
        else f"SGLang is not installed here: `make sglang-env` makes .venv-sglang, then export {PYTHON_ENV}=.venv-sglang/bin/python"
    )


class SglangServer(ServerProcess):
    LABEL = "SGLang"

    @classmethod
    def engine_version(cls) -> str:
        return installed_version() or "sglang (not installed)"

    LOG_PREFIX = "sglang"
    progress_counters: tuple[str, ...] = PROGRESS_COUNTERS

    _key_dir: Path | None = None  # the private folder of the --config key file, while the server starts

    def check_settings(self, card: ModelCard, structured_backend: str) -> None:
        self.flags = card_flags(card, structured_backend)  # a bad grammar backend fails here, in one line

    @property
    def key_file(self) -> Path | None:
        """The --config file holding the key while the server starts (None before launch and after)."""
        return self._key_dir / "key.yaml" if self._key_dir is not None else None

    def command(self) -> list[str]:
        assert self.key_file is not None, "launch() writes the key file first"
        return [
            sglang_python(),
            "-m",
            LAUNCH_MODULE,
            "--model-path",
            str(self.weights.path),
            "--served-model-name",
            self.card.name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--random-seed",
            str(self.seed),
            "--enable-metrics",
            "--config",
            str(self.key_file),
            *self.flags,
        ]

    def backend_environment(self) -> dict[str, str]:
        return {}

    def launch(self) -> None:
        self._key_dir = Path(tempfile.mkdtemp(prefix="dualjudge-sglang-"))  # mode 0700
        key_file = self._key_dir / "key.yaml"
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f'api-key: "{self.api_key}"\n')  # hex: nothing to escape
        try:
            super().launch()
        except BaseException:
            self._forget_key()
            raise

    def wait_ready(self) -> None:
        try:
            super().wait_ready()
        finally:
            self._forget_key()  # read at startup only

    def stop(self, timeout: float = 60.0) -> None:
        try:
            super().stop(timeout)
        finally:
            self._forget_key()

    def _forget_key(self) -> None:
        if self._key_dir is not None:
            shutil.rmtree(self._key_dir, ignore_errors=True)
            self._key_dir = None


SERVER = SglangServer  # engine.backend = "sglang" (engines.server_class)


# -- the static check ----------------------------------------------------------------------------------------


def _arg_call(annotation: ast.expr) -> ast.Call | None:
    """The `Arg(...)` in a field's `A[type, Arg(...)]` annotation, if any."""
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple):
        for item in annotation.slice.elts[1:]:
            if isinstance(item, ast.Call) and getattr(item.func, "id", None) == "Arg":
                return item
    return None


def field_flags(tree: ast.Module) -> set[str]:
    """The flags SGLang derives from the annotated fields of a module's classes: `--field-name` (or the
    field's `cli_name`) and its `aliases`, except fields marked `no_cli=True`."""
    flags: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            if not isinstance(item.annotation, ast.Subscript) or item.target.id.startswith("_"):
                continue
            call = _arg_call(item.annotation)
            keywords = {k.arg: k.value for k in (call.keywords if call is not None else [])}
            no_cli = keywords.get("no_cli")
            if isinstance(no_cli, ast.Constant) and no_cli.value is True:
                continue
            name = keywords.get("cli_name")
            named = isinstance(name, ast.Constant) and isinstance(name.value, str)
            flags.add(str(name.value) if named and isinstance(name, ast.Constant) else "--" + item.target.id.replace("_", "-"))
            aliases = keywords.get("aliases")
            if isinstance(aliases, ast.List):
                flags |= {a.value for a in aliases.elts if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return flags


def wheel_flags(sources: Sources) -> set[str]:
    """Every flag SGLang's server parser defines in a build: derived from its fields, plus those added by hand."""
    flags: set[str] = set()
    for text in sources.package(FIELDS_PACKAGE):
        tree = parsed(text)
        if tree is not None:
            flags |= field_flags(tree)
    source = sources.module(SERVER_ARGS_MODULE)
    tree = parsed(source) if source is not None else None
    if tree is not None:
        flags |= {s for s in string_constants(tree) if s.startswith("--")}
    return flags


def check(wheel: Path) -> list[str]:
    """What dualjudge uses that an SGLang wheel lacks: one line each (empty: everything is there)."""
    from dualjudge.inference.cards import all_cards

    sources = Sources(wheel)
    flags = wheel_flags(sources)
    if not flags:
        return [f"{wheel.name}: no flags found under {FIELDS_PACKAGE} (has SGLang moved its arguments?)"]
    used = set(SERVER_FLAGS) | {a for card in all_cards().values() if not card.hosted for a in _card_flags(card)}
    missing = [f"flag {f}: not defined by SGLang's server parser" for f in sorted(used - flags)]
    for use in USES:
        if not any(found_in(sources, use, where) for where in use.where):
            missing.append(f"{use.kind} {use.what} (looked in {' or '.join(use.where)}): {use.why}")
    return missing


def _card_flags(card: ModelCard) -> Iterator[str]:
    yield from (a for a in card_flags(card) if a.startswith("--"))


def resolve(python: str = sys.executable) -> str:
    """Resolve the pinned SGLang in a fresh environment (pip's resolver; packages are not downloaded, their
    metadata is): the releases it takes of torch, transformers and outlines. Raises DualjudgeError with pip's
    last line when it cannot resolve."""
    with tempfile.TemporaryDirectory(prefix="sglang-resolve-") as tmp:
        venv, report = Path(tmp) / "venv", Path(tmp) / "report.json"
        subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True)
        done = subprocess.run(
            [
                str(venv / "bin" / "python"),
                *("-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check", "--only-binary=:all:"),
                *("--report", str(report), f"sglang=={SGLANG_PIN}"),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            last = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
            raise DualjudgeError(
                f"sglang=={SGLANG_PIN} does not resolve in a fresh environment: {last[-1] if last else done.returncode}"
            )
        picked = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    return ", ".join(f"{name} {picked[name]}" for name in ("sglang", "torch", "transformers", "outlines") if name in picked)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Check dualjudge's SGLang use against an SGLang wheel's sources.")
    ap.add_argument("--check", action="store_true", help="check the pinned wheel (downloaded without dependencies)")
    ap.add_argument("--resolve", action="store_true", help="also resolve the pinned release in a fresh environment")
    ap.add_argument("--wheel", type=Path, help="check this wheel instead")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("DUALJUDGE_CACHE", "~/.cache/dualjudge")).expanduser() / "wheels",
    )
    args = ap.parse_args(argv)
    if not args.check and args.wheel is None:
        ap.error("give --check (the pinned wheel) or --wheel FILE")
    wheel = args.wheel or download_wheel(SGLANG_PIN, args.cache, package="sglang", platform="manylinux_2_34_x86_64")
    missing = check(wheel)
    used = len(SERVER_FLAGS) + len(USES)
    print(f"{wheel.name}: {used} uses and every card's flags checked, " + ("all present" if not missing else "MISSING:"))
    for line in missing:
        print(f"  {line}")
    if args.resolve:
        try:
            print(f"sglang=={SGLANG_PIN} resolves in a fresh environment (make sglang-env): {resolve()}")
        except DualjudgeError as e:
            print(str(e))
            return 1
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
