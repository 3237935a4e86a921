"""One vLLM surface: every module, name, flag, field, variable and route dualjudge relies on is declared in
inference/vllm_api.py, nothing else touches vLLM, and the checker finds each use in a build's sources
and fails, naming it, when one is missing (as the preflight's parser module was missing from vLLM 0.33)."""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path

import pytest

from dualjudge.inference import vllm_api, vllm_check
from dualjudge.inference.cards import all_cards
from dualjudge.inference.vllm_check import Sources, check_sources

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dualjudge"
SURFACE = {PACKAGE / "inference" / "vllm_api.py", PACKAGE / "inference" / "vllm_check.py"}


@pytest.fixture(scope="module")
def installed() -> Path:
    root = vllm_check.installed_root()
    if root is None:
        pytest.skip("vLLM is not installed")
    return root


def _needed_files(root: Path) -> list[Path]:
    """The files the checker reads: every module a use names, and the route package."""
    out: list[Path] = []
    for use in vllm_api.USES:
        for where in use.where:
            rel = where.replace(".", "/")
            if use.kind == "route":
                out += sorted((root / rel).rglob("*.py"))
            for candidate in (root / f"{rel}.py", root / rel / "__init__.py"):
                if candidate.is_file():
                    out.append(candidate)
    return sorted(set(out))


def _wheel_like(root: Path, dest: Path, edit: dict[str, tuple[str, str]] | None = None) -> Path:
    """A zip of the build's needed sources, as a wheel holds them, with `edit` {rel path: (old, new)} applied."""
    edit = edit or {}
    with zipfile.ZipFile(dest, "w") as z:
        for path in _needed_files(root):
            rel = str(path.relative_to(root))
            text = path.read_text(errors="replace")
            if rel in edit:
                old, new = edit[rel]
                assert old in text, f"{old!r} not in {rel}"
                text = text.replace(old, new)
            z.writestr(rel, text)
    return dest


def test_the_installed_build_has_every_use_and_its_parser_knows_every_flag(installed):
    report = check_sources(Sources(installed))
    assert report.checked == len(vllm_api.USES) and report.missing == [], report.lines()
    assert vllm_check.live_flags() == []


def test_a_wheel_is_read_from_its_zip_as_the_folder_is(installed, tmp_path):
    wheel = _wheel_like(installed, tmp_path / "vllm-0.0.0-py3-none-any.whl")
    report = check_sources(Sources(wheel))
    assert report.ok and report.build == wheel.name


def _cli_args_file(root: Path) -> str:
    for module in vllm_api.CLI_ARGS_MODULES:
        rel = module.replace(".", "/") + ".py"
        if (root / rel).is_file():
            return rel
    raise AssertionError("no cli_args module")


@pytest.mark.parametrize("what", ["parser", "flag", "field", "route", "server", "metric", "mounted"])
def test_a_use_removed_from_a_build_fails_the_check_and_names_it(installed, tmp_path, what):
    cli_args = _cli_args_file(installed)
    edits = {
        "parser": (cli_args, ("def make_arg_parser(", "def make_parser_renamed("), "name make_arg_parser"),
        "flag": ("vllm/engine/arg_utils.py", ('"--max-model-len"', '"--max-context-len"'), "flag --max-model-len"),
        "field": (
            "vllm/sampling_params.py",
            ("    regex: str | None = None", "    pattern: str | None = None"),
            "field StructuredOutputsParams.regex",
        ),
        "route": ("vllm/entrypoints/serve/instrumentator/health.py", ('"/health"', '"/healthz"'), "route /health"),
        "server": (
            "vllm/entrypoints/cli/serve.py",
            ("    def validate(self", "    def check(self"),
            "name ServeSubcommand.validate",
        ),
        "metric": (
            "vllm/v1/metrics/loggers.py",
            ('"vllm:generation_tokens"', '"vllm:output_tokens"'),
            "metric vllm:generation_tokens",
        ),
        "mounted": (
            "vllm/entrypoints/serve/instrumentator/metrics.py",
            ('Mount("/metrics"', 'Mount("/prometheus"'),
            "route /metrics",
        ),
    }
    rel, change, named = edits[what]
    wheel = _wheel_like(installed, tmp_path / "vllm.whl", {rel: change})
    report = check_sources(Sources(wheel))
    assert not report.ok
    assert [f"{u.kind} {u.what}" for u in report.missing] == [named]
    assert named.split()[-1] in "\n".join(report.lines())


