"""The package layers, checked on the source: `utils/` never imports from `lm_eval_tasks/`
(the benchmarks use the shared helpers, never the other way round), at module or function level,
by an import statement or by name (`importlib.import_module`, `__import__`); and no product module
but the engine's configuration module (`execution/config.py`) reads a `CODE_EVAL_*` variable."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping
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


# --------------------------------------------------------------------------- engine variables
#
# No product module but the engine's configuration module reads a `CODE_EVAL_*` variable. The
# check reads the source: every access to the process environment (`os.environ[...]`, `.get`,
# `.pop`, `.setdefault`, `in`, `os.getenv`, `os.putenv`, aliases of `os`, `environ` or `getenv`,
# `getattr(os, "environ")`) is found, and the variable's name is worked out from the expression
# (a string, an f-string, `+`, `%`, `.format`, `.upper()`, a constant of the module, a local
# name, a constant imported from another product module). A name that cannot be worked out
# counts as a `CODE_EVAL_*` one, and so does any environment access in a function that names
# `CODE_EVAL` (a scan of the environment by prefix).

PRODUCT = ("execution", "utils", "lm_eval_tasks")
CONFIG_MODULE = "execution/config.py"
#: the one exception: the pytest plugin is copied alone (standard library only) into a test
#: sandbox, where the package cannot be imported; this variable names its key file, the protocol
#: with the grader that starts it, and the plugin removes it from the environment at once
KEY_EXCEPTIONS = {"execution/repo_tests/pytest_plugin.py": "CODE_EVAL_REPORT_KEY_FILE"}
#: modules that touch variables by a name held in a variable, and why none is a `CODE_EVAL_*` one
DYNAMIC_NAMES = {
    "execution/backends/ray/auth.py": "sets and restores Ray's own RAY_AUTH_MODE, "
    "RAY_AUTH_TOKEN and RAY_AUTH_TOKEN_PATH (the module's constants) around a connection",
}
ENGINE_PREFIX = "CODE_EVAL_"
_KEYED = {"get", "pop", "setdefault", "__getitem__", "__setitem__", "__delitem__", "__contains__"}
_GETENV = {"getenv", "getenvb", "putenv", "unsetenv"}
_OS_MODULES = {"os", "posix", "nt"}
#: a variable's name as far as it is known: (its leading text, whether that is all of it)
VarName = tuple[str, bool]


def _function_scopes(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Each node -> the innermost function (or the module) it belongs to."""
    owner: dict[ast.AST, ast.AST] = {}

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            owner[child] = scope
            inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, child if inner else scope)

    visit(tree, tree)
    return owner


def _assigned(body: ast.AST, top_level_only: bool) -> dict[str, list[ast.expr]]:
    """name -> the expressions assigned to it (`a = x`, `a: T = x`, `a, b = x, y`)."""
    out: dict[str, list[ast.expr]] = {}
    nodes = getattr(body, "body", []) if top_level_only else ast.walk(body)
    for node in nodes:
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value:
            pairs = [(node.target, node.value)]
        for target, value in pairs:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                pairs.extend(zip(target.elts, value.elts, strict=False))
            elif isinstance(target, ast.Name):
                out.setdefault(target.id, []).append(value)
    return out


def _scope_name(scope: ast.AST) -> str:
    if isinstance(scope, ast.Module):
        return "<module>"
    return getattr(scope, "name", "<lambda>")


def _names_the_engine(text: str) -> bool:
    """Whether `text` is or holds the name of a `CODE_EVAL_*` variable (or their prefix)."""
    upper = text.upper()
    return ENGINE_PREFIX in upper or upper.startswith(ENGINE_PREFIX.rstrip("_"))


#: a module that touches the environment spells one of these words (an alias is imported by
#: its name; `getattr(os, "environ")` spells it too)
_ENVIRONMENT_WORDS = re.compile(r"\b(environb?|getenvb?|putenv|unsetenv)\b")


