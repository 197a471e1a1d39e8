"""The table of every runtime against ExecEval's toolchain: complete, in the READMEs as rendered,
and true of the toolchains installed here."""

from __future__ import annotations

from pathlib import Path

import pytest

from code_eval_taskpack.execution.execeval import runtime_table
from code_eval_taskpack.execution.execeval.compat import EXECEVAL_RUNTIMES
from code_eval_taskpack.execution.languages.registry import registry
from tests.conftest import require_runtime


def test_every_execeval_name_is_in_one_row_of_its_runtime() -> None:
    rows = runtime_table.rows()
    assert [r.runtime for r in rows] == list(registry().runtimes)
    names = [n for r in rows for n in r.names]
    assert sorted(names) == sorted(EXECEVAL_RUNTIMES)  # each once
    for r in rows:
        for n in r.names:
            assert registry().resolve(n).name == r.runtime
    kotlin = {r.runtime: r for r in rows}
    assert kotlin["Node.js"].execeval == ("Node.js 16.17.1",)  # `JavaScript` is not Java
    assert kotlin["Java 17"].execeval == ("JDK 21",)
    assert kotlin["Kotlin 1.7"].names == ("Kotlin", "Kotlin 1.7")
    assert kotlin["Kotlin 1.5"].execeval == ("kotlinc 1.7.20 `-language-version 1.5`, JDK 21",)


def test_readmes_hold_the_rendered_table(tmp_path: Path) -> None:
    assert runtime_table.stale() == []
    assert runtime_table.main(["--check"]) == 0
    readme = tmp_path / "README.md"
    begin, end = runtime_table.TABLE_BEGIN, runtime_table.TABLE_END
    readme.write_text(f"x\n{begin}\n| old |\n{end}\ny\n", encoding="utf-8")
    assert runtime_table.main(["--check"], readmes=[readme]) == 1
    assert "| old |" in readme.read_text(encoding="utf-8"), "--check must not write"
    assert runtime_table.main([], readmes=[readme]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("x\n") and text.endswith("y\n") and "| Kotlin 1.4 |" in text
    with pytest.raises(ValueError, match="markers"):
        runtime_table.replace_table("no markers")


@pytest.mark.parametrize(
    "name", [n for n, h in runtime_table.HERE.items() if h.version and n in registry().runtimes]
)
def test_declared_version_is_the_installed_one(name: str) -> None:
    """What the table says `make toolchains` installs is what this host reports (CI: Debian 12)."""
    rt = require_runtime(name)
    assert rt.version.startswith(runtime_table.HERE[name].version), (name, rt.version)


@pytest.mark.parametrize(
    ("source", "verdict"),
    [
        # Array.prototype.at: Node.js 16.6, so ExecEval's 16.17.1 runs it
        ("console.log([1, 2, 3].at(-1))\n", "PASSED"),
        # Array.prototype.findLast: Node.js 18, a TypeError under ExecEval's Node.js as here
        ("console.log([1, 2, 3].findLast((x) => x < 9))\n", "RUNTIME_ERROR"),
    ],
)
def test_node_is_execevals_release(source: str, verdict: str) -> None:
    from code_eval_taskpack.execution import Engine, Job, TestCase

    rt = require_runtime("Node.js")
    assert rt.version == "16.17.1"
    r = Engine().judge(Job("Node.js", source, (TestCase("", ("3",)),)))
    assert r.verdict.value == verdict, r
