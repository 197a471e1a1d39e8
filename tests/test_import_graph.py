"""The engine's import graph, read from the source (every import, those inside functions too):
no circle inside `execution/`, between its modules or between its folders (arrows one way); no
concrete backend named by `isinstance` outside `backends/`; a runner that names no toolchain
speed-up (the strategies are resolved from the catalog), with every module of `speedups/` named
in the rule; and no module but the registry that reads a runtime's raw catalog entry."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "execution"
#: modules of the toolchain speed-ups, which the runner must reach only through the strategies
#: (every module of `speedups/` but the catalog itself: a test fails when one is missing here)
SPEED_UPS = (
    "speedups.go_direct",
    "speedups.jvm_cds",
    "speedups.pch",
    "speedups.probes",
    "speedups.startup",
    "speedups.warm_compiler",
    "speedups.zygotes",
    "speedups.zygotes.cpython",
    "speedups.zygotes.pypy",
    "speedups.zygotes.ruby",
    "speedups.zygotes.seam",
    "speedups.zygotes.strategy",
)
#: the package's entry points, which name every folder (lazily): not part of the folder graph
ENTRY_POINTS = ("", "__main__")
CONCRETE_BACKENDS = ("LocalBackend", "RemoteBackend", "RayBackend", "ContainerBackend")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under `if TYPE_CHECKING:` (never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(n.lineno for n in ast.walk(inner) if hasattr(n, "lineno"))
    return lines


def _parents(target: str, importer: str) -> list[str]:
    """The packages Python loads before `target` (those not already loading `importer`)."""
    parts = target.split(".")
    return [
        ".".join(parts[:i])
        for i in range(1, len(parts))
        if not importer.startswith(".".join(parts[:i]) + ".")
    ]


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of `execution/` it imports when run ("" is the package itself)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        if name == "":
            package = []
        out: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level or node.lineno in skip:
                continue
            base = package[: len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
            for alias in node.names:
                as_module = ".".join([*target, alias.name])
                found = as_module if as_module in modules else ".".join(target)
                if found in modules and found != name:
                    out.add(found)
                    out.update(p for p in _parents(found, name) if p in modules and p != name)
        graph[name] = out
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle (its modules in order, the first repeated at the end), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return []


def folder_graph() -> dict[str, set[str]]:
    """Folder (package, "" for `execution/` itself) -> the folders its modules import, the
    package's entry points left out."""
    modules = _modules()
    graph: dict[str, set[str]] = {}

    def folder(module: str) -> str:
        return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]

    for module, targets in import_graph().items():
        if module in ENTRY_POINTS:
            continue
        mine = folder(module)
        graph.setdefault(mine, set()).update(folder(t) for t in targets if folder(t) != mine)
    return graph


def test_no_import_circle_inside_execution() -> None:
    graph = import_graph()
    assert "judge.engine" in graph and "backends.base" in graph["backends.local"]  # read
    cycle = find_cycle(graph)
    assert not cycle, "import circle: " + " -> ".join(m or "execution" for m in cycle)


def test_no_import_circle_between_folders() -> None:
    graph = folder_graph()
    assert "sandbox" in graph["run"] and "judge" in graph["backends.ray"]  # the graph is read
    cycle = find_cycle(graph)
    assert not cycle, "folder circle: " + " -> ".join(m or "execution" for m in cycle)


def test_the_cycle_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_importing_the_engine_imports_no_job_backend() -> None:
    graph = import_graph()
    seen: set[str] = set()
    todo = ["judge.engine"]
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo.extend(graph.get(mod, ()))
    eager = sorted(m for m in seen if m.startswith("backends.") and m != "backends.base")
    assert not eager, f"the engine imports backends it may not use: {eager}"


def test_no_isinstance_of_a_concrete_backend_outside_backends() -> None:
    offenders: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        if "backends" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance":
                named = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
                if any(cls in named for cls in CONCRETE_BACKENDS):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {named}")
    assert not offenders, offenders


def test_every_speed_up_module_is_named_in_the_rules() -> None:
    found = {m for m in _modules() if m.startswith("speedups.")}
    assert found == set(SPEED_UPS), (
        f"speed-up modules missing from SPEED_UPS: {sorted(found - set(SPEED_UPS))}; "
        f"named but gone: {sorted(set(SPEED_UPS) - found)}"
    )


def test_runner_names_no_speed_up() -> None:
    """No module of `run/` imports a speed-up or names one (the catalog `speedups` resolves
    them by the names `languages.toml` declares)."""
    graph = import_graph()
    names = {m.rpartition(".")[2] for m in SPEED_UPS}
    for module in (m for m in graph if m == "run" or m.startswith("run.")):
        imported = graph[module] & set(SPEED_UPS)
        assert not imported, f"{module} imports {sorted(imported)}"
        tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
        named: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                named.update((node.module or "").split("."))
                named.update(a.name for a in node.names)
            elif isinstance(node, ast.Name | ast.Attribute):
                named.add(node.id if isinstance(node, ast.Name) else node.attr)
        assert not named & names, f"{module} names {sorted(named & names)}"


def test_every_declared_strategy_is_registered_and_loads() -> None:
    from code_eval_taskpack.execution.languages.registry import runtimes
    from code_eval_taskpack.execution.speedups import STRATEGIES, strategy

    declared = {name for rt in runtimes() for name in rt.strategies}
    assert declared == set(STRATEGIES), declared ^ set(STRATEGIES)
    for name in sorted(declared):
        assert callable(strategy(name).applies) and callable(strategy(name).apply)
    assert all("strategies" not in rt.raw for rt in runtimes())  # not in any fingerprint


def test_only_the_registry_reads_a_runtimes_catalog_entry() -> None:
    """A runtime's catalog keys are read through typed accessors of `languages.Runtime`
    (`pch_build`, `compile_direct`, `run_classic`, `warm_compiler`...), never as `runtime.raw[...]`
    elsewhere: a key renamed in the catalog is then renamed in one module."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
        for path in sorted(ROOT.rglob("*.py"))
        if path != ROOT / "languages" / "registry.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "raw"
    ]
    assert not offenders, offenders


def test_the_catalog_accessors_read_the_shipped_entries() -> None:
    from code_eval_taskpack.execution.languages.registry import resolve

    cpp, go, ruby, java = (resolve(n) for n in ("GNU C++17", "Go", "Ruby 3", "Java 17"))
    assert cpp.pch_build is not None and cpp.pch_build[-1] == "pch.h" and go.pch_build is None
    assert go.compile_direct is not None and cpp.compile_direct is None
    assert ruby.run_classic is not None and cpp.run_classic is None
    assert (java.warm_compiler, cpp.warm_compiler) == ("javac", "")
    changed = cpp.with_entry({"note": "x"}, run=("./b",))
    assert changed.run == ("./b",) and changed.raw == {**cpp.raw, "note": "x"}
    assert changed.fingerprint() != cpp.fingerprint() and "note" not in cpp.raw
