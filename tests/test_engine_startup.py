"""Ruby without RubyGems: the bundled gems stay reachable, error messages and verdicts stay those
of the classic command line, and the prelude is the toolchain's own (probed in the sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, startup
from code_eval_taskpack.execution.languages import load_registry
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
    assert startup.needs_prelude(("ruby", "-r{ruby_prelude}", "main.rb"))
    assert not startup.needs_prelude(("ruby", "main.rb"))
    text = startup.prelude_text(["/usr/lib/ruby/gems/3.1.0/gems/prime-0.1.2/lib"])
    assert text.endswith('$LOAD_PATH.concat(["/usr/lib/ruby/gems/3.1.0/gems/prime-0.1.2/lib"])\n')
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
    text = Path(prelude).read_text(encoding="utf-8")
    assert "/prime-" in text and "/matrix-" in text
    assert "/var/lib/gems" not in text  # the host's user gems are not in the sandbox's view