class _Source:
    """One product module: its constants, its imports and its aliases of `os` (parsed when
    first needed: most modules are only searched for a constant's name)."""

    def __init__(self, relpath: str, text: str) -> None:
        self.relpath, self.text = relpath, text
        self.touches = _ENVIRONMENT_WORDS.search(text) is not None

    @functools.cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.text, self.relpath)

    @functools.cached_property
    def constants(self) -> dict[str, list[ast.expr]]:
        return _assigned(self.tree, top_level_only=True)

    @functools.cached_property
    def owner(self) -> dict[ast.AST, ast.AST]:
        return _function_scopes(self.tree)

    @functools.cached_property
    def imports(self) -> tuple[dict[str, str], set[str], set[str], set[str], set[str]]:
        """(local name -> its name where it came from, local names of imported modules, of
        `os`, of `os.environ`, of `os.getenv`/`putenv`/`unsetenv`)."""
        imported: dict[str, str] = {}
        modules: set[str] = set()
        os_names: set[str] = set()
        environ_names: set[str] = set()
        getenv_names: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    (os_names if alias.name in _OS_MODULES else modules).add(local)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    local = alias.asname or alias.name
                    if node.module in _OS_MODULES and alias.name in ("environ", "environb"):
                        environ_names.add(local)
                    elif node.module in _OS_MODULES and alias.name in _GETENV:
                        getenv_names.add(local)
                    else:
                        imported[local] = alias.name
                        modules.add(local)  # `from pkg import module` as well
        return imported, modules, os_names, environ_names, getenv_names

    imported = property(lambda self: self.imports[0])
    modules = property(lambda self: self.imports[1])
    os_names = property(lambda self: self.imports[2])
    environ_names = property(lambda self: self.imports[3])
    getenv_names = property(lambda self: self.imports[4])


@functools.cache
def _scanner(root: Path) -> _Scanner:
    return _Scanner(root)


