"""`python -m execution run|batch|doctor`: the exact interface, input errors, and resumability."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.cli import main as cli
from code_eval_taskpack.execution.judge.jobfile import job_from_record, read_jobs
from code_eval_taskpack.utils.errors import DataError
from tests.conftest import ROOT, require, require_runtime, write_jsonl
from tests.engine_programs import ADD_PY

PY = "Python 3"
TESTS = [
    {"input": "1 2\n", "output": ["3"]},
    {"input": "5 5\n", "output": ["10"]},
    {"input": "1 1\n", "output": ["3"]},  # wrong on purpose: the sum is 2
]


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _stats(stderr: str) -> dict[str, int]:
    match = re.search(r"^stats: (\{.*\})$", stderr, re.M)
    assert match, stderr
    stats: dict[str, int] = json.loads(match.group(1))
    return stats


# -- run --------------------------------------------------------------------------------------


@pytest.fixture
def program(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "add.py"
    source.write_text(ADD_PY)
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps(TESTS))
    return source, tests


def test_run_prints_one_json_object(program: tuple[Path, Path]) -> None:
    require_runtime(PY)
    source, tests = program
    proc = _cli("run", "--language", PY, "--source", str(source), "--tests", str(tests))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["verdict"] == "WRONG_ANSWER"
    assert [t["verdict"] for t in out["tests"]] == ["PASSED", "PASSED", "WRONG_ANSWER"]
    for t in out["tests"]:
        assert {"verdict", "time_s", "memory_mb"} <= t.keys()
        assert t["memory_mb"] > 0
    assert isinstance(out["compile"], dict)
    assert isinstance(out["isolation"], dict) and out["isolation"]
    assert out["runtime"]["name"] == PY and out["runtime"]["version"] not in ("", "unknown")


def test_run_stops_at_first_failure_unless_all_tests(
    tmp_path: Path, program: tuple[Path, Path]
) -> None:
    require_runtime(PY)
    source, _ = program
    tests = tmp_path / "first_fails.json"
    tests.write_text(json.dumps([TESTS[2], TESTS[0], TESTS[1]]))
    first = json.loads(
        _cli("run", "--language", PY, "--source", str(source), "--tests", str(tests)).stdout
    )
    assert [t["verdict"] for t in first["tests"]] == ["WRONG_ANSWER"]
    every = _cli(
        "run",
        "--language",
        "python 3",
        "--source",
        str(source),
        "--tests",
        str(tests),
        "--all-tests",
    )
    assert [t["verdict"] for t in json.loads(every.stdout)["tests"]] == [
        "WRONG_ANSWER",
        "PASSED",
        "PASSED",
    ]


def test_run_limits_are_applied(tmp_path: Path) -> None:
    require_runtime(PY)
    source = tmp_path / "spin.py"
    source.write_text("while True:\n    pass\n")
    tests = tmp_path / "t.json"
    tests.write_text(json.dumps([{"input": "", "output": ["x"]}]))
    proc = _cli(
        "run",
        "--language",
        PY,
        "--source",
        str(source),
        "--tests",
        str(tests),
        "--time-limit",
        "0.2",
    )
    out = json.loads(proc.stdout)
    assert out["verdict"] == "TIME_LIMIT_EXCEEDED"
    assert out["tests"][0]["time_s"] < 5  # 0.2 s x the runtime's factor, not the 2 s default


def test_run_unknown_language_lists_accepted_names(program: tuple[Path, Path]) -> None:
    source, tests = program
    proc = _cli("run", "--language", "Klingon", "--source", str(source), "--tests", str(tests))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Klingon" in proc.stderr
    for name in ("GNU C++17", "PyPy 3", "Java 11", "Node.js", "Rust 2021", "Kotlin 1.7", "Go"):
        assert name in proc.stderr


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json", "not a readable JSON file"),
        ('{"input": "1", "output": ["1"]}', "expected a list"),
        ('[{"input": "1"}]', "tests[0].output"),
        ('[{"output": ["1"]}]', "tests[0].input"),
        ("[]", "at least one test"),
    ],
)
def test_run_bad_tests_file(
    tmp_path: Path,
    program: tuple[Path, Path],
    content: str,
    needle: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, _ = program
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code = cli.main(["run", "--language", PY, "--source", str(source), "--tests", str(bad)])
    assert code == 2
    err = capsys.readouterr().err
    assert str(bad) in err and needle in err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--language", PY, "--source", "x.py"],  # --tests missing
        ["run", "--language", PY, "--source", "x", "--tests", "t", "--time-limit", "-1"],
        ["batch", "in.jsonl"],  # -o missing
        ["batch", "in.jsonl", "-o", "o", "--workers", "0"],
        ["batch", "in.jsonl", "-o", "o", "--cache", "d", "--no-cache"],
        ["batch", "in.jsonl", "-o", "o", "--comparator", "fuzzy"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


# -- batch input validation -------------------------------------------------------------------

GOOD: dict[str, Any] = {"id": "a", "language": PY, "source_code": ADD_PY, "unittests": TESTS[:1]}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"id": None}, "id"),
        ({"id": True}, "id"),
        ({"language": "Klingon"}, "language"),
        ({"language": 3}, "language"),
        ({"source_code": None}, "source_code"),
        ({"unittests": "1 2"}, "unittests"),
        ({"unittests": []}, "unittests"),
        ({"unittests": [{"input": "1", "output": []}]}, "unittests[0].output"),
        ({"unittests": [{"input": 1, "output": ["1"]}]}, "unittests[0].input"),
        ({"time_limit_s": 0}, "time_limit_s"),
        ({"time_limit_s": "2"}, "time_limit_s"),
        ({"memory_limit_mb": -5}, "memory_limit_mb"),
        ({"stop_on_first_fail": "yes"}, "stop_on_first_fail"),
        ({"comparator": "fuzzy"}, "comparator"),
    ],
)
def test_bad_record_names_file_line_and_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(DataError) as exc:
        job_from_record({**GOOD, **change}, "in.jsonl", 7)
    assert exc.value.path == "in.jsonl" and exc.value.row == 7 and exc.value.field == field
    assert str(exc.value).startswith(f"in.jsonl, row 7, field {field!r}")


def test_good_record_and_optional_fields() -> None:
    job = job_from_record(
        {**GOOD, "id": 5, "time_limit_s": 1.5, "memory_limit_mb": 64, "stop_on_first_fail": False},
        "in.jsonl",
        1,
        comparator="execeval",
    )
    assert job.id == "5" and job.time_limit_s == 1.5 and job.memory_limit_mb == 64
    assert not job.stop_on_first_fail and job.comparator == "execeval"
    assert job.tests[0].output == ("3",)


def test_read_jobs_skips_blank_lines_and_reports_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "id": "b"}) + "\n{oops\n")
    lines = []
    with pytest.raises(DataError, match=r"row 4: invalid JSON"):
        for lineno, job in read_jobs(path):
            lines.append((lineno, job.id))
    assert lines == [(1, "a"), (3, "b")]


def test_batch_bad_line_exits_2_before_judging(tmp_path: Path) -> None:
    rows = [{**GOOD, "id": f"j{i}"} for i in range(3)]
    rows[1] = {**rows[1], "unittests": [{"input": "1"}]}
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    proc = _cli(
        "batch", str(src), "-o", str(out), "--cache", str(tmp_path / "cache"), "--no-progress"
    )
    assert proc.returncode == 2
    assert f"{src}, row 2, field 'unittests[0].output'" in proc.stderr
    assert not out.exists()
    assert not list((tmp_path / "cache").rglob("*.json"))  # nothing judged, nothing half-done


# -- batch ------------------------------------------------------------------------------------


def test_batch_output_order_fields_and_identical_jobs(tmp_path: Path) -> None:
    require_runtime(PY)
    rows: list[dict[str, Any]] = []
    for i in range(6):
        offset = i % 3  # three distinct programs, each twice
        source = ADD_PY.replace("a + b", f"a + b + {offset}")
        rows.append(
            {"id": f"job-{i}", "language": PY, "source_code": source, "unittests": TESTS[:1]}
        )
    rows.append({"id": 99, "language": "python 3", "source_code": ADD_PY, "unittests": TESTS[:2]})
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    cache = tmp_path / "cache"
    proc = _cli("batch", str(src), "-o", str(out), "--cache", str(cache), "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == [f"job-{i}" for i in range(6)] + ["99"]
    assert [r["verdict"] for r in results] == ["PASSED", "WRONG_ANSWER", "WRONG_ANSWER"] * 2 + [
        "PASSED"
    ]
    for r in results:
        assert next(iter(r)) == "id"
        assert {"verdict", "tests", "compile", "isolation", "runtime"} <= r.keys()
        assert {"verdict", "time_s", "memory_mb"} <= r["tests"][0].keys()
    assert _stats(proc.stderr) == {
        "total": 7,
        "unique": 4,
        "judged": 4,
        "cached": 0,
        "duplicates": 3,
        "infra_errors": 0,
    }
    assert "judging" in proc.stderr  # progress bar

    again = _cli("batch", str(src), "-o", str(out), "--cache", str(cache))
    assert _stats(again.stderr)["judged"] == 0 and _stats(again.stderr)["cached"] == 4
    assert [json.loads(line)["verdict"] for line in out.read_text().splitlines()] == [
        r["verdict"] for r in results
    ]

    fresh = _cli("batch", str(src), "-o", str(out), "--no-cache", "--no-progress")
    assert _stats(fresh.stderr)["judged"] == 4
    assert "judging" not in fresh.stderr


def test_batch_resumes_after_sigkill(tmp_path: Path) -> None:
    """SIGKILL midway, rerun: only the unfinished jobs are judged, the output is complete."""
    require_runtime(PY)
    n = 20
    rows = [
        {
            "id": f"r{i}",
            "language": PY,
            "source_code": f"import time\ntime.sleep(0.3)\nprint({i} if {i} % 4 else -1)\n",
            "unittests": [{"input": "", "output": [str(i)]}],
        }
        for i in range(n)
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    cache = tmp_path / "cache"

    def entries() -> int:
        return sum(1 for p in cache.rglob("*.json") if not p.name.startswith(".tmp-"))

    cmd = [sys.executable, "-m", "code_eval_taskpack.execution", "batch", str(src), "-o", str(out)]
    cmd += ["--cache", str(cache), "--workers", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while entries() < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the batch finished before it could be interrupted"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(ProcessLookupError):  # no sandbox may linger after the test
            os.killpg(proc.pid, signal.SIGKILL)
    done = entries()
    assert 4 <= done < n
    assert not out.exists()

    rerun = _cli("batch", str(src), "-o", str(out), "--cache", str(cache), "--workers", "2")
    assert rerun.returncode == 0, rerun.stderr
    stats = _stats(rerun.stderr)
    assert stats["cached"] == done
    assert stats["judged"] == n - done
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == [f"r{i}" for i in range(n)]
    expected = ["WRONG_ANSWER" if i % 4 == 0 else "PASSED" for i in range(n)]
    assert [r["verdict"] for r in results] == expected
    assert sum(r["cached"] for r in results) == done
    assert entries() == n


def test_engine_failures_are_reported_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import code_eval_taskpack.execution.judge.engine as engine_mod
    from code_eval_taskpack.execution.backends import get_backend

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("sandbox exploded")

    monkeypatch.setattr(get_backend("local"), "judge", broken)
    monkeypatch.setattr(engine_mod.Runtime, "available", property(lambda self: True))
    src = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    out = tmp_path / "out.jsonl"
    code = cli.main(
        ["batch", str(src), "-o", str(out), "--cache", str(tmp_path / "c"), "--no-progress"]
    )
    assert code == 1
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["verdict"] == "INFRA_ERROR" and "sandbox exploded" in record["detail"]
    assert not list((tmp_path / "c").rglob("*.json"))


# -- doctor -----------------------------------------------------------------------------------


def test_doctor_lists_runtimes_and_isolation_layers() -> None:
    from code_eval_taskpack.execution.isolation import LAYERS
    from code_eval_taskpack.execution.languages.registry import runtimes

    proc = _cli("doctor")
    assert proc.returncode == 0, proc.stderr
    for rt in runtimes():
        assert re.search(rf"^{re.escape(rt.name)}\s+{re.escape(rt.cluster)}\s", proc.stdout, re.M)
    for layer in LAYERS:
        assert re.search(rf"^{layer}\s+(active|INACTIVE)$", proc.stdout, re.M)
    as_json = json.loads(_cli("doctor", "--json").stdout)
    by_name = {r["name"]: r for r in as_json["runtimes"]}
    assert by_name.keys() == {rt.name for rt in runtimes()}
    for row in by_name.values():
        assert row["available"] or row["why_not"]
    assert set(LAYERS) <= as_json["isolation"].keys()
    # every runtime against ExecEval's toolchain, with the version this host has
    versus = {r["runtime"]: r for r in as_json["against_execeval"]}
    assert versus.keys() == by_name.keys()
    for name, row in versus.items():
        assert row["version"] == (
            by_name[name]["version"] if by_name[name]["available"] else "unavailable"
        )
    assert versus["Kotlin 1.4"]["execeval"] == "kotlinc 1.7.20 `-language-version 1.4`, JDK 21"
    assert re.search(
        r"^Kotlin 1\.4\s+\S+\s+kotlinc 1\.7\.20 `-language-version 1\.4`", proc.stdout, re.M
    )


def test_batch_comparator_flag_and_per_line_override(tmp_path: Path) -> None:
    require_runtime(PY)
    nan = {
        "language": PY,
        "source_code": "print('nan')\n",
        "unittests": [{"input": "", "output": ["1.5"]}],
    }
    rows = [{**nan, "id": "flag"}, {**nan, "id": "line", "comparator": "default"}]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    argv = ["batch", str(src), "-o", str(out), "--no-cache", "--no-progress"]
    assert cli.main([*argv, "--comparator", "execeval"]) == 0
    verdicts = [json.loads(line)["verdict"] for line in out.read_text().splitlines()]
    assert verdicts == ["PASSED", "WRONG_ANSWER"]  # ExecEval's NaN flaw only where asked for
    assert cli.main(argv) == 0
    verdicts = [json.loads(line)["verdict"] for line in out.read_text().splitlines()]
    assert verdicts == ["WRONG_ANSWER", "WRONG_ANSWER"]


def test_builtin_progress_bar_without_tqdm(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import io

    from code_eval_taskpack.execution.judge.progress import Progress

    real_import = builtins.__import__

    def no_tqdm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "tqdm":
            raise ImportError("no tqdm here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    stream = io.StringIO()
    bar = Progress(200, desc="judging", stream=stream)
    for done in range(201):
        bar.update(done)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[-1].startswith("judging: 200/200 (100%)")
    assert 2 <= len(lines) <= 21  # one line per 5% in logs, not one per job
    silent = io.StringIO()
    Progress(5, stream=silent, enabled=False).update(5)
    assert silent.getvalue() == ""


def test_batch_empty_input_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["batch", str(empty), "-o", str(out), "--no-cache"]) == 0
    assert out.read_text() == ""
    assert cli.main(["batch", str(tmp_path / "nope.jsonl"), "-o", str(out), "--no-cache"]) == 2
    tests = tmp_path / "t.json"
    tests.write_text(json.dumps(TESTS))
    missing = [
        "run",
        "--language",
        PY,
        "--source",
        str(tmp_path / "nope.py"),
        "--tests",
        str(tests),
    ]
    assert cli.main(missing) == 2


C_BALLOON = (
    "#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n"
    "int main(void){for(int i=0;i<8;i++){char*p=malloc(16<<20);if(!p)return 3;"
    'memset(p,1,16<<20);}puts("ok");return 0;}\n'
)
C_HELLO = '#include <stdio.h>\nint main(void){puts("ok");return 0;}\n'


@pytest.mark.parametrize(
    ("language", "source", "verdict"),
    [
        ("GNU C11", C_BALLOON, "MEMORY_LIMIT_EXCEEDED"),  # 128 MB: passes at the default 256
        ("GNU C11", C_HELLO, "PASSED"),
        (PY, "print('ok')\n", "PASSED"),
    ],
)
def test_run_memory_limit_flag(tmp_path: Path, language: str, source: str, verdict: str) -> None:
    require_runtime(language)
    src = tmp_path / "prog.txt"
    src.write_text(source)
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"input": "", "output": ["ok"]}]))
    proc = _cli(
        "run", "--language", language, "--source", str(src), "--tests", str(tests),
        "--memory-limit", "64", "--time-limit", "5",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if verdict == "MEMORY_LIMIT_EXCEEDED":
        require(out["isolation"]["cgroup"], "no memory cgroup: only RLIMIT_AS limits memory")
    assert out["verdict"] == verdict, out
    assert out["tests"][0]["verdict"] == verdict
    if verdict == "PASSED":
        assert out["tests"][0]["memory_mb"] < 64


def test_run_balloon_passes_without_the_memory_flag(tmp_path: Path) -> None:
    """The control of the test above: the same balloon fits the default 256 MB."""
    require_runtime("GNU C11")
    src = tmp_path / "balloon.c"
    src.write_text(C_BALLOON)
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"input": "", "output": ["ok"]}]))
    proc = _cli("run", "--language", "GNU C11", "--source", str(src), "--tests", str(tests))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "PASSED"
