"""The package's shape: each layer imports only layers below it, and importing reads no file."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "dualjudge"
# lower imports higher never: base modules < testbed < inference < protocol, tasks < storage, analysis < report
# < runs (orchestration) < studies (whole runs) < cli
RANK = {
    "errors": 0,
    "files": 0,
    "paths": 0,
    "tomlfile": 0,
    "schema": 0,
    "outcome": 0,
    "rundir": 0,
    "variants": 1,  # a run's variants, any task's: the occlusion ladder and the manifest
    "testbed": 1,
    "inference": 2,
    "protocol": 3,
    "tasks": 3,  # a task: its items, words and prompts (uk-signs built from the testbed catalogue)
    "storage": 4,
    "analysis": 4,
    "report": 5,
    "config": 5,
    "runs": 6,
    "studies": 7,
    "cli": 8,
    "__main__": 9,
    "__init__": 0,
}


def _layer(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_no_layer_imports_a_layer_above_it():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _layer(path)
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            for name in names:
                parts = name.split(".")
                if parts[0] == "dualjudge" and len(parts) > 1 and parts[1] != own and RANK[parts[1]] > RANK[own]:
                    wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, wrong


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def test_only_the_tasks_reach_the_sign_testbed():
    """The signs are one task among others: outside dualjudge/testbed, only dualjudge/tasks imports it (uk-signs' own
    task module is its door); the analysis, the report, the runner and the protocol speak of items and variants."""
    wrong = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if _layer(path) not in ("testbed", "tasks")
        for name in _imports(path)
        if name == "dualjudge.testbed" or name.startswith("dualjudge.testbed.")
    ]
    assert not wrong, wrong


def test_importing_any_module_reads_no_project_file():
    """Every module imports with the resource folders made unreachable: no read happens at import."""
    script = (
        "import importlib, pkgutil, dualjudge, dualjudge.paths as p\n"
        "def refuse(*a, **k): raise RuntimeError('a resource folder was read at import time')\n"
        "p.project_root = refuse\n"
        "names = [m.name for m in pkgutil.walk_packages(dualjudge.__path__, 'dualjudge.')\n"
        "         if not m.name.endswith('__main__')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(len(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.strip()) > 40


def test_no_test_module_imports_another():
    """What two test modules share lives in tests/helpers/; a test module imports none of the others."""
    tests = Path(__file__).resolve().parent
    wrong = []
    for path in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            wrong += [f"{path.name} imports {n}" for n in names if n.startswith("tests.test_")]
    assert wrong == []


def test_the_runner_is_the_scheduling_loop_and_nothing_outside_runs_reads_it():
    """runs/runner.py keeps the loop (at most 300 lines; Runner at most 150 lines and 10 methods); the
    lease, replicas, job log and run context are modules of their own. Outside runs/ a Runner is only
    made and run: what a run holds is read from its RunContext."""
    source = (PACKAGE / "runs" / "runner.py").read_text()
    runner = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Runner")
    methods = [n for n in runner.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert len(source.splitlines()) <= 300
    assert (runner.end_lineno or 0) - runner.lineno + 1 <= 150 and len(methods) <= 10
    for part in ("context", "lease", "replica_pool", "job_log"):
        assert (PACKAGE / "runs" / f"{part}.py").is_file()
    assert len((PACKAGE / "runs" / "estimate.py").read_text().splitlines()) <= 350  # the stages count themselves
    reads = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "runs":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "Runner"
                and node.attr != "run"
            ):
                reads.append(f"{path.name}: Runner(...).{node.attr}")
            if isinstance(node, ast.Name) and node.id == "runner":
                reads.append(f"{path.name}: a variable holding a Runner")
    assert reads == []


def _module_graph() -> nx.DiGraph:
    """Every dualjudge module and the dualjudge modules it imports (at the top, in a function or for typing only)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for target in _imports(path):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]  # a name imported from a module: the module
            if target.startswith("dualjudge") and target in modules and target != name:
                graph.add_edge(name, target)
    return graph


def test_no_modules_import_each_other():
    """No circle of imports, however long (a package counts as its __init__): analysis/ once had diagnostics.py and
    self_preference.py importing each other, and inference/cards.py and inference/tiny/ did."""
    graph = _module_graph()
    assert graph.has_edge("dualjudge.analysis.pointwise.self_preference", "dualjudge.analysis.pointwise.diagnostics")
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, circles


def test_the_analysis_is_in_rooms_by_what_it_estimates():
    """A newcomer sees which modules estimate what: no module of the analysis lies loose beside the rooms but the one
    that runs them all (summary.py), and each room says in its __init__ what it holds."""
    analysis = PACKAGE / "analysis"
    loose = sorted(p.name for p in analysis.glob("*.py") if p.name not in ("__init__.py", "summary.py"))
    assert not loose, loose
    rooms = [p for p in analysis.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert {r.name for r in rooms} >= {"pointwise", "pairwise", "board", "reliability", "shared"}
    for room in rooms:
        assert ast.get_docstring(ast.parse((room / "__init__.py").read_text())), room.name
