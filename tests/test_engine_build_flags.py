"""The build speed-ups' command lines and their switch back to the classic ones.

Go is linked without its symbol table and DWARF (`-ldflags=-s -w`), Rust is built with one
codegen unit and without debug info, C and C++ are linked with gold: the produced binaries change, so `CODE_EVAL_CLASSIC_BUILD=1`
must restore the exact command lines of earlier engines, and verdicts must not depend on the mode.
"""

from __future__ import annotations

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution.languages.registry import CLASSIC_ENV, load_registry
from tests.conftest import require_runtime
from tests.engine_programs import LUCKY, wrong

#: the command lines of the engine before the build speed-ups (commit 367bdba)
RUST_2021_CLASSIC = ("{binary}", "--edition", "2021", "-O", "-o", "main", "main.rs")
GO_CLASSIC_SCRIPT = '"$0" build -o main main.go || exit; '


def test_classic_switch_restores_the_old_command_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = load_registry(classic=False).runtimes
    classic = load_registry(classic=True).runtimes
    assert classic["Rust 2021"].compile == RUST_2021_CLASSIC
    assert fast["Rust 2021"].compile != RUST_2021_CLASSIC
    assert "strip=debuginfo" in (fast["Rust 2021"].compile or ())
    go_fast, go_classic = fast["Go"].compile or (), classic["Go"].compile or ()
    assert go_classic[2].startswith(GO_CLASSIC_SCRIPT)
    assert "-ldflags=-s\\ -w" in go_fast[2]
    # C and C++ are linked with gold (and -pipe) unless classic
    for name in ("GNU C11", "GNU C++17"):
        assert "-fuse-ld=gold" in (fast[name].compile or ())
        assert "-fuse-ld=gold" not in (classic[name].compile or ())
    # runtimes without a classic entry are untouched and not marked
    assert classic["PHP"].run == fast["PHP"].run
    assert not classic["PHP"].classic and classic["Go"].classic
    # the environment switch (read when the registry loads)
    monkeypatch.setenv(CLASSIC_ENV, "1")
    assert load_registry().runtimes["Rust 2021"].compile == RUST_2021_CLASSIC
    monkeypatch.setenv(CLASSIC_ENV, "0")
    assert load_registry().runtimes["Rust 2021"].compile != RUST_2021_CLASSIC


def test_modes_never_share_cache_entries() -> None:
    fast = load_registry(classic=False).runtimes["Go"]
    classic = load_registry(classic=True).runtimes["Go"]
    assert fast.fingerprint() != classic.fingerprint()


def test_classic_without_its_command_is_an_error(tmp_path: pytest.TempPathFactory) -> None:
    text = load_registry.__globals__["REGISTRY_PATH"].read_text(encoding="utf-8")
    broken = text.replace(
        'aliases = ["PHP 8.1"]',
        'aliases = ["PHP 8.1"]\ncompile_classic = ["{binary}", "-l", "main.php"]',
    )
    assert broken != text
    path = tmp_path / "languages.toml"  # type: ignore[operator]
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(ValueError, match="compile_classic without compile"):
        load_registry(path)


PANIC = {
    "C": "#include <stdlib.h>\nint main(void) { abort(); }\n",
    "Go": "package main\n\nfunc main() {\n\tvar a []int\n\tprintln(a[3])\n}\n",
    "Rust": 'fn main() {\n    let v: Vec<i64> = Vec::new();\n    println!("{}", v[3]);\n}\n',
}


@pytest.mark.parametrize("cluster,name", [("Go", "Go"), ("Rust", "Rust 2021"), ("C", "GNU C11")])
def test_both_modes_give_the_same_verdicts(cluster: str, name: str) -> None:
    require_runtime(name)
    tests = (TestCase("3\n", ("14",)), TestCase("1\n", ("2",)))
    sources = {"right": LUCKY[cluster], "wrong": wrong(cluster), "panic": PANIC[cluster]}
    engine = Engine(workers=2)
    verdicts = {}
    for classic in (False, True):
        runtime = load_registry(classic=classic).runtimes[name]
        for tag, src in sources.items():
            result = engine.judge_as(Job(name, src, tests, time_limit_s=2.0), runtime)
            argv = " ".join(result.runtime["compile_argv"] or ())
            # Go: the direct build (go_direct.py) links with go build's -s -w
            fast_flags = ("strip=", "-ldflags", "-fuse-ld=gold", "-buildmode=exe -s -w")
            assert "-o main" in argv
            assert any(f in argv for f in fast_flags) != classic
            verdicts[classic, tag] = result.verdict.value
    assert [verdicts[False, t] for t in sources] == ["PASSED", "WRONG_ANSWER", "RUNTIME_ERROR"]
    assert [verdicts[True, t] for t in sources] == [verdicts[False, t] for t in sources]
