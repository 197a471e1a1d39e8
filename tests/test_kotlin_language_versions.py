"""Kotlin programs compile exactly where ExecEval's `Kotlin 1.x` compiles them.

ExecEval runs one kotlinc (1.7.20) with `-language-version 1.4` ... `1.7` (`Kotlin` is 1.7); the
language version also sets the standard library's API level. Each program below uses one idiom
whose first Kotlin release is known, and its expected verdict under each name follows from
ExecEval's flag: PASSED from that release on, COMPILATION_ERROR before it. Judged in the
engine's own protocol (the registry's commands, through the warm compiler) and in ExecEval's
(its commands, as the server's `execeval` mode runs them, compiled cold).
"""

from __future__ import annotations

import pytest

from code_eval_taskpack.execution import Engine, Job, Result, TestCase, Verdict, resolve
from code_eval_taskpack.execution.execeval.compat import (
    EXECEVAL_RUNTIMES,
    execeval_commands,
    execeval_runtime,
)
from tests.conftest import require_runtime

NAMES = ("Kotlin 1.4", "Kotlin 1.5", "Kotlin 1.6", "Kotlin 1.7", "Kotlin")
LEVEL = {"Kotlin 1.4": 4, "Kotlin 1.5": 5, "Kotlin 1.6": 6, "Kotlin 1.7": 7, "Kotlin": 7}
TEST = (TestCase("Hello World 3 1 2\n", ("hello 72 3",)),)

#: idiom -> (program printing "hello 72 3" for the test's input, the language versions that
#: accept it)
PROGRAMS: dict[str, tuple[str, frozenset[int]]] = {
    # the baseline: Kotlin 1.0's own API, accepted under every version
    "readLine": (
        "fun main() {\n"
        "    val w = readLine()!!.split(' ')\n"
        '    println("${w[0].toLowerCase()} ${w[0][0].toInt()} ${w.drop(2).map { it.toInt() }'
        '.maxOrNull()}")\n'
        "}\n",
        frozenset({4, 5, 6, 7}),
    ),
    "maxOrNull": (  # 1.4
        "fun main() {\n"
        "    val w = readLine()!!.split(' ')\n"
        "    val m = w.drop(2).map { it.toInt() }.maxOrNull()\n"
        '    println("hello 72 $m")\n'
        "}\n",
        frozenset({4, 5, 6, 7}),
    ),
    "Char.code": (  # 1.5
        "fun main() {\n"
        "    val w = readLine()!!.split(' ')\n"
        '    println("hello ${w[0][0].code} 3")\n'
        "}\n",
        frozenset({5, 6, 7}),
    ),
    "lowercase": (  # 1.5
        "fun main() {\n"
        "    val w = readLine()!!.split(' ')\n"
        '    println("${w[0].lowercase()} 72 3")\n'
        "}\n",
        frozenset({5, 6, 7}),
    ),
    "readln": (  # 1.6
        "fun main() {\n"
        "    val w = readln().split(' ')\n"
        '    println("hello 72 ${w.drop(2).map { it.toInt() }.maxOrNull()}")\n'
        "}\n",
        frozenset({6, 7}),
    ),
    "buildList": (  # stable in 1.6 (experimental, opt-in required, before)
        "fun main() {\n"
        "    val w = readLine()!!.split(' ')\n"
        "    val xs = buildList { for (t in w.drop(2)) add(t.toInt()) }\n"
        '    println("hello 72 ${xs.maxOrNull()}")\n'
        "}\n",
        frozenset({6, 7}),
    ),
    # Iterable.max(): nullable and deprecated in 1.4, an error in 1.5, hidden in 1.6, and back
    # in 1.7 returning the element itself
    "max": (
        "fun main() {\n"
        "    val w = readLine()!!.split(' ')\n"
        '    println("hello 72 ${w.drop(2).map { it.toInt() }.max()}")\n'
        "}\n",
        frozenset({4, 7}),
    ),
}
CASES = [(idiom, name) for idiom in PROGRAMS for name in NAMES]


def _expected(idiom: str, name: str) -> Verdict:
    accepted = LEVEL[name] in PROGRAMS[idiom][1]
    return Verdict.PASSED if accepted else Verdict.COMPILATION_ERROR


@pytest.fixture(scope="module")
def engine_verdicts() -> dict[tuple[str, str], Result]:
    for name in NAMES:
        require_runtime(name)
    jobs = [Job(name, PROGRAMS[idiom][0], TEST, id=f"{idiom}|{name}") for idiom, name in CASES]
    results = Engine().judge_many(jobs)
    return {(r.id.split("|")[0], r.id.split("|")[1]): r for r in results}


@pytest.mark.parametrize(("idiom", "name"), CASES)
def test_engine_compiles_where_execeval_does(
    engine_verdicts: dict[tuple[str, str], Result], idiom: str, name: str
) -> None:
    r = engine_verdicts[(idiom, name)]
    assert r.verdict is _expected(idiom, name), (r.verdict, r.compile)
    assert r.runtime["version"].startswith("1.7.22")


def test_every_kotlin_name_compiles_with_execevals_language_version() -> None:
    for name in NAMES:
        rt = resolve(name)
        level = f"1.{LEVEL[name]}"
        assert rt.compile is not None
        assert rt.compile[rt.compile.index("-language-version") + 1] == level, name
        commands = execeval_commands(EXECEVAL_RUNTIMES[name], rt)
        assert commands.adaptations == (), name  # ExecEval's flags as they are
        assert commands.compile is not None
        assert commands.compile[commands.compile.index("-language-version") + 1] == level


@pytest.mark.parametrize(
    ("idiom", "name"),
    [
        ("readln", "Kotlin 1.5"),
        ("readln", "Kotlin 1.6"),
        ("Char.code", "Kotlin 1.4"),
        ("max", "Kotlin 1.6"),
        ("max", "Kotlin"),
    ],
)
def test_execeval_commands_compile_where_execeval_does(idiom: str, name: str) -> None:
    base = require_runtime(name)
    runtime = execeval_runtime(base, execeval_commands(EXECEVAL_RUNTIMES[name], base))
    job = Job(name, PROGRAMS[idiom][0], TEST, time_limit_s=5, memory_limit_mb=512)
    r = Engine().judge_as(job, runtime)
    assert r.verdict is _expected(idiom, name), (r.verdict, r.compile)
