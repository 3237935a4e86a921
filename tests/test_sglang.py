"""The SGLang server backend: its flags, request fields, routes and metrics found in the pinned SGLang wheel's
sources (as vLLM's GPU wheel is checked), a renamed flag caught, and a run's engine on `engine.backend =
"sglang"` driving a stand-in server (SGLang does not run on these CPU machines) through start, key, constrained
requests, the hang watch's counters and stop."""

from __future__ import annotations

import asyncio
import json
import os
import zipfile
from pathlib import Path

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference import sglang_server
from dualjudge.inference.cards import all_cards, get_card
from dualjudge.inference.engines import Engines, open_engine
from dualjudge.inference.server_process import group_members
from dualjudge.inference.settings import EngineSettings
from dualjudge.inference.sglang_server import SGLANG_PIN, SglangServer, card_flags, check
from dualjudge.inference.types import Constraint, GenerationRequest, Message, Sampling
from dualjudge.inference.vllm_check import download_wheel
from dualjudge.inference.watch import progress_tokens
from dualjudge.inference.weights import LocalWeights

ROOT = Path(__file__).resolve().parent.parent


def server_pids(module: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and module in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


@pytest.fixture(scope="module")
def pinned_wheel() -> Path:
    """The pinned wheel (`make check-sglang`, which .ci/run calls first, leaves it in the cache)."""
    cache = Path(os.environ.get("DUALJUDGE_CACHE", "~/.cache/dualjudge")).expanduser() / "wheels"
    return download_wheel(SGLANG_PIN, cache, package="sglang", platform="manylinux_2_34_x86_64")


def test_the_pinned_wheel_defines_every_flag_field_route_and_metric_the_backend_uses(pinned_wheel):
    assert check(pinned_wheel) == []
    flags = sglang_server.wheel_flags(sglang_server.Sources(pinned_wheel))
    assert {"--model-path", "--api-key", "--config", "--grammar-backend", "--tp-size"} <= flags
    assert "--tensor-parallel-size" in flags  # an alias of tp_size (Arg(aliases=...))
    assert "--grpc-worker-threads" not in flags  # no_cli=True


def test_a_flag_sglang_renamed_is_named_by_the_check(pinned_wheel, tmp_path):
    """The same wheel with `context_length` renamed: the check names the flag a card passes and why."""
    edited = tmp_path / pinned_wheel.name
    with zipfile.ZipFile(pinned_wheel) as src, zipfile.ZipFile(edited, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "sglang/srt/arg_groups/fields/model.py":
                assert b"    context_length: A[" in data
                data = data.replace(b"    context_length: A[", b"    max_context_len: A[")
            if info.filename.startswith("sglang/srt/") or info.filename == "sglang/launch_server.py":
                dst.writestr(info, data)
    assert check(edited) == ["flag --context-length: not defined by SGLang's server parser"]


def test_each_card_becomes_sglang_flags_from_its_shared_facts_and_its_own_table():
    card = get_card("smollm2-135m-instruct")
    flags = card_flags(card)
    assert flags[:6] == [
        "--dtype",
        card.vllm.dtype,
        "--context-length",
        str(card.vllm.max_model_len),
        "--grammar-backend",
        "xgrammar",
    ]
    assert card_flags(card, "guidance")[5] == "llguidance" and "--grammar-backend" not in card_flags(card, "auto")
    with pytest.raises(DualjudgeError, match="SGLang has no 'lm-format-enforcer' grammar backend"):
        card_flags(card, "lm-format-enforcer")
    own = card.model_copy(update={"sglang": card.sglang.model_copy(update={"mem_fraction_static": 0.8, "extra_args": ("--x",)})})
    assert card_flags(own)[-3:] == ["--mem-fraction-static", "0.8", "--x"]
    for card in all_cards().values():  # every shipped card has SGLang flags (none refuses the default backend)
        if not card.hosted:
            assert card_flags(card)[:2] == ["--dtype", card.vllm.dtype]


def test_sglang_token_counters_feed_the_hang_watch():
    page = "# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total 12.0\nsglang:generation_tokens_total 30.0\n"
    assert progress_tokens(page, SglangServer.progress_counters) == 42.0
    assert progress_tokens(page) is None  # vLLM's counters are not on an SGLang page


def test_a_run_engine_on_the_sglang_backend_starts_the_server_and_speaks_its_dialect(tmp_path, monkeypatch):
    """`engine.backend = "sglang"`: the server gets SGLang's flags and its key in a 0600 --config file (never on
    a command line, removed once the server is up); the regex travels in SGLang's `regex` field and the JSON
    schema as `response_format`; the watch reads SGLang's counters; on close no process of its group is left."""
    monkeypatch.setattr(sglang_server, "LAUNCH_MODULE", "tests.helpers.sglang_stand_in")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    card = get_card("smollm2-135m-instruct")
    weights = LocalWeights(tmp_path / "weights", "smollm2@test", {})
    monkeypatch.setattr("dualjudge.inference.engines.require", lambda _card: weights)
    settings = EngineSettings(backend="sglang", structured_backend="guidance")
    engines = Engines(settings, log_dir=tmp_path / "logs")
    regex = GenerationRequest((Message("user", "Yes or no?"),), Sampling(max_tokens=4), Constraint.regex("(yes|no)"))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    verdict = GenerationRequest((Message("user", "A number."),), Sampling(max_tokens=8), Constraint.json_schema(schema))
    events: list[str] = []
    seen: dict[str, object] = {}

    async def go() -> None:
        async with open_engine(card, engines, events.append) as engine:
            (server_pid,) = [p for p in server_pids("tests.helpers.sglang_stand_in") if parent_of(p) == os.getpid()]
            seen["pgid"] = server_pid
            seen["cmdlines"] = [
                Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") for pid in group_members(server_pid)
            ]
            seen["results"] = [await engine.generate(regex), await engine.generate(verdict)]

    asyncio.run(go())
    started, *bodies = [json.loads(line) for line in log.read_text().splitlines()]
    argv = started["argv"]
    assert argv[argv.index("--grammar-backend") + 1] == "llguidance" and "--enable-metrics" in argv
    assert argv[argv.index("--served-model-name") + 1] == "smollm2-135m-instruct"
    assert started["config_mode"] == "0o600"
    key_file = Path(argv[argv.index("--config") + 1])
    assert not key_file.exists() and not key_file.parent.exists()  # read at startup, then removed
    regex_results, json_results = seen["results"]  # type: ignore[misc]
    assert regex_results.ok and regex_results.text == "yes" and json_results.ok and json_results.text == '{"a": 1}'
    assert bodies[0]["regex"] == "(yes|no)" and "structured_outputs" not in bodies[0] and "response_format" not in bodies[0]
    assert bodies[1]["response_format"]["json_schema"]["schema"] == schema and "regex" not in bodies[1]
    assert any("starting SGLang for smollm2-135m-instruct" in e for e in events)
    assert any(e.startswith("SGLang for smollm2-135m-instruct ready in") for e in events)
    assert (tmp_path / "logs" / "sglang-smollm2-135m-instruct.log").exists()
    assert seen["cmdlines"] and not any("api-key" in c or "api_key" in c for c in seen["cmdlines"])  # type: ignore[union-attr]
    assert group_members(seen["pgid"]) == []  # type: ignore[arg-type]


def test_an_attached_sglang_endpoint_says_its_dialect_and_a_stray_one_is_refused():
    settings = EngineSettings(endpoints={"m": ("http://h:30000/v1",)}, endpoint_dialects={"m": "sglang"})
    assert settings.dialect("m") == "sglang" and EngineSettings(endpoints={"m": ("http://h:1/v1",)}).dialect("m") == "vllm"
    with pytest.raises(ValueError, match="endpoint_dialects names x, which has no endpoints"):
        EngineSettings(endpoints={"m": ("http://h:1/v1",)}, endpoint_dialects={"x": "sglang"})


def test_a_server_backend_is_its_module_its_name_and_its_dialect():
    """A server backend is found by its name: inference/NAME_server.py's SERVER, speaking dialect NAME; the
    configuration's `engine.backend` takes every such name (and "transformers", which loads in-process)."""
    import importlib
    from typing import get_args

    from dualjudge.inference.dialects import DIALECTS, ServerBackend
    from dualjudge.inference.engines import server_class
    from dualjudge.inference.server_process import ServerProcess
    from dualjudge.inference.settings import Backend

    assert set(get_args(ServerBackend)) == {"vllm", "sglang"}
    for backend in get_args(ServerBackend):
        module = importlib.import_module(f"dualjudge.inference.{backend}_server")
        assert server_class(backend) is module.SERVER and issubclass(module.SERVER, ServerProcess)
        assert DIALECTS[backend].regex and DIALECTS[backend].enforces_schema  # a server of ours enforces both kinds
    assert set(get_args(Backend)) == {"vllm", "sglang", "transformers"}
    assert EngineSettings(backend="sglang").backend == "sglang"


def test_a_new_server_backend_must_say_which_server_it_is_and_its_grammar_setting_is_in_the_identity(monkeypatch):
    """A backend added as docs/extending.md says (inference/NAME_server.py with its SERVER) names its own server and
    version in every request's identity, or is refused in one line: it is never taken for the installed vLLM;
    the grammar setting is part of its identity as of every backend's."""
    import sys
    import types

    from dualjudge.inference.engines import backend_version
    from dualjudge.inference.server_process import ServerProcess
    from dualjudge.schema import result_fields

    class Silent(ServerProcess):
        LABEL = "Fake"

    class Named(ServerProcess):
        LABEL = "Fake"

        @classmethod
        def engine_version(cls) -> str:
            return "fakeserve 1.2.3"

    module = types.ModuleType("dualjudge.inference.fake_server")
    monkeypatch.setitem(sys.modules, "dualjudge.inference.fake_server", module)
    module.SERVER = Silent  # type: ignore[attr-defined]
    with pytest.raises(DualjudgeError, match="server backend Silent does not say which server it is"):
        backend_version("fake")
    module.SERVER = Named  # type: ignore[attr-defined]
    assert backend_version("fake") == "fakeserve 1.2.3"
    assert backend_version("vllm").startswith("vllm") and backend_version("sglang").startswith("sglang")
    assert result_fields(EngineSettings(structured_backend="guidance"), "fake")["structured_backend"] == "guidance"


def test_sglang_runs_from_an_environment_of_its_own(tmp_path, monkeypatch):
    """SGLang's pins (outlines 0.1.11, its torch) cannot share dualjudge's environment, so no `sglang` extra
    claims they do: `make sglang-env` makes .venv-sglang (its resolution is checked by `make check-sglang`), and
    DUALJUDGE_SGLANG_PYTHON names the Python that starts each server and reports SGLang's version."""
    import sys
    import tomllib

    from dualjudge.inference.engines import backend_version
    from dualjudge.inference.preflight import check_models

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "sglang" not in extras
    assert (
        "--resolve" in (ROOT / "Makefile").read_text().split("check-sglang:", 1)[1].split("\n\n", 1)[0]
        or "RESOLVE" in (ROOT / "Makefile").read_text()
    )
    calls = tmp_path / "calls"
    other = tmp_path / "sglang-python"
    other.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {sys.executable} "$@"\n')
    other.chmod(0o755)
    monkeypatch.setenv(sglang_server.PYTHON_ENV, str(other))
    sglang_server._version_in.cache_clear()
    card = get_card("smollm2-135m-instruct")
    server = SglangServer(card, LocalWeights(tmp_path, "smollm2@test", {}), log_dir=tmp_path, structured_backend="xgrammar")
    server._key_dir = tmp_path  # as launch() sets it
    assert server.command()[:3] == [str(other), "-m", "sglang.launch_server"]
    assert sglang_server.installed_version() is None  # that environment has no SGLang (this one's Python)
    assert "importlib.metadata" in calls.read_text()  # asked of that Python, not of this one
    assert backend_version("sglang") == "sglang (not installed)"
    (check,) = check_models({card.name: ["judge"]}, {card.name: card}, backend="sglang", modality="text")
    assert check.failed == [f'SGLang is not installed for {other} (DUALJUDGE_SGLANG_PYTHON) (engine.backend = "sglang")']
    monkeypatch.delenv(sglang_server.PYTHON_ENV)
    (check,) = check_models({card.name: ["judge"]}, {card.name: card}, backend="sglang", modality="text")
    assert "`make sglang-env` makes .venv-sglang, then export DUALJUDGE_SGLANG_PYTHON=.venv-sglang/bin/python" in check.failed[0]
