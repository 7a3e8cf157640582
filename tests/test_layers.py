"""The package's layers, as docs/architecture.md draws them, checked on the code:
every import (at module level or deferred inside a function) goes downwards, and no two
modules import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import drevt_sweep

PACKAGE = Path(drevt_sweep.__file__).parent

# Each layer and the layers it may import. The core vocabulary (errors, the job table) is
# shared by all; sim reads trace only for time-zone rules; nothing below sweep knows Hydra.
ALLOWED = {
    "core": set(),
    "trace": {"core"},
    "sim": {"core", "trace"},
    "outputs": {"core", "sim"},
    "tracking": {"core"},
    "report": {"core", "trace", "sim", "outputs", "tracking"},
    "sweep": {"core", "trace", "sim", "outputs", "tracking", "report"},
    "cli": {"core", "trace", "sim", "outputs"},
    "main": {"sweep"},
    # the Python API (notebooks): one call from a trace to metrics, from a sweep to a frame
    "api": {"core", "trace", "sim", "sweep", "tracking", "report"},
}
# names (queue names as keys), units (how each metric is shown) and files (how inputs are read
# and outputs written) are pure helpers of that vocabulary, as is garbage (the collector's
# threshold where many cycles are made), as is process_exit (how a command's process ends);
# sim uses names only, never files.
CORE = {"drevt_sweep", "drevt_sweep.errors", "drevt_sweep.jobs", "drevt_sweep.names",
        "drevt_sweep.units", "drevt_sweep.files", "drevt_sweep.garbage", "drevt_sweep.process_exit"}


def layer_of(module: str) -> str:
    if module in CORE:
        return "core"
    if module == "drevt_sweep.__main__":
        return "main"
    return module.split(".")[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The drevt_sweep modules one file imports (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("drevt_sweep"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("drevt_sweep"):
                target = node.module
            else:
                continue
            for alias in node.names:  # `from . import engine` names a module, not an attribute
                candidate = f"{target}.{alias.name}"
                found.add(candidate if _exists(candidate) else target)
    return {m for m in found if m.startswith("drevt_sweep") and not m.startswith("drevt_sweep.conf")}


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative / "__init__.py").is_file()


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}


def test_imports_only_go_downwards():
    upward = []
    for module, targets in graph().items():
        for target in targets:
            a, b = layer_of(module), layer_of(target)
            if a != b and b not in ALLOWED[a]:
                upward.append(f"{module} ({a}) imports {target} ({b})")
    assert not upward, "\n".join(sorted(upward))


def test_the_simulator_core_knows_nothing_of_files_hydra_or_mlflow():
    heavy = ("hydra", "omegaconf", "mlflow", "joblib", "matplotlib")
    found = []
    for path in (PACKAGE / "sim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in heavy]
    assert not found, found


def test_no_import_cycles_between_modules():
    edges = graph()
    # A package's __init__ that re-exports its own submodules is not a cycle of design.
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(cycles)