class _Scanner:
    """Finds the environment accesses of the product modules under a folder."""

    def __init__(self, root: Path) -> None:
        self.sources = [
            _Source(path.relative_to(root).as_posix(), path.read_text("utf-8"))
            for top in PRODUCT
            for path in sorted((root / top).rglob("*.py"))
        ]
        self.known: dict[str, list[VarName | None]] = {}  # constant name -> what it may be

    # -- what a name can be

    def names(
        self, expr: ast.expr, src: _Source, local: dict[str, list[ast.expr]], depth: int = 0
    ) -> list[VarName | None]:
        """Every name `expr` may give (None: unknown)."""
        if depth > 12:
            return [None]
        again = lambda e: self.names(e, src, local, depth + 1)  # noqa: E731
        if isinstance(expr, ast.Constant):
            return [(expr.value, True)] if isinstance(expr.value, str) else [None]
        if isinstance(expr, ast.JoinedStr):
            head = ""
            for part in expr.values:
                if isinstance(part, ast.Constant):
                    head += str(part.value)
                    continue
                if head or not isinstance(part, ast.FormattedValue):
                    return [(head, False)]
                return [None if n is None else (n[0], False) for n in again(part.value)]
            return [(head, True)]
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            out: list[VarName | None] = []
            for left in again(expr.left):
                if left is None or not left[1]:
                    out.append(left)
                else:
                    out.extend(
                        None if r is None else (left[0] + r[0], r[1]) for r in again(expr.right)
                    )
            return out
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
            return [
                None if n is None else (n[0].split("%")[0], "%" not in n[0])
                for n in again(expr.left)
            ]
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Name) and func.id == "str" and expr.args:
                return again(expr.args[0])
            if isinstance(func, ast.Attribute) and func.attr == "format":
                return [
                    None if n is None else (n[0].split("{")[0], "{" not in n[0])
                    for n in again(func.value)
                ]
            if isinstance(func, ast.Attribute) and func.attr in (
                "upper",
                "lower",
                "strip",
                "casefold",
            ):
                return [
                    None if n is None else (getattr(n[0], func.attr)(), n[1])
                    for n in again(func.value)
                ]
            return [None]
        if isinstance(expr, ast.IfExp):
            return again(expr.body) + again(expr.orelse)
        if isinstance(expr, ast.BoolOp):
            return [n for value in expr.values for n in again(value)]
        if isinstance(expr, ast.Name):
            if expr.id in local:
                return [n for value in local[expr.id] for n in again(value)]
            if expr.id in src.constants:
                return [
                    n
                    for value in src.constants[expr.id]
                    for n in self.names(value, src, {}, depth + 1)
                ]
            if expr.id in src.imported:
                return self.constant(src.imported[expr.id], depth)
            return [None]
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id in src.modules
        ):
            return self.constant(expr.attr, depth)
        return [None]

    def constant(self, name: str, depth: int) -> list[VarName | None]:
        """What a constant imported from another product module may be (by its name there)."""
        if name not in self.known:
            top_level = re.compile(rf"^[\w, =]*\b{re.escape(name)}\b\s*(:[^=\n]*)?=(?!=)", re.M)
            self.known[name] = [None]  # while it is worked out (a constant naming itself)
            found = [
                n
                for other in self.sources
                if name in other.text and top_level.search(other.text)
                for value in other.constants.get(name, ())
                for n in self.names(value, other, {}, depth + 1)
            ]
            self.known[name] = found or [None]
        return self.known[name]

    # -- the environment

    def environ(self, expr: ast.AST, src: _Source) -> bool:
        if isinstance(expr, ast.Attribute) and expr.attr in ("environ", "environb"):
            return isinstance(expr.value, ast.Name) and expr.value.id in src.os_names
        if isinstance(expr, ast.Name):
            return expr.id in src.environ_names
        if (
            isinstance(expr, ast.Call)
            and ast.unparse(expr.func) == "getattr"
            and len(expr.args) > 1
        ):
            target, attr = expr.args[0], expr.args[1]
            return (
                isinstance(target, ast.Name)
                and target.id in src.os_names
                and isinstance(attr, ast.Constant)
                and attr.value in ("environ", "environb")
            )
        return False

    def getenv(self, func: ast.expr, src: _Source) -> bool:
        """Whether `func` is `os.getenv` (or `putenv`, `unsetenv`) or an alias of it."""
        if isinstance(func, ast.Name):
            return func.id in src.getenv_names
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _GETENV
            and isinstance(func.value, ast.Name)
            and func.value.id in src.os_names
        )

    def key(self, node: ast.AST, src: _Source) -> ast.expr | None:
        """The variable name `node` reads or writes, when it is one such access."""
        if isinstance(node, ast.Subscript) and self.environ(node.value, src):
            return node.slice
        if isinstance(node, ast.Call):
            func = node.func
            keyed = (
                isinstance(func, ast.Attribute)
                and func.attr in _KEYED
                and self.environ(func.value, src)
            )
            if keyed or self.getenv(func, src):
                named = [k.value for k in node.keywords if k.arg == "key"]
                return node.args[0] if node.args else next(iter(named), None)
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and self.environ(node.comparators[0], src)
        ):
            return node.left
        return None

    def mentions(
        self, scope: ast.AST, src: _Source, owner: Mapping[ast.AST, ast.AST], allowed: str
    ) -> bool:
        """Whether code of `scope` (not its docstrings) names `CODE_EVAL` other than `allowed`."""
        docstrings = {
            id(n.value)
            for n in ast.walk(scope)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        for node in ast.walk(scope):
            if owner.get(node) is not scope and node is not scope:
                continue
            texts: list[str] = []
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
            ):
                texts = [node.value]
            elif isinstance(node, ast.Name | ast.Attribute) and isinstance(
                getattr(node, "ctx", None), ast.Load
            ):
                texts = [n[0] for n in self.names(node, src, {}) if n is not None]
            if any(_names_the_engine(t) and t != allowed for t in texts):
                return True
        return False

    def offences(
        self,
        exceptions: Mapping[str, str] = KEY_EXCEPTIONS,
        dynamic: Mapping[str, str] = DYNAMIC_NAMES,
    ) -> list[str]:
        """One line per environment access that may read a `CODE_EVAL_*` variable."""
        found: list[str] = []
        for src in self.sources:
            if src.relpath == CONFIG_MODULE or not src.touches:
                continue
            allowed = exceptions.get(src.relpath, "")
            owner = src.owner
            touched: dict[ast.AST, int] = {}
            for node in ast.walk(src.tree):
                scope = owner.get(node, src.tree)
                key = self.key(node, src)
                if key is None:
                    if self.environ(node, src):
                        touched.setdefault(scope, getattr(node, "lineno", 0))
                    continue
                touched.setdefault(scope, getattr(node, "lineno", 0))
                local = _assigned(scope, top_level_only=False) if scope is not src.tree else {}
                names = self.names(key, src, local)
                where = f"{src.relpath}:{getattr(node, 'lineno', 0)} ({_scope_name(scope)})"
                if any(
                    n is not None and n[0] != allowed and _names_the_engine(n[0]) for n in names
                ):
                    found.append(f"{where}: reads {ast.unparse(key)}, a {ENGINE_PREFIX}* variable")
                elif src.relpath in dynamic:
                    continue
                elif any(
                    n is None or (not n[1] and ENGINE_PREFIX.startswith(n[0].upper()))
                    for n in names
                ):
                    found.append(
                        f"{where}: reads a variable whose name is not known ({ast.unparse(key)})"
                    )
            for scope, line in touched.items():
                if self.mentions(scope, src, owner, allowed):
                    found.append(
                        f"{src.relpath}:{line} ({_scope_name(scope)}): touches the environment "
                        "and names CODE_EVAL"
                    )
        return found