def test_the_parser_moved_between_builds_is_found_under_either_name(installed, tmp_path):
    """0.32 keeps make_arg_parser in launchers.cli_args, 0.33 in common.cli_args: either build passes."""
    cli_args = _cli_args_file(installed)
    other = [m for m in vllm_api.CLI_ARGS_MODULES if m.replace(".", "/") + ".py" != cli_args][0]
    moved = tmp_path / "moved.whl"
    with zipfile.ZipFile(_wheel_like(installed, tmp_path / "src.whl")) as src, zipfile.ZipFile(moved, "w") as z:
        for name in src.namelist():
            z.writestr(other.replace(".", "/") + ".py" if name == cli_args else name, src.read(name))
    assert check_sources(Sources(moved)).ok


def test_the_command_line_main_fails_when_a_wheel_lacks_a_use(installed, tmp_path, capsys):
    wheel = _wheel_like(installed, tmp_path / "vllm.whl", {"vllm/envs.py": ('"VLLM_API_KEY"', '"VLLM_KEY"')})
    assert vllm_check.main(["--no-installed", "--wheel", str(wheel)]) == 1
    assert "env VLLM_API_KEY" in capsys.readouterr().out
    assert vllm_check.main(["--no-installed", "--wheel", str(_wheel_like(installed, tmp_path / "ok.whl"))]) == 0


def test_a_use_missing_only_in_the_newest_release_is_a_warning_line(installed, tmp_path, capsys, monkeypatch):
    (tmp_path / "cache").mkdir()
    lacking = _wheel_like(
        installed, tmp_path / "cache" / "vllm-9.9.9-py3-none-any.whl", {"vllm/envs.py": ('"VLLM_API_KEY"', '"VLLM_KEY"')}
    )
    monkeypatch.setattr(vllm_check, "newest_version", lambda: "9.9.9")  # the index says 9.9.9; its wheel is cached
    assert vllm_check.main(["--no-installed", "--newest", "--cache", str(lacking.parent)]) == 0
    out = capsys.readouterr().out
    assert "newest on PyPI, vllm 9.9.9: " in out and "WARNING, missing (not yet pinned):" in out
    assert "  warning: env VLLM_API_KEY" in out
    # the same wheel as a pinned or named build fails
    assert vllm_check.main(["--no-installed", "--wheel", str(lacking)]) == 1


# -- nothing outside the surface touches vLLM -----------------------------------------------------------
def _python_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in SURFACE)


def test_only_the_surface_imports_or_names_vllm_modules():
    offenders = []
    for path in _python_files():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "vllm" for a in node.names):
                offenders.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "vllm":
                offenders.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"vllm(\.[a-z_]+)+", node.value):
                offenders.append(f"{path}:{node.lineno} {node.value}")
    assert offenders == []


def test_only_the_surface_names_vllm_environment_variables():
    offenders = [f"{p}: {m}" for p in _python_files() for m in re.findall(r"[\"'](VLLM_[A-Z_]+)[\"']", p.read_text())]
    assert offenders == []


def test_every_flag_a_card_or_the_runner_passes_is_declared():
    def flags(args: list[str]) -> set[str]:
        return {a.replace("--no-", "--", 1) for a in args if a.startswith("--")}

    used: set[str] = set()
    for card in all_cards().values():
        if not card.hosted:
            used |= flags(card.vllm_cli_args())
            used |= flags(
                vllm_api.server_command(
                    model_dir="m",
                    served_name=card.name,
                    host="h",
                    port=1,
                    seed=0,
                    card_args=card.vllm_cli_args(),
                    structured_backend="xgrammar",
                )
            )
    assert used <= set(vllm_api.SERVER_FLAGS), used - set(vllm_api.SERVER_FLAGS)
