"""Ruby without RubyGems: the bundled gems stay reachable, error messages and verdicts stay those
of the classic command line, and the prelude is the toolchain's own (probed in the sandbox).
CPython reads its standard library's -OO bytecode from a shared read-only folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution.caches.files import cache_root
from code_eval_taskpack.execution.languages.registry import load_registry
from code_eval_taskpack.execution.sandbox.view import SHARED_ROOT
from code_eval_taskpack.execution.speedups import startup
from tests.conftest import require_runtime

PROGRAMS = {
    # prime and matrix are bundled gems (RubyGems would activate them), set is the stdlib
    "gems": 'require "prime"\nrequire "matrix"\nrequire "set"\nn = gets.to_i\n'
    "s = Set.new(Prime.first(n))\nputs s.sum + Matrix[[1, 0], [0, 1]].determinant - 1\n",
    "message": "n = gets.to_i\nbegin\n  undefined_thing(n)\nrescue NameError => e\n"
    "  puts e.message.lines.first.strip\nend\n",
    "wrong": "n = gets.to_i\nputs n\n",
    "crash": "n = gets.to_i\nraise ArgumentError, 'no'\n",
    "missing-gem": 'require "no_such_gem_anywhere"\nputs 1\n',
}
TESTS = (TestCase("3\n", ("10",)),)
EXPECTED = {
    "gems": "PASSED",
    "message": "WRONG_ANSWER",
    "wrong": "WRONG_ANSWER",
    "crash": "RUNTIME_ERROR",
    "missing-gem": "RUNTIME_ERROR",
}


def test_prelude_text_and_probe_parsing() -> None:
    assert startup.needed(("ruby", "-r{ruby_prelude}", "main.rb")) == startup.PLACEHOLDER
    assert startup.needed(("python3", "-X", "pycache_prefix={python_bytecode}")) == startup.BYTECODE
    assert startup.needed(("ruby", "main.rb")) is None
    text = startup.prelude_text(["/usr/lib/ruby/gems/3.1.0/gems/prime-0.1.2/lib"])
    assert '$LOAD_PATH.concat(["/usr/lib/ruby/gems/3.1.0/gems/prime-0.1.2/lib"])\n' in text
    # the last statement is the Ruby zygote's seam, a lookup of a variable never set
    assert text.endswith(f'ENV.fetch("{startup.RUBY_SEAM}", nil)\n')
    assert startup.parse_paths(b"/a/lib\n/b/lib\n") == ["/a/lib", "/b/lib"]
    for bad in (b"relative/lib\n", b'/a"); system("x\n', b"/a/#{x}\n", b"\xff\n"):
        assert startup.parse_paths(bad) is None


@pytest.mark.parametrize("classic", [False, True])
def test_ruby_verdicts_and_output(classic: bool) -> None:
    require_runtime("Ruby 3")
    runtime = load_registry(classic=classic).runtimes["Ruby 3"]
    engine = Engine(workers=2)
    out = {}
    for name, src in PROGRAMS.items():
        r = engine.judge_as(Job("Ruby 3", src, TESTS, id=name), runtime)
        out[name] = r
        argv = r.runtime["run_argv"]
        assert ("--disable-gems" in argv) != classic, argv
    assert {k: r.verdict.value for k, r in out.items()} == EXPECTED
    # did_you_mean is loaded either way: the message names the method the same way
    assert out["message"].tests[0].stdout.startswith("undefined method `undefined_thing' for main")
    assert "cannot load such file -- no_such_gem_anywhere" in out["missing-gem"].tests[0].stderr


def test_the_prelude_lists_the_sandboxed_toolchain_gems() -> None:
    require_runtime("Ruby 3")
    engine = Engine(workers=1)
    r = engine.judge(Job("Ruby 3", PROGRAMS["gems"], TESTS))
    prelude = next(a for a in r.runtime["run_argv"] if a.startswith("-r"))[2:]
    text = _host_file(prelude).read_text(encoding="utf-8")
    assert "/prime-" in text and "/matrix-" in text
    assert "/var/lib/gems" not in text  # the host's user gems are not in the sandbox's view


def _host_file(inside: str) -> Path:
    """The host file behind a path of a start-up folder as the sandbox shows it
    (`/shared/<folder>/...`, sandbox.SharedFolder)."""
    parts = Path(inside).parts
    assert parts[:2] == ("/", SHARED_ROOT.strip("/")), inside
    return cache_root() / "startup" / Path(*parts[2:])


# -- CPython: the standard library's -OO bytecode -------------------------------------------

PY_PROGRAMS = {
    # the modules are read from the shared bytecode (the file behind __cached__ exists), their
    # docstrings are gone (-OO) and asserts are off, exactly as when compiled in memory
    "imports": "import sys, os, re, random, typing, collections, heapq, fractions\n"
    "n = int(input())\nassert False, 'asserts are off under -OO'\n"
    "print(sum(collections.Counter(re.findall('a', 'a' * n)).values()) + 7)\n"
    "print(heapq.__doc__, sys.flags.optimize, os.path.exists(heapq.__cached__))\n",
    "wrong": "print(int(input()))\n",
    "crash": "import json\njson.loads('{')\n",
}
PY_TESTS = (TestCase("3\n", ("10\nNone 2 True\n",)),)


@pytest.mark.parametrize("classic", [False, True])
def test_python_bytecode_verdicts_and_output(classic: bool) -> None:
    require_runtime("Python 3")
    runtime = load_registry(classic=classic).runtimes["Python 3"]
    engine = Engine(workers=2)
    out = {
        n: engine.judge_as(Job("Python 3", s, PY_TESTS, id=n), runtime)
        for n, s in PY_PROGRAMS.items()
    }
    for r in out.values():
        assert any(a.startswith("pycache_prefix=") for a in r.runtime["run_argv"]) != classic
    verdicts = {k: r.verdict.value for k, r in out.items()}
    # classic: the stdlib is compiled in memory each time (no .opt-2.pyc behind __cached__)
    imports = "PASSED" if not classic else "WRONG_ANSWER"
    assert verdicts == {"imports": imports, "wrong": "WRONG_ANSWER", "crash": "RUNTIME_ERROR"}
    first = out["imports"].tests[0].stdout.splitlines()
    assert first == ["10", f"None 2 {not classic}"]
    assert "json.decoder.JSONDecodeError" in out["crash"].tests[0].stderr


def test_python_bytecode_is_read_only_to_programs() -> None:
    """A program cannot leave bytecode behind for the next one: the folder is mounted read-only."""
    require_runtime("Python 3")
    src = (
        "import sys, os\np = os.path.join(sys.pycache_prefix, 'usr', 'poison.pyc')\n"
        "try:\n    open(p, 'wb').write(b'x')\n    print('written')\n"
        "except OSError as e:\n    print(type(e).__name__)\n"
        "print(sys.pycache_prefix.endswith('/pycache'))\n"
    )
    r = Engine(workers=1).judge(Job("Python 3", src, (TestCase("", ("",)),)))
    lines = r.tests[0].stdout.splitlines()
    assert lines[0] in ("OSError", "PermissionError", "FileNotFoundError"), lines
    assert lines[1] == "True"
    prefix = next(a for a in r.runtime["run_argv"] if a.startswith("pycache_prefix="))
    folder = _host_file(prefix.split("=", 1)[1])
    assert any(folder.rglob("heapq.*.opt-2.pyc"))
    assert not any(folder.rglob("poison.pyc"))
