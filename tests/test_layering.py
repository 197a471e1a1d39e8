"""The package layers, checked on the source: `utils/` never imports from `lm_eval_tasks/`
(the benchmarks use the shared helpers, never the other way round), at module or function level,
by an import statement or by name (`importlib.import_module`, `__import__`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in `path`, wherever it stands in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node) and node.args:
            target = node.args[0]
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                found.append((node.lineno, target.value))
    return found


def _is_dynamic_import(node: ast.Call) -> bool:
    """`importlib.import_module(...)`, `import_module(...)` or `__import__(...)`."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def test_utils_never_imports_the_benchmarks() -> None:
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "utils").rglob("*.py"))
        for line, module in _imported_modules(path)
        if module == "lm_eval_tasks" or module.startswith("lm_eval_tasks.")
    ]
    assert not upward, upward


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from lm_eval_tasks.xcodeeval import score\n")
    assert _imported_modules(sample) == [(2, "lm_eval_tasks.xcodeeval")]
    sample.write_text(
        "import importlib\n"
        "def f():\n"
        "    return importlib.import_module('lm_eval_tasks.xcodeeval.score')\n"
        "g = __import__('lm_eval_tasks')\n"
    )
    assert sorted(_imported_modules(sample)) == [
        (1, "importlib"),
        (3, "lm_eval_tasks.xcodeeval.score"),
        (4, "lm_eval_tasks"),
    ]


def test_the_deprecated_scoring_alias_is_gone() -> None:
    """The xCodeEval scoring CLI lives in its benchmark folder only (`code-eval score xcodeeval`,
    `lm_eval_tasks.xcodeeval.score`): no module of `utils/` forwards to it."""
    assert not (ROOT / "utils" / "xcodeeval_score.py").exists()
    assert (ROOT / "lm_eval_tasks" / "xcodeeval" / "score.py").is_file()
