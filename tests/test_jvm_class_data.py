"""Java with the JVM class-data sharing archive (execution/speedups/jvm_cds.py): every verdict, exit
code, output and error message is that of the catalog's command line, the archive is only ever
used whole and checked, it is read-only to programs, and the result cache keys do not change."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.config import EngineConfig
from code_eval_taskpack.execution.languages.registry import load_registry, resolve
from code_eval_taskpack.execution.speedups import Host
from code_eval_taskpack.execution.speedups import jvm_cds as class_data
from code_eval_taskpack.execution.speedups.jvm_cds import JvmClassData
from code_eval_taskpack.execution.types import Result
from tests.conftest import require_runtime

ROOT = Path(__file__).resolve().parent.parent
EQUAL = ROOT / "bench" / "workload" / "equal.jsonl"
PROBLEMS = ROOT.parent / "shared" / "data" / "xcodeeval_sample" / "problem_descriptions.jsonl"

MAIN = "public class Main {{ public static void main(String[] args) throws Exception {{ {} }} }}\n"
PROGRAMS = {
    "scanner": MAIN.format(
        "java.util.Scanner s = new java.util.Scanner(System.in); int n = s.nextInt();"
        'System.out.println(String.format("%d %s", n * 2, java.math.BigInteger.TWO.pow(70)));'
    ),
    "streams": MAIN.format(
        "var r = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));"
        "int n = Integer.parseInt(r.readLine().trim());"
        "System.out.println(java.util.stream.IntStream.rangeClosed(1, n).boxed()"
        ".collect(java.util.stream.Collectors.toMap(i -> i, i -> i * i)));"
    ),
    "wrong": MAIN.format("System.out.println(1);"),
    "crash": MAIN.format(
        "int[] a = new int[2]; System.out.println(a[new java.util.Scanner(System.in).nextInt()]);"
    ),
    "npe": MAIN.format("String s = null; System.out.println(s.length());"),
    "exit": MAIN.format("System.out.print(6); System.exit(3);"),
    "oom": MAIN.format(
        "var l = new java.util.ArrayList<long[]>(); while (true) l.add(new long[1 << 20]);"
    ),
    "compile-error": MAIN.format("int x = ;"),
}
TESTS = (TestCase("3\n", ("6 1180591620717411303424",)),)


def judge_both(jobs: list[Job]) -> dict[bool, list[Result]]:
    """`jobs` judged with the archive off, then on (no result cache)."""
    return {
        on: Engine(workers=2, config=EngineConfig(jvm_cds=on)).judge_many(jobs)
        for on in (False, True)
    }


def observable(result: Result) -> tuple[object, ...]:
    tests = [(t.verdict, t.exit_code, t.signal, t.stdout, t.stderr, t.detail) for t in result.tests]
    compiled = result.compile.ok if result.compile is not None else None
    return (result.verdict, compiled, tests)


def flag_of(result: Result) -> str | None:
    argv = result.runtime.get("run_argv") or []
    return next((a for a in argv if a.startswith("-XX:SharedArchiveFile=")), None)


def test_only_the_jdk_classes_of_the_warm_up_are_listed() -> None:
    listed = "\n".join(
        [
            "# comment",
            "java/util/Scanner id: 1",
            "ClassDataWarmup id: 2",
            "sun/nio/cs/UTF_8 id: 3",
            "x/Y id: 4 super: 0 source: /tmp/x.jar",
            "@lambda-proxy ClassDataWarmup compare ()Ljava/util/Comparator;",
            "@lambda-proxy java/util/regex/Pattern is ()Ljava/util/regex/Pattern$CharPredicate;",
            "@lambda-form-invoker [LF_RESOLVE] java.lang.invoke.Invokers$Holder linkToTargetMethod L_L",
        ]
    )
    assert class_data.jdk_lines(listed) == [
        "java/util/Scanner id: 1",
        "sun/nio/cs/UTF_8 id: 3",
        "@lambda-proxy java/util/regex/Pattern is ()Ljava/util/regex/Pattern$CharPredicate;",
        "@lambda-form-invoker [LF_RESOLVE] java.lang.invoke.Invokers$Holder linkToTargetMethod L_L",
    ]


def test_verdicts_outputs_and_messages_are_those_of_the_catalog_command() -> None:
    require_runtime("Java 17")
    jobs = [
        Job("Java 17", src, TESTS, id=name, memory_limit_mb=256) for name, src in PROGRAMS.items()
    ]
    judged = judge_both(jobs)
    for cold, warm in zip(judged[False], judged[True], strict=True):
        assert observable(cold) == observable(warm), cold.id
        if cold.compile is None or cold.compile.ok:
            assert flag_of(cold) is None and flag_of(warm), cold.id
    verdicts = {r.id: r.verdict.value for r in judged[True]}
    assert verdicts == {
        "scanner": "PASSED",
        "streams": "WRONG_ANSWER",
        "wrong": "WRONG_ANSWER",
        "crash": "RUNTIME_ERROR",
        "npe": "RUNTIME_ERROR",
        "exit": "RUNTIME_ERROR",
        "oom": "MEMORY_LIMIT_EXCEEDED",
        "compile-error": "COMPILATION_ERROR",
    }
    crash = judged[True][3].tests[0].stderr
    assert "ArrayIndexOutOfBoundsException: Index 3 out of bounds for length 2" in crash
    assert "at Main.main(Main.java:1)" in crash


def test_the_workload_programs_judge_the_same() -> None:
    """Real programs of the judge-speed workload (every kind: right, wrong, crashing, compile
    errors), cold against the archive."""
    require_runtime("Java 17")
    samples = {}
    for line in PROBLEMS.read_text(encoding="utf-8").splitlines():
        p = json.loads(line)
        samples[p["src_uid"]] = TestCase(p["sample_inputs"][0], (p["sample_outputs"][0],))
    rows = [json.loads(x) for x in EQUAL.read_text(encoding="utf-8").splitlines()]
    java = [r for r in rows if r["lang_cluster"] == "Java"][::6]
    jobs = [Job("Java 17", r["source_code"], (samples[r["src_uid"]],), id=r["id"]) for r in java]
    judged = judge_both(jobs)
    kinds = {r.verdict.value for r in judged[True]}
    assert {"PASSED", "WRONG_ANSWER"} <= kinds, kinds
    for cold, warm in zip(judged[False], judged[True], strict=True):
        assert observable(cold) == observable(warm), cold.id


def test_the_archive_is_read_only_and_the_flag_is_all_a_program_sees() -> None:
    require_runtime("Java 17")
    src = MAIN.format(
        "var args2 = java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments();"
        'String p = args2.stream().filter(a -> a.startsWith("-XX:SharedArchiveFile="))'
        '.findFirst().get().split("=", 2)[1];'
        'try (var o = new java.io.FileOutputStream(p, true)) { o.write(1); System.out.println("written"); }'
        ' catch (java.io.IOException e) { System.out.println("refused"); }'
    )
    r = Engine(workers=1).judge(Job("Java 17", src, (TestCase("", ("refused",)),)))
    assert r.verdict.value == "PASSED", (r.detail, r.tests[0].stdout, r.tests[0].stderr)
    flag = flag_of(r)
    assert flag is not None and flag.startswith("-XX:SharedArchiveFile=/shared/jvm-cds-")


def test_switches_and_custom_commands_run_the_catalog_command() -> None:
    require_runtime("Java 17")
    job = Job("Java 17", PROGRAMS["scanner"], TESTS)
    for switches in (EngineConfig(jvm_cds=False), EngineConfig(classic_build=True)):
        assert not class_data.enabled(switches)
    assert class_data.applies(resolve("Java 17"))
    custom = dataclasses.replace(resolve("Java 17"), run=("java", "-cp", ".", "{main_class}"))
    assert not class_data.applies(custom)
    assert not class_data.applies(resolve("Python 3"))
    # a heap of 32 GB or more has no compressed oops: the archive could not be mapped
    host = Host(
        backend=LocalBackend(), isolation="required", compiled=None, config=EngineConfig.from_env()
    )
    step = JvmClassData()
    assert step.applies(
        resolve("Java 17"), dataclasses.replace(job, memory_limit_mb=31 * 1024), host
    )
    assert not step.applies(
        resolve("Java 17"), dataclasses.replace(job, memory_limit_mb=32 * 1024), host
    )
    # the result cache keys do not depend on the archive (strategies are not fingerprinted)
    keys = {
        Engine(config=EngineConfig(jvm_cds=on)).key(job, resolve("Java 17")) for on in (False, True)
    }
    assert len(keys) == 1
    assert "jvm_cds" in load_registry().runtimes["Java 17"].strategies
    assert "strategies" not in resolve("Java 17").raw


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_archive_is_never_used(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A truncated archive crashes the JVM, a flipped byte breaks its checksums: the check
    refuses both, and the program runs with the catalog's command line (same verdict)."""
    require_runtime("Java 17")
    made = class_data.prepare()
    java = class_data.java_binary()
    assert made is not None and java is not None
    data = bytearray(made.path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 3]
    else:
        data[len(data) // 2] ^= 0xFF
    cache = tmp_path / "cache"
    damaged = cache / "startup" / made.directory.name
    damaged.mkdir(parents=True)
    (damaged / class_data.ARCHIVE).write_bytes(bytes(data))
    assert not class_data.check(java, damaged / class_data.ARCHIVE)
    monkeypatch.setattr(class_data, "_checked", {})
    assert class_data.prepare(EngineConfig(cache=cache)) is None
    r = Engine(workers=1, config=EngineConfig(cache=cache)).judge(
        Job("Java 17", PROGRAMS["scanner"], TESTS)
    )
    assert r.verdict.value == "PASSED" and flag_of(r) is None, r.detail
    shutil.rmtree(cache)