def test_no_product_module_but_the_configuration_reads_an_engine_variable() -> None:
    scanner = _scanner(ROOT)
    assert len(scanner.sources) > 100 and any(
        s.relpath == "utils/settings.py" for s in scanner.sources
    )
    offences = scanner.offences()
    assert not offences, "\n".join(offences)


def test_each_exception_is_still_needed() -> None:
    scanner = _scanner(ROOT)
    for module in KEY_EXCEPTIONS:
        others = {k: v for k, v in KEY_EXCEPTIONS.items() if k != module}
        assert any(line.startswith(module) for line in scanner.offences(exceptions=others)), module
    for module in DYNAMIC_NAMES:
        others = {k: v for k, v in DYNAMIC_NAMES.items() if k != module}
        assert any(line.startswith(module) for line in scanner.offences(dynamic=others)), module


FAKE_CONSTANTS = """
SHARED_VARIABLE = "CODE_EVAL_SHARED"
HOME_VARIABLE = "HOME"
"""

FAKE_MODULE = """
import os
import os as system
from os import environ, getenv as read_variable

from .names import SHARED_VARIABLE, HOME_VARIABLE
from . import names

SWITCH = "CODE_EVAL_SWITCH"
PREFIX = "CODE_EVAL_"
LOWER = "code_eval_"
CLOZE = "CLOZETEST_MAXMIN_DATA"


def caught_subscript():
    return os.environ["CODE_EVAL_A"]


def caught_get():
    return os.environ.get("CODE_EVAL_A", "")


def caught_get_by_keyword():
    return os.environ.get(key="CODE_EVAL_A")


def caught_getenv():
    return os.getenv("CODE_EVAL_A")


def caught_getenv_alias():
    return read_variable("CODE_EVAL_A")


def caught_environ_alias():
    return environ.get("CODE_EVAL_A")


def caught_os_alias():
    return system.environ.pop("CODE_EVAL_A", None)


def caught_setdefault():
    return os.environ.setdefault("CODE_EVAL_A", "1")


def caught_write():
    os.environ["CODE_EVAL_A"] = "1"


def caught_putenv():
    os.putenv("CODE_EVAL_A", "1")


def caught_membership():
    return "CODE_EVAL_A" in os.environ


def caught_getattr():
    return getattr(os, "environ")["CODE_EVAL_A"]


def caught_fstring(name):
    return os.environ.get(f"CODE_EVAL_{name.upper()}")


def caught_concatenation(name):
    return os.environ.get("CODE_EVAL_" + name)


def caught_percent(name):
    return os.environ.get("CODE_EVAL_%s" % name)


def caught_format(name):
    return os.environ.get("CODE_EVAL_{}".format(name))


def caught_upper(name):
    return os.environ.get((LOWER + name).upper())


def caught_constant():
    return os.environ.get(SWITCH)


def caught_constant_prefix(name):
    return os.environ.get(PREFIX + name)


def caught_imported_constant():
    return os.environ.get(SHARED_VARIABLE)


def caught_module_attribute():
    return os.environ.get(names.SHARED_VARIABLE)


def caught_local_name():
    variable = "CODE_EVAL_A"
    return os.environ[variable]


def caught_unknown_name(setting):
    return os.environ.get(setting.env)


def caught_prefix_scan():
    return {k: v for k, v in os.environ.items() if k.startswith("CODE_EVAL_")}


def caught_prefix_constant_scan():
    return [k for k in os.environ if k.startswith(PREFIX)]


caught_lambda = lambda: os.environ.get(SWITCH)


def clean_other_variable():
    return os.environ.get("HOME"), os.getenv(CLOZE), os.environ.get(HOME_VARIABLE)


def clean_other_prefix(name):
    return os.environ.get(f"XCODEEVAL_{name}"), os.environ.get("HF_ALLOW_CODE_EVAL")


def clean_copy():
    "Passes the environment on (CODE_EVAL_CACHE is mentioned in a docstring only)."
    return dict(os.environ)
"""


