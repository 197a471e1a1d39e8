"""The language registry and one judged program of each kind in all 11 language clusters."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from code_eval_taskpack.execution import (
    Engine,
    Job,
    Result,
    TestCase,
    UnknownLanguageError,
    Verdict,
    resolve,
)
from code_eval_taskpack.execution.languages.registry import (
    CLUSTERS,
    accepted_names,
    cluster_runtime,
    java_layout,
    normalize,
)
from tests.conftest import SHARED_DATA, require, require_runtime
from tests.engine_programs import (
    COMPILE_ERROR,
    HELLO,
    LUCKY,
    LUCKY_EXTRA_TESTS,
    LUCKY_SRC_UID,
    check_isolation,
    describe,
    wrong,
)

XCODEEVAL_LANGS = [
    "GNU C", "GNU C11", "GNU C++", "GNU C++0x", "GNU C++11", "GNU C++14", "GNU C++17",
    "GNU C++20", "GNU C++17 (64)", "GNU C++20 (64)", "GNU C++17 Diagnostics", "MS C++",
    "MS C++ 2017", "Clang++17 Diagnostics", "Clang++20 Diagnostics", "MS C#", "C# 8", "C# 10",
    "Mono C#", ".NET Core C#", "Python 2", "Python 3", "Python 3 + libs", "PyPy 2", "PyPy 3",
    "PyPy 3-64", "JavaScript", "Node js", "Node.js", "Rust", "Rust 2015", "Rust 2018",
    "Rust 2021", "Java 6", "Java 7", "Java 8", "Java 11", "Java 17", "Kotlin", "Kotlin 1.4",
    "Kotlin 1.5", "Kotlin 1.6", "Kotlin 1.7", "PHP", "PHP 8.1", "Ruby", "Ruby 3", "Go",
]  # fmt: skip

CLUSTER_RUNTIME = {
    "C": "GNU C11",
    "C#": "Mono C#",
    "C++": "GNU C++17",
    "Go": "Go",
    "Java": "Java 17",
    "Javascript": "Node.js",
    "Kotlin": "Kotlin 1.4",
    "PHP": "PHP",
    "Python": "PyPy 3",
    "Ruby": "Ruby 3",
    "Rust": "Rust 2018",
}
SLUGS = {
    "c": "C",
    "cpp": "C++",
    "csharp": "C#",
    "go": "Go",
    "java": "Java",
    "javascript": "Javascript",
    "kotlin": "Kotlin",
    "php": "PHP",
    "python": "Python",
    "ruby": "Ruby",
    "rust": "Rust",
}


# -- registry ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", XCODEEVAL_LANGS)
def test_every_xcodeeval_lang_resolves(lang: str) -> None:
    rt = resolve(lang)
    assert rt.cluster in CLUSTERS
    assert resolve(f"  {lang.lower()} ") is rt  # case and spacing do not matter


def test_clusters_and_slugs_map_to_xcodeeval_cluster_runtimes() -> None:
    assert set(CLUSTER_RUNTIME) == set(CLUSTERS)
    for cluster, name in CLUSTER_RUNTIME.items():
        rt = cluster_runtime(cluster)
        assert rt.name == name and rt.cluster == cluster
        # a cluster's name is its runtime's, but where it is ExecEval's name of another one
        assert resolve(cluster) is rt or cluster == "Kotlin"
    # ExecEval's `Kotlin` is `Kotlin 1.7`; the authors judged the Kotlin cluster as `Kotlin 1.4`
    assert resolve("Kotlin") is resolve("Kotlin 1.7") is not cluster_runtime("Kotlin")
    with pytest.raises(UnknownLanguageError):
        cluster_runtime("Kotlin 1.4")
    for slug, cluster in SLUGS.items():
        assert resolve(slug) is resolve(cluster)
    assert resolve("Python 3").binary_candidates[0].endswith("python3")
    assert resolve("PyPy 3").binary_candidates == ("pypy3",)


def test_time_factors() -> None:
    factors = {c: resolve(c).time_factor for c in CLUSTERS}
    assert factors == {
        "C": 1, "C++": 1, "Rust": 1, "Go": 1, "Python": 2, "Java": 3, "Kotlin": 3, "C#": 3,
        "Javascript": 3, "PHP": 3, "Ruby": 3,
    }  # fmt: skip
    assert resolve("Python 3").time_factor == 3


def test_unknown_language_is_an_error_listing_names() -> None:
    with pytest.raises(UnknownLanguageError) as err:
        resolve("Brainfuck 2000")
    msg = str(err.value)
    assert "Brainfuck 2000" in msg
    for name in ("GNU C++17", "PyPy 3", "Kotlin 1.7", "Node.js", "Javascript"):
        assert name in msg
    accepted = {normalize(n) for n in accepted_names()}
    missing = [n for n in XCODEEVAL_LANGS if normalize(n) not in accepted]
    assert not missing, f"xCodeEval languages not in the accepted names: {missing}"
    assert {normalize(c) for c in CLUSTERS} <= accepted
    listed = {normalize(n) for n in msg.split(": ", 1)[1].split(", ")}
    assert accepted <= listed, "the error must list every accepted name"


def test_engine_refuses_unknown_language_before_judging() -> None:
    engine = Engine(workers=1)
    jobs = [
        Job(language="C", source_code=HELLO["C"], tests=()),
        Job(language="Cobol", source_code="x", tests=()),
    ]
    with pytest.raises(UnknownLanguageError):
        engine.judge_many(jobs)
    assert engine.judged == 0


def test_registry_rejects_duplicate_names(tmp_path: Path) -> None:
    from code_eval_taskpack.execution.languages.registry import load_registry

    bad = tmp_path / "reg.toml"
    bad.write_text(
        '[clusters]\nC = "A"\n'
        '[runtimes.A]\ncluster="C"\nbinary=["gcc"]\nsource="a.c"\nrun=["./a"]\naliases=["x"]\n'
        'apt=["gcc"]\n'
        '[runtimes.B]\ncluster="C"\nbinary=["gcc"]\nsource="a.c"\nrun=["./a"]\naliases=["X "]\n'
        'apt=["gcc"]\n'
    )
    with pytest.raises(ValueError, match="maps to both"):
        load_registry(bad)


def test_versions_are_real_and_recorded() -> None:
    for cluster in CLUSTERS:
        rt = require_runtime(cluster)
        assert rt.version and rt.version != "unknown", rt.name
        assert rt.binary and os.path.isabs(rt.binary)
        assert rt.version in rt.fingerprint() and rt.binary in rt.fingerprint()
    # the same runtimes as the clusters' (checked available above)
    # every Kotlin name runs the pinned compiler from the registry, and says which
    for name in ("Kotlin", "Kotlin 1.4", "Kotlin 1.5", "Kotlin 1.6", "Kotlin 1.7"):
        kotlin = require_runtime(name)
        assert kotlin.version.startswith("1.7.22"), (name, kotlin.version)
        assert kotlin.binary is not None and kotlin.binary.startswith("/usr/local/lib/")
    rust = resolve("Rust")
    # the real toolchain binary, not the rustup proxy
    assert rust.binary is not None and "/.cargo/bin/" not in rust.binary


def test_missing_toolchain_is_unavailable_and_infra_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from code_eval_taskpack.execution.backends import get_backend
    from code_eval_taskpack.execution.languages.registry import load_registry

    reg = tmp_path / "reg.toml"
    reg.write_text(
        '[clusters]\nC = "Ghost"\n'
        '[runtimes."Ghost"]\ncluster="C"\nbinary=["no-such-compiler-4e1f"]\nsource="a.c"\n'
        'compile=["{binary}", "a.c"]\nrun=["./a"]\napt=["ghost-toolchain"]\n'
    )
    ghost = load_registry(reg).resolve("ghost")
    assert not ghost.available
    assert "no-such-compiler-4e1f" in ghost.reason
    monkeypatch.setattr(get_backend("local"), "resolve", lambda name: ghost)
    result = Engine(workers=1).judge(Job(language="Ghost", source_code="x", tests=()))
    assert result.verdict is Verdict.INFRA_ERROR
    assert "unavailable" in result.detail


def test_java_layout_detection() -> None:
    assert java_layout("public class Foo { public static void main(String[] a) {} }") == ("", "Foo")
    src = "class Helper {}\nclass Sol { public static void main(String[] a) {} }\n"
    assert java_layout(src) == ("", "Sol")
    assert java_layout("// public class Nope\nclass A {}") == ("", "A")
    assert java_layout("") == ("", "Main")
    assert java_layout("package a.b;\npublic class C {}") == ("a.b", "C")
    assert java_layout("// package x;\nclass C {}") == ("", "C")


def test_java_in_a_package_runs() -> None:
    require_runtime("Java")
    src = (
        "package judge.sol;\nimport java.util.*;\npublic class Solver {\n"
        "  public static void main(String[] a) { System.out.println(new Scanner(System.in)"
        ".nextInt() * 2); }\n}\n"
    )
    r = Engine(workers=1).judge(Job("Java 8", src, (TestCase("21\n", ("42",)),)))
    assert r.verdict is Verdict.PASSED, (r.detail, r.tests, r.compile)


# -- judged programs --------------------------------------------------------------------------


def _lucky_tests(shared: Path) -> tuple[TestCase, ...]:
    path = shared / "xcodeeval_sample" / "problem_descriptions.jsonl"
    require(path.is_file(), f"{path} is missing")
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["src_uid"] == LUCKY_SRC_UID:
            samples = [
                TestCase(i, (o,))
                for i, o in zip(row["sample_inputs"], row["sample_outputs"], strict=True)
            ]
            extra = [TestCase(i, (o,)) for i, o in LUCKY_EXTRA_TESTS]
            assert row["time_limit"] == "0.5 seconds" and row["memory_limit"] == "64 megabytes"
            return tuple(samples + extra)
    raise AssertionError(f"problem {LUCKY_SRC_UID} not in {path}")


@pytest.fixture(scope="module")
def judged() -> dict[str, Result]:
    for cluster in CLUSTERS:
        require_runtime(cluster)
    lucky = _lucky_tests(SHARED_DATA)
    hello_test = (TestCase("", ("Hello, World!",)),)
    jobs: list[Job] = []
    for cluster in CLUSTERS:
        lang = cluster_runtime(cluster).name  # what a cluster's programs are judged with
        jobs.append(Job(lang, HELLO[cluster], hello_test, id=f"hello/{cluster}"))
        # the problem's own limits: 0.5 s (times the runtime's factor) and 64 MB
        jobs.append(Job(lang, LUCKY[cluster], lucky, 0.5, 64, id=f"lucky/{cluster}"))
        jobs.append(Job(lang, wrong(cluster), lucky, 0.5, 64, id=f"wrong/{cluster}"))
        if cluster in COMPILE_ERROR:
            jobs.append(Job(lang, COMPILE_ERROR[cluster], lucky, id=f"ce/{cluster}"))
    results = Engine().judge_many(jobs)
    return {r.id: r for r in results}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_hello_world_passes(judged: dict[str, Result], cluster: str) -> None:
    r = judged[f"hello/{cluster}"]
    assert r.verdict is Verdict.PASSED, describe(r)
    assert r.runtime["name"] == CLUSTER_RUNTIME[cluster]
    assert r.runtime["version"] not in ("", "unknown")
    assert r.runtime["binary"]
    check_isolation(r.isolation)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_real_problem_passes_every_test(judged: dict[str, Result], cluster: str) -> None:
    r = judged[f"lucky/{cluster}"]
    assert r.verdict is Verdict.PASSED, describe(r)
    assert len(r.tests) == 3 and all(t.verdict is Verdict.PASSED for t in r.tests)
    assert r.tests[2].stdout.strip() == "72057594037927934"
    assert all(t.memory_mb > 0 for t in r.tests)
    check_isolation(r.isolation)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_wrong_answer(judged: dict[str, Result], cluster: str) -> None:
    r = judged[f"wrong/{cluster}"]
    assert r.verdict is Verdict.WRONG_ANSWER, describe(r)
    # stop on first failure: the first sample already fails
    assert len(r.tests) == 1 and r.tests[0].stdout.strip() == "4"


@pytest.mark.parametrize("cluster", sorted(COMPILE_ERROR))
def test_compile_error(judged: dict[str, Result], cluster: str) -> None:
    r = judged[f"ce/{cluster}"]
    assert r.verdict is Verdict.COMPILATION_ERROR, describe(r)
    assert r.compile is not None and not r.compile.ok
    assert r.compile.stderr.strip() or r.compile.stdout.strip()
    assert r.tests == []


def test_all_tests_mode_runs_everything() -> None:
    require_runtime("C")
    tests = (TestCase("1\n", ("9",)), TestCase("2\n", ("6",)), TestCase("1\n", ("2",)))
    job = Job("C", LUCKY["C"], tests, stop_on_first_fail=False)
    r = Engine(workers=1).judge(job)
    assert r.verdict is Verdict.WRONG_ANSWER
    assert [t.verdict for t in r.tests] == [Verdict.WRONG_ANSWER, Verdict.PASSED, Verdict.PASSED]


@pytest.mark.parametrize("name", ["Python 2", "PyPy 2"])
def test_python2_runtimes_say_why_they_are_missing(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Debian 12 packages neither: without a binary the reason says so, not a generic message,
    in the registry, in `doctor` and in the INFRA_ERROR of a job."""
    import argparse
    import dataclasses

    from code_eval_taskpack.execution.cli import main as cli
    from code_eval_taskpack.execution.languages import registry as languages

    real = resolve(name)
    missing = dataclasses.replace(
        real, binary_candidates=("/nonexistent/bin/python2-absent",), _binary=None, _version=None
    )
    assert not missing.available
    assert "Debian 12 has no" in missing.reason and name in missing.reason
    assert "/nonexistent/bin/python2-absent" in missing.reason
    generic = dataclasses.replace(
        resolve("Ruby 3"), binary_candidates=("/nonexistent/ruby",), _binary=None, _version=None
    )
    assert "Debian 12" not in generic.reason  # the hint is specific to these runtimes

    others = [rt for rt in languages.runtimes() if rt.name != name]
    monkeypatch.setattr(languages, "runtimes", lambda: [*others, missing])
    assert cli.cmd_doctor(argparse.Namespace(json=False)) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(name))
    assert "NO: Debian 12 has no" in row

    job = Job(language=name, source_code="print 1\n", tests=(TestCase("", ("1",)),))
    result = Engine(workers=1)._run(job, missing)
    assert result.verdict is Verdict.INFRA_ERROR and "Debian 12 has no" in result.detail
