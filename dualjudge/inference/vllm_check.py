"""Check every vLLM use of dualjudge (vllm_api.USES) against a vLLM build's sources, without importing it.

A build is read as source: the installed package folder, or a wheel (a zip) such as the pinned GPU
build, which `pip download --no-deps` fetches in seconds and which is never imported (it needs CUDA).
Each use is looked up by parsing the module it names (Python's `ast`), so a module that moved, a name
that was removed, a server flag that is no longer defined, a request or config field that was renamed,
an environment variable or a route that is gone, each fails the check with the use and why it matters.
The installed build is also checked live: every flag through its own argument parser.

    python -m dualjudge.inference.vllm_check                 # the installed build
    python -m dualjudge.inference.vllm_check --pinned        # and the GPU wheel the `gpu` extra pins
    python -m dualjudge.inference.vllm_check --newest        # and the newest vllm on PyPI (warnings only)
    python -m dualjudge.inference.vllm_check --wheel FILE    # any wheel

A use missing in the installed build or the pinned wheel fails the check; one missing only in the newest
release is a warning line: it names what the next pin bump has to change, before anyone bumps it.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from dualjudge.inference.vllm_api import SERVER_FLAGS, USES, Use, server_arg_parser

PIN = re.compile(r"^vllm\s*==\s*([0-9][0-9A-Za-z.+-]*)\s*;.*extra\s*==\s*['\"]gpu['\"]")


class Sources:
    """A vLLM build's Python sources, from a folder holding the `vllm` package or from a wheel."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._zip = zipfile.ZipFile(root) if root.is_file() else None
        self._names = set(self._zip.namelist()) if self._zip else None

    def label(self) -> str:
        return self.root.name if self._zip else str(self.root / "vllm")

    def _read(self, rel: str) -> str | None:
        if self._zip is not None:
            return self._zip.read(rel).decode("utf-8", errors="replace") if rel in (self._names or ()) else None
        path = self.root / rel
        return path.read_text(errors="replace") if path.is_file() else None

    def module(self, dotted: str) -> str | None:
        """A module's source (a .py file, or a package's __init__.py); None when the build lacks it."""
        rel = dotted.replace(".", "/")
        return self._read(f"{rel}.py") or self._read(f"{rel}/__init__.py")

    def package(self, dotted: str) -> Iterator[str]:
        """Every module source under a package."""
        prefix = dotted.replace(".", "/") + "/"
        if self._zip is not None:
            names = sorted(n for n in (self._names or ()) if n.startswith(prefix) and n.endswith(".py"))
        else:
            names = sorted(str(p.relative_to(self.root)) for p in (self.root / prefix).rglob("*.py"))
        for name in names:
            text = self._read(name)
            if text is not None:
                yield text


@lru_cache(maxsize=256)
def parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _class_members(tree: ast.Module, cls: str) -> set[str] | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            members: set[str] = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            return members
    return None