def test_the_check_catches_every_form_of_reading_an_engine_variable(tmp_path: Path) -> None:
    package = tmp_path / "utils" / "fake"
    package.mkdir(parents=True)
    (package / "names.py").write_text(FAKE_CONSTANTS)
    (package / "reads.py").write_text(FAKE_MODULE)
    (tmp_path / "execution").mkdir()  # the configuration module may read anything
    (tmp_path / "execution" / "config.py").write_text(FAKE_MODULE)
    offences = _Scanner(tmp_path).offences()
    assert all(line.startswith("utils/fake/reads.py:") for line in offences), offences
    flagged = {line.split("(", 1)[1].split(")", 1)[0] for line in offences}
    defined = {n.name for n in ast.walk(ast.parse(FAKE_MODULE)) if isinstance(n, ast.FunctionDef)}
    caught = {name for name in defined if name.startswith("caught_")} | {"<lambda>"}
    assert flagged == caught, (sorted(caught - flagged), sorted(flagged - caught))


def test_the_engine_readme_names_every_folder_and_each_folder_its_files() -> None:
    """The engine's map (`execution/README.md`, "Files") has a line for each of its folders, and
    each folder's `__init__.py` names its modules, C sources and data files (the package itself:
    its README line), so the tree and its description cannot drift apart."""
    text = (ROOT / "execution" / "README.md").read_text()
    files = text[text.index("\n## Files\n") :]
    files = files[: files.find("\n## ", 1)] if "\n## " in files[1:] else files
    engine = ROOT / "execution"
    folders = sorted(
        p.parent.relative_to(engine).as_posix()
        for p in engine.rglob("__init__.py")
        if p.parent != engine
    )
    assert "sandbox" in folders and "backends/ray" in folders  # the tree is read
    lines = [line for line in files.splitlines() if line.startswith("- ")]
    unnamed = [
        f
        for f in folders
        if not any(f"`{f}/`" in line or f"`{f.rpartition('/')[2]}/`" in line for line in lines)
    ]
    assert not unnamed, f"execution/README.md's Files section has no line for {unnamed}"
    suffixes = (".py", ".c", ".h", ".toml", ".txt")
    for init in [engine / "README.md", *(engine / f / "__init__.py" for f in folders)]:
        folder = init.parent
        described = files if init.name == "README.md" else init.read_text()
        own = sorted(
            p.name
            for p in folder.iterdir()
            if p.suffix in suffixes and p.name not in ("__init__.py", "__main__.py")
        )
        missing = [n for n in own if f"`{n}`" not in described and f"`{n[:-3]}`" not in described]
        assert not missing, f"{init.relative_to(ROOT)} does not name {missing}"
