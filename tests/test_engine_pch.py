"""C++ precompiled headers: which programs get one, that gcc really uses it, and that verdicts
are those of the plain compile (`CODE_EVAL_PCH=0`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution.speedups import pch
from tests.conftest import require_runtime

HEAD = "#include <iostream>\n\n#include <vector>\n#include <algorithm>\n"


@pytest.mark.parametrize(
    "source,expected",
    [
        (HEAD + "using namespace std;\nint main() {}\n", ("iostream", "vector", "algorithm")),
        ("\n  # include <bits/stdc++.h>\r\nint main() {}\n", ("bits/stdc++.h",)),
        ("using namespace std;\n#include <iostream>\n", ()),  # a line before the includes
        ("#define int long long\n#include <iostream>\n", ()),  # a macro before the includes
        ('#include "mine.h"\n#include <iostream>\n', ()),  # a user header first
        ("// solution\n#include <iostream>\n", ()),  # a comment first
        ("#include <../../etc/passwd>\n", ()),  # not a plain header name
        ('#include <iostream>\n#include "mine.h"\n', ("iostream",)),  # the list stops there
    ],
)
def test_leading_headers(source: str, expected: tuple[str, ...]) -> None:
    assert pch.leading_headers(source) == expected


def test_compile_argv_replaces_the_runtime_includes() -> None:
    argv = ("g++", "-O2", "-include", "limits.h", "-include", "math.h", "-o", "main", "main.cpp")
    assert pch.runtime_includes(argv) == (["limits.h", "math.h"], 2)
    assert pch.compile_argv(argv, "/c/pch.h") == (
        "g++", "-O2", "-include", "/c/pch.h", "-o", "main", "main.cpp",
    )  # fmt: skip
    text = pch.header_text(["limits.h", "math.h"], ("iostream",))
    assert text == "#include <limits.h>\n#include <math.h>\n#include <iostream>\n"


SUM = HEAD + (
    "using namespace std;\nint main() { long long a, b; cin >> a >> b;\n"
    "  vector<long long> v{a, b}; cout << *max_element(v.begin(), v.end()) + min(a, b)"
    " + (INT_MAX - INT_MAX) + (long long)sqrt(0.0) << endl; }\n"
)
PROGRAMS = {
    "right": SUM,
    "wrong": SUM.replace("+ min(a, b)", "- min(a, b)"),
    "crash": HEAD + "int main() { std::vector<int> v; v.at(3) = 1; }\n",
    "broken": HEAD + "int main() { undeclared(); }\n",
    "macro": "#define N 5\n" + SUM,
    "user-header": '#include "main.cpp"\n' + SUM,
}
EXPECTED = {
    "right": "PASSED",
    "wrong": "WRONG_ANSWER",
    "crash": "RUNTIME_ERROR",
    "broken": "COMPILATION_ERROR",
    "macro": "PASSED",
    "user-header": "COMPILATION_ERROR",
}


def _judge(tmp_path: Path, tag: str) -> dict[str, tuple[str, list[str]]]:
    engine = Engine(workers=2, cache=tmp_path / tag)
    tests = (TestCase("2 3\n", ("5",)), TestCase("10 4\n", ("14",)))
    jobs = [Job("GNU C++17", src, tests, id=name) for name, src in PROGRAMS.items()]
    out = {}
    for r in engine.judge_many(jobs):
        out[r.id] = (r.verdict.value, list(r.runtime.get("compile_argv") or []))
    return out


def test_pch_verdicts_equal_the_plain_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = require_runtime("GNU C++17")
    # the batch announces 4 programs opening with HEAD: built for the first of them
    monkeypatch.setattr(pch, "BUILD_AFTER", 4)
    with_pch = _judge(tmp_path, "pch")
    monkeypatch.setenv(pch.ENV, "0")
    without = _judge(tmp_path, "plain")
    assert {k: v[0] for k, v in with_pch.items()} == EXPECTED
    assert {k: v[0] for k, v in without.items()} == EXPECTED
    plain = runtime.expand(runtime.compile or ())
    for name, (_, argv) in without.items():
        assert argv == plain, name
    used = {name for name, (_, argv) in with_pch.items() if argv != plain}
    assert used == {"right", "wrong", "crash", "broken"}
    # gcc really loads the header (it would fall back to its text silently otherwise)
    argv = with_pch["wrong"][1]
    inside = Path(argv[argv.index("-include") + 1])  # as the sandbox shows it: /shared/<key>
    header = next((tmp_path / "pch").rglob(f"{inside.parent.name}/{inside.name}"))
    argv = [str(header) if a == str(inside) else a for a in argv]
    assert header.read_text() == pch.header_text(
        ["limits.h", "math.h"], ("iostream", "vector", "algorithm")
    )
    (tmp_path / "main.cpp").write_text(PROGRAMS["right"])
    probe = [*argv[:-1], "-H", "-Winvalid-pch", "-fsyntax-only"]
    probe = [a for a in probe if a not in ("-o", "main", "-static", "-lm")]
    out = subprocess.run(probe, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"! {header}.gch" in out.stderr.splitlines()[0]


def test_a_header_is_built_only_for_a_list_enough_programs_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build costs several compiles: a list fewer than BUILD_AFTER programs of a batch share
    is never built; one that enough share is built once, for the first of them; programs judged
    one at a time count as they come."""
    runtime = require_runtime("GNU C++17")
    monkeypatch.setattr(pch, "_seen", {})
    monkeypatch.setattr(pch, "_expected", {})
    builds: list[str] = []

    def build(text: str, argv: tuple[str, ...], limits: object) -> bytes:
        builds.append(text)
        return b"gch"

    few = "#include <cstdio>\nint main() {}\n"
    many = "#include <cstdio>\n#include <cstring>\nint main() {}\n"
    pch.expect([(runtime, few)] * (pch.BUILD_AFTER - 1) + [(runtime, many)] * pch.BUILD_AFTER)
    assert pch.for_source(runtime, few, tmp_path, build) is None
    assert pch.for_source(runtime, many, tmp_path, build) is not None
    assert pch.for_source(runtime, many, tmp_path, build) is not None
    assert len(builds) == 1 and builds[0].endswith("#include <cstring>\n")
    for _ in range(pch.BUILD_AFTER - 2):  # `few` met one by one: built at the BUILD_AFTER-th
        assert pch.for_source(runtime, few, tmp_path, build) is None
    assert pch.for_source(runtime, few, tmp_path, build) is not None
    assert len(builds) == 2