def string_constants(tree: ast.Module) -> set[str]:
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _frontend_fields(tree: ast.Module) -> set[str]:
    """Annotated fields of the server's frontend argument classes (`...FrontendArgs`), each of which
    becomes a --flag without the flag being spelled (engine flags are spelled out in arg_utils)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
            out |= {i.target.id for i in node.body if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)}
    return out


ROUTE_METHODS = {"get", "post", "api_route", "add_api_route", "route", "Mount"}


def _routes(tree: ast.Module) -> set[str]:
    """Paths routed by `@router.get("/health")`, `app.add_api_route("/x", ...)`, `Mount("/metrics", ...)`
    and the like."""

    def called(f: ast.expr) -> str | None:
        return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None

    return {
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and called(n.func) in ROUTE_METHODS
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and isinstance(n.args[0].value, str)
    }


def _has_main(tree: ast.Module) -> bool:
    return "__main__" in string_constants(tree) and any(isinstance(n, ast.If) for n in tree.body)


def found_in(sources: Sources, use: Use, where: str) -> bool:
    """Whether one location of a build has the use."""
    if use.kind == "route":
        return any(use.what in _routes(t) for t in map(parsed, sources.package(where)) if t is not None)
    text = sources.module(where)
    tree = parsed(text) if text is not None else None
    if tree is None:
        return False
    if use.kind == "module":
        return _has_main(tree)
    if use.kind in ("name", "field"):
        owner, _, member = use.what.rpartition(".")
        if not owner:
            return member in _top_level_names(tree)
        members = _class_members(tree, owner)
        return members is not None and member in members
    if use.kind == "flag":
        return use.what in string_constants(tree) or use.what.removeprefix("--").replace("-", "_") in _frontend_fields(tree)
    return use.what in string_constants(tree)  # env, metric


@dataclass
class Report:
    build: str
    missing: list[Use] = field(default_factory=list)
    live: list[str] = field(default_factory=list)  # flags the installed parser itself refuses
    checked: int = 0
    advisory: bool = False  # the newest release: what it lacks is a warning, not a failure

    @property
    def ok(self) -> bool:
        return self.advisory or (not self.missing and not self.live)

    def lines(self) -> list[str]:
        clean = not self.missing and not self.live
        verdict = "all present" if clean else ("WARNING, missing (not yet pinned):" if self.advisory else "MISSING:")
        out = [f"{self.build}: {self.checked} uses checked, {verdict}"]
        tag = "warning: " if self.advisory else ""
        out += [f"  {tag}{u.kind} {u.what} (looked in {' or '.join(u.where)}): {u.why}" for u in self.missing]
        out += [f"  flag {f}: refused by the installed server's own argument parser" for f in self.live]
        return out


def check_sources(sources: Sources, build: str | None = None) -> Report:
    report = Report(build or sources.label())
    for use in USES:
        report.checked += 1
        if not any(found_in(sources, use, where) for where in use.where):
            report.missing.append(use)
    return report


def live_flags() -> list[str]:
    """The project's flags that the installed server's own parser does not define."""
    parser = server_arg_parser()
    known = {s for a in parser._actions for s in a.option_strings}
    return [f for f in SERVER_FLAGS if f not in known]


def installed_root() -> Path | None:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent


def pinned_gpu_version() -> str:
    """The version the `gpu` extra pins (from dualjudge's installed metadata, else pyproject.toml)."""
    try:
        requires = importlib.metadata.requires("dualjudge") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    for line in requires:
        m = PIN.match(line)
        if m:
            return m.group(1)
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    m = re.search(r'gpu\s*=\s*\[\s*"vllm==([^"]+)"', pyproject.read_text())
    if m is None:
        raise SystemExit("no vllm pin found for the gpu extra")
    return m.group(1)


def newest_version() -> str:
    """The newest vllm release on the package index pip is configured with."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "vllm", "--disable-pip-version-check"], capture_output=True, text=True
    )
    m = re.search(r"^vllm \(([^)]+)\)", done.stdout, re.M)
    if done.returncode != 0 or m is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"could not ask the package index for vllm's newest release: {tail[0]}")
    return m.group(1)


def download_wheel(version: str, cache: Path, package: str = "vllm", platform: str = "manylinux_2_28_x86_64") -> Path:
    """A (GPU) wheel of `package`, downloaded once (without its dependencies) into `cache`."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{package}-{version}-*.whl"))
    if found:
        return found[0]
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.11",
        "--platform",
        platform,
        "--quiet",
        "--disable-pip-version-check",
        f"{package}=={version}",
        "-d",
        str(cache),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(cache.glob(f"{package}-{version}-*.whl"))
    if done.returncode != 0 or not found:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"could not download {package}=={version}: {tail[0]}")
    return found[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--pinned", action="store_true", help="also check the GPU wheel the gpu extra pins")
    ap.add_argument(
        "--newest", action="store_true", help="also check the newest vllm on PyPI; what it lacks is a warning, not a failure"
    )
    ap.add_argument("--wheel", type=Path, action="append", default=[], help="also check this wheel")
    ap.add_argument("--no-installed", action="store_true", help="skip the installed build")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("DUALJUDGE_CACHE", "~/.cache/dualjudge")).expanduser() / "wheels",
        help="where downloaded wheels are kept",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    reports: list[Report] = []
    if not args.no_installed:
        root = installed_root()
        if root is None:
            print("vLLM is not installed here: only wheels are checked", file=sys.stderr)
        else:
            from dualjudge.inference.vllm_api import installed_version

            report = check_sources(Sources(root), f"installed {installed_version()}")
            report.live = live_flags()
            reports.append(report)
    wheels = list(args.wheel)
    if args.pinned:
        wheels.append(download_wheel(pinned_gpu_version(), args.cache))
    reports += [check_sources(Sources(w)) for w in wheels]
    if args.newest:
        newest = newest_version()
        if not args.pinned or newest != pinned_gpu_version():
            report = check_sources(Sources(download_wheel(newest, args.cache)), f"newest on PyPI, vllm {newest}")
            report.advisory = True
            reports.append(report)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "build": r.build,
                        "ok": r.ok,
                        "advisory": r.advisory,
                        "checked": r.checked,
                        "missing": [f"{u.kind} {u.what}" for u in r.missing],
                        "refused_flags": r.live,
                    }
                    for r in reports
                ],
                indent=2,
            )
        )
    else:
        for r in reports:
            print("\n".join(r.lines()))
    return 0 if reports and all(r.ok for r in reports) else 1


if __name__ == "__main__":
    raise SystemExit(main())
