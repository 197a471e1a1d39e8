"""Adversarial inputs to the engine: huge outputs, bad numbers, hostile JSON, oversized jobs,
runtime chatter on stdout; plus fuzzing of the parsers and of both comparators.

The comparators are checked against simple whole-text reference implementations (below), which
are what the engine did before it compared streams: same verdicts on every valid input.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from code_eval_taskpack.execution import textstream
from code_eval_taskpack.execution.execeval.compare import execeval_tokens_equal
from code_eval_taskpack.execution.run.compare import outputs_match, token_equal, tokenize
from tests.conftest import ROOT, require_runtime

# ----------------------------------------------------------------------------------------------
# reference comparators: whole texts, full token and line lists (the engine's former code)


def ref_default(actual: bytes, expected: Sequence[str]) -> bool:
    text = actual.decode("utf-8", errors="replace")
    if text in expected:
        return True
    got = tokenize(text)
    for exp in expected:
        want = tokenize(exp)
        if len(got) == len(want) and all(token_equal(a, e) for a, e in zip(got, want, strict=True)):
            return True
    return False


def ref_execeval_one(expected: str, actual: str) -> bool:
    actual = actual.strip()
    lines1, lines2 = expected.strip().split("\n"), actual.strip().split("\n")
    if len(lines1) == len(lines2) and all(
        a.strip() == b.strip() for a, b in zip(lines1, lines2, strict=True)
    ):
        return True
    tokens1, tokens2 = expected.split(), actual.split()
    if len(tokens1) != len(tokens2):
        return False
    return all(execeval_tokens_equal(a, b) for a, b in zip(tokens1, tokens2, strict=True))


def ref_execeval(actual: bytes, expected: Sequence[str]) -> bool:
    text = actual.decode("utf-8", errors="ignore")
    return text in expected or any(ref_execeval_one(e, text) for e in expected)


REFERENCE = {"default": ref_default, "execeval": ref_execeval}


@contextlib.contextmanager
def small_chunks(chars: int, nbytes: int, cap: int | None = None) -> Iterator[None]:
    """Tiny chunks so every token, line and multi-byte character crosses chunk boundaries."""
    saved = textstream.CHUNK_CHARS, textstream.CHUNK_BYTES, textstream.TOKEN_CAP
    textstream.CHUNK_CHARS, textstream.CHUNK_BYTES = chars, nbytes
    if cap is not None:
        textstream.TOKEN_CAP = cap
    try:
        yield
    finally:
        textstream.CHUNK_CHARS, textstream.CHUNK_BYTES, textstream.TOKEN_CAP = saved


# fragments that exercise every rule: ASCII and Unicode whitespace, numbers, keywords, line
# breaks, invalid UTF-8, multi-byte characters
_FRAGMENTS = [
    b" ",
    b"  ",
    b"\t",
    b"\n",
    b"\r\n",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\xc2\x85",
    b"\xc2\xa0",
    b"\xe2\x80\xa8",
    b"\xe3\x80\x80",
    b"1",
    b"2",
    b"0",
    b"10",
    b"1.0",
    b"1.0000001",
    b"2e0",
    b"-0",
    b"+1",
    b".5",
    b"0.5",
    b"1e-7",
    b"nan",
    b"inf",
    b"0x10",
    b"16",
    b"yes",
    b"YES",
    b"No",
    b"true",
    b"TRUE",
    b"abc",
    b"\xc3\xa9",
    b"\xff",
    b"\xe2\x82",
    b"_",
    b"1_0",
]
_texts = st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map(b"".join)


def _variant(data: bytes, choice: int) -> str:
    """An expected output related to `data` (so matches are frequent): itself, its tokens on
    other whitespace, its stripped lines, or something else."""
    text = data.decode("utf-8", errors="replace")
    if choice == 0:
        return text
    if choice == 1:
        return " ".join(text.split())
    if choice == 2:
        return "\n".join(line.strip() for line in text.split("\n")) + "\n"
    if choice == 3:
        return "\n".join(tokenize(text))
    return text + " 1"


@pytest.mark.parametrize("mode", ["default", "execeval"])
@given(
    actual=_texts,
    expected=st.lists(st.tuples(_texts, st.integers(0, 5)), min_size=1, max_size=3),
    chars=st.integers(1, 9),
    nbytes=st.integers(1, 9),
)
def test_streaming_comparators_agree_with_the_reference(
    mode: str, actual: bytes, expected: list[tuple[bytes, int]], chars: int, nbytes: int
) -> None:
    exp = [_variant(actual if c < 4 else d, c) for d, c in expected]
    want = REFERENCE[mode](actual, exp)
    with small_chunks(chars, nbytes):
        assert outputs_match(io.BytesIO(actual), exp, mode) is want  # streamed from a file
        assert outputs_match(actual, exp, mode) is want  # in memory
        decoded = actual.decode("utf-8", errors="ignore" if mode == "execeval" else "replace")
        assert outputs_match(decoded, exp, mode) is want


@given(text=st.text(max_size=60), chars=st.integers(1, 7))
def test_line_normaliser_matches_strip_split_join(text: str, chars: int) -> None:
    want = "\n".join(line.strip() for line in text.strip().split("\n"))
    with small_chunks(chars, chars):
        pieces = list(textstream.normalised_line_pieces(textstream.str_chunks(text)()))
    assert all(isinstance(p, str) for p in pieces)
    assert "".join(p for p in pieces if isinstance(p, str)) == want


@given(text=st.text(max_size=60), chars=st.integers(1, 7))
def test_token_batches_match_split(text: str, chars: int) -> None:
    with small_chunks(chars, chars):
        batches = textstream.token_batches(textstream.str_chunks(text)(), str.split, str.isspace)
        assert [t for b in batches for t in b] == text.split()


@given(
    text=st.lists(st.sampled_from(["a", "b", " ", "\n", "\t", "é"]), max_size=80).map("".join),
    chars=st.integers(1, 5),
)
def test_giant_tokens_and_gaps_become_digests_equal_only_to_the_same_text(
    text: str, chars: int
) -> None:
    """With a tiny cap, long tokens and inner gaps are hashed: the verdict on identical text is
    unchanged and a changed long token never matches."""
    with small_chunks(chars, chars, cap=4):
        for mode in ("default", "execeval"):
            assert outputs_match(text.encode(), [text], mode)
        long = "x" * 9
        assert outputs_match(f"{long} 1".encode(), [f"{long} 1"], "default")
        assert not outputs_match(f"{long}y 1".encode(), [f"{long} 1"], "default")
        assert not outputs_match(b"1.000000000", ["1"], "default")  # documented: no number rule


def test_first_mismatch_stops_reading() -> None:
    """A mismatch in the first token reads one chunk of a 64 MiB capture, not all of it."""

    class CountingReader(io.BytesIO):
        read_bytes = 0

        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            self.read_bytes += len(data)
            return data

    for mode in ("default", "execeval"):
        capture = CountingReader(b"1d " * (64 * 1024 * 1024 // 3))
        assert not outputs_match(capture, ["2"], mode)
        limit = 8 * textstream.CHUNK_BYTES  # execeval reads twice: lines, then tokens
        assert capture.read_bytes <= limit, (mode, capture.read_bytes)


# ----------------------------------------------------------------------------------------------
# the engine's own memory while judging a program that prints 64 MiB of short tokens


def engine_peak_rss_mb(workers: int, cache: Path) -> dict[str, Any]:
    """The measurement `make bench` prints (bench/engine_bench.py, section 7)."""
    spec = importlib.util.spec_from_file_location(
        "engine_bench", ROOT / "bench" / "engine_bench.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return dict(bench.engine_peak_rss_mb(workers, cache))


def test_engine_memory_stays_bounded_on_64_mib_of_short_tokens(tmp_path: Path) -> None:
    require_runtime("GNU C11")
    figures = engine_peak_rss_mb(1, tmp_path)
    # both tests are wrong answers, decided by streaming the 64 MiB capture (the second one
    # only after 16 matching tokens); before, the comparator's token list took ~1.7 GB
    assert figures["verdicts"] == [["WRONG_ANSWER", "WRONG_ANSWER"]] * 2, figures["details"]
    assert figures["maxrss_mb"] < 150, figures


def test_whole_reads_of_huge_outputs_stay_in_bounded_memory() -> None:
    """When the comparison must read everything (a match, blank runs), it still holds only a
    few chunks: 8 MiB of blanks before the one token, 16 M blank lines between two tokens
    (counted, never written out), a 16 MiB line compared with itself."""
    import tracemalloc

    blank_lines = b"a" + b"\n" * (16 * 1024 * 1024) + b"b\n"
    one_line = b"x " * (8 * 1024 * 1024)
    cases = [
        (b" \n" * (4 * 1024 * 1024) + b"x\n", "x", True),
        (blank_lines, "a\n\nb", True),  # ExecEval: lines differ, tokens agree
        (blank_lines, blank_lines.decode(), True),
        (blank_lines, "a\n\nc", False),
        (one_line, one_line.decode(), True),
    ]
    for data, expected, want in cases:
        for mode in ("default", "execeval"):
            capture = io.BytesIO(data)
            tracemalloc.start()
            try:
                assert outputs_match(capture, [expected], mode) is want, (mode, expected[:9])
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert peak < 8 * 1024 * 1024, (mode, expected[:9], peak)


# ----------------------------------------------------------------------------------------------
# bad numbers and bad JSON: usage errors naming file, line and field (batch CLI, API, HTTP)

GOOD_LINE: dict[str, Any] = {
    "id": "j",
    "language": "Python 3",
    "source_code": "print(input())\n",
    "unittests": [{"input": "1\n", "output": ["1"]}],
}

BAD_NUMBERS: list[tuple[str, Any]] = [
    ("memory_limit_mb", 1e300),
    ("memory_limit_mb", 100_000),
    ("memory_limit_mb", 16 * 1024 + 1),
    ("memory_limit_mb", float("nan")),
    ("memory_limit_mb", float("inf")),
    ("memory_limit_mb", -5),
    ("memory_limit_mb", 0),
    ("memory_limit_mb", True),
    ("memory_limit_mb", "256"),
    ("time_limit_s", 1e300),
    ("time_limit_s", float("nan")),
    ("time_limit_s", float("-inf")),
    ("time_limit_s", -1),
    ("time_limit_s", 0),
    ("time_limit_s", False),
    ("time_limit_s", "2"),
    ("time_limit_s", 10**400),
]


def _cli(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CODE_EVAL_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _batch_line_error(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    proc = _cli("batch", str(src), "-o", str(out), "--no-cache", "--no-progress", cache=tmp_path)
    assert not out.exists()
    return proc


def test_bad_numbers_in_a_batch_exit_2_naming_file_line_and_field(tmp_path: Path) -> None:
    """Every bad number, one run: each line is checked by the parser the batch uses, and the
    CLI stops with exit code 2 at the first one (a separate run per value would be slow)."""
    from code_eval_taskpack.execution.errors import DataError
    from code_eval_taskpack.execution.judge.jobfile import job_from_record

    for field, value in BAD_NUMBERS:
        with pytest.raises(DataError) as info:
            job_from_record({**GOOD_LINE, field: value}, "in.jsonl", 7)
        assert info.value.field == field and info.value.row == 7, (field, value)
        assert f"in.jsonl, row 7, field {field!r}" in str(info.value)
    # json.dumps writes NaN / Infinity / 1e+300 literals, which json.loads reads back
    lines = [json.dumps(GOOD_LINE), json.dumps({**GOOD_LINE, "memory_limit_mb": 1e300})]
    proc = _batch_line_error(tmp_path, lines)
    assert proc.returncode == 2, proc.stderr
    assert "row 2, field 'memory_limit_mb'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_deeply_nested_json_line_is_a_clean_usage_error(tmp_path: Path) -> None:
    deep = '{"id": "x", "language": ' + "[" * 100_000 + "]" * 100_000 + "}"
    proc = _batch_line_error(tmp_path, [json.dumps(GOOD_LINE), deep])
    assert proc.returncode == 2, proc.stderr
    assert "row 2" in proc.stderr and "nested too deeply" in proc.stderr
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    huge_int = '{"id": ' + "9" * 5000 + "}"
    proc = _batch_line_error(tmp_path, [huge_int])
    assert proc.returncode == 2 and "row 1" in proc.stderr and "Traceback" not in proc.stderr


def test_deeply_nested_tests_file_and_bad_run_flags_exit_2(tmp_path: Path) -> None:
    source = tmp_path / "main.py"
    source.write_text("print(input())\n")
    tests = tmp_path / "tests.json"
    tests.write_text("[" * 100_000 + "]" * 100_000)
    proc = _cli(
        "run", "--language", "Python 3", "--source", str(source), "--tests", str(tests),
        cache=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2 and str(tests) in proc.stderr and "nested too deeply" in proc.stderr
    tests.write_text(json.dumps(GOOD_LINE["unittests"]))
    for flag, value in [("--memory-limit", "100000"), ("--time-limit", "1e300")]:
        proc = _cli(
            "run", "--language", "Python 3", "--source", str(source), "--tests", str(tests),
            flag, value, cache=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 2 and flag in proc.stderr, proc.stderr


def test_api_rejects_bad_numbers_before_running() -> None:
    from code_eval_taskpack.execution.inputs import InvalidJob
    from code_eval_taskpack.execution.judge.engine import Engine
    from code_eval_taskpack.execution.types import Job, TestCase

    engine = Engine(workers=1)
    tests = (TestCase("1\n", ("1",)),)
    for field, value in [*BAD_NUMBERS, ("memory_limit_mb", 256.5)]:
        job = Job(language="Python 3", source_code="print(1)\n", tests=tests, **{field: value})
        with pytest.raises(InvalidJob) as info:
            engine.judge(job)
        assert info.value.field == field
        with pytest.raises(ValueError):
            engine.judge_many([job])
    assert engine.judged == 0


def test_stack_limit_follows_the_bounded_memory_limit() -> None:
    from code_eval_taskpack.execution.inputs import MAX_MEMORY_MB
    from code_eval_taskpack.execution.limits import MB, run_limits

    assert run_limits(2.0, MAX_MEMORY_MB, 1.0).stack_bytes == 16 * 1024 * MB


# ----------------------------------------------------------------------------------------------
# oversized inputs are refused before the sandbox


def test_source_over_the_limit_is_a_compilation_error_naming_it() -> None:
    from code_eval_taskpack.execution.inputs import InputLimits
    from code_eval_taskpack.execution.judge.engine import Engine
    from code_eval_taskpack.execution.types import Job, TestCase, Verdict

    require_runtime("Python 3")
    big = "# " + "x" * (64 * 1024 * 1024) + "\nprint(1)\n"  # just over 64 MiB
    result = Engine(workers=1).judge(
        Job(language="Python 3", source_code=big, tests=(TestCase("", ("1",)),))
    )
    assert result.verdict is Verdict.COMPILATION_ERROR
    assert "over the limit of 67108864 bytes" in result.detail and "source_bytes" in result.detail
    assert result.tests == []  # nothing ran
    del big
    small = Engine(workers=1, input_limits=InputLimits(source_bytes=100))
    src = "print(1)  # " + "é" * 50 + "\n"  # 112 bytes of UTF-8, 62 characters
    tests = (TestCase("", ("1",)),)
    assert small.judge(Job(language="Python 3", source_code=src, tests=tests)).verdict is (
        Verdict.COMPILATION_ERROR
    )


def test_tests_over_their_limits_are_the_callers_error() -> None:
    from code_eval_taskpack.execution.errors import DataError
    from code_eval_taskpack.execution.inputs import InputLimits, InvalidJob
    from code_eval_taskpack.execution.judge.engine import Engine
    from code_eval_taskpack.execution.judge.jobfile import job_from_record, parse_tests
    from code_eval_taskpack.execution.types import Job, TestCase

    many = [{"input": "", "output": ["1"]}] * 10_001
    with pytest.raises(DataError, match="10001 tests, over the limit of 10000"):
        job_from_record({**GOOD_LINE, "unittests": many}, "in.jsonl", 3)
    parse_tests(many[:10_000], "in.jsonl")  # the limit itself is fine
    limits = InputLimits(tests_bytes=1000)
    tests = [{"input": "1" * 400, "output": ["2" * 300, "3" * 301]}]
    with pytest.raises(DataError, match=r"1001 bytes.*over the limit of 1000"):
        parse_tests(tests, "in.jsonl", 4, limits=limits)
    engine = Engine(workers=1, input_limits=limits)
    job = Job(
        language="Python 3",
        source_code="print(1)\n",
        tests=(TestCase("1" * 400, ("2" * 300, "3" * 301)),),
    )
    with pytest.raises(InvalidJob, match="over the limit"):
        engine.judge(job)
    assert engine.judged == 0


def test_a_100_mb_expected_output_is_within_the_default_limits() -> None:
    """1 GiB of tests by default: a 100 MB expected output is accepted, parsed once, and its
    cache key is computed without serialising it (no copy several times its size)."""
    import tracemalloc

    from code_eval_taskpack.execution.caches.results import job_key
    from code_eval_taskpack.execution.judge.jobfile import parse_tests

    expected = "7 " * (50 * 1000 * 1000)
    tests = parse_tests([{"input": "", "output": [expected]}], "in.jsonl")
    from code_eval_taskpack.execution.types import Job

    job = Job(language="Python 3", source_code="", tests=tests)
    tracemalloc.start()
    try:
        key = job_key(job, "fp")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(key) == 64
    assert peak < 16 * 1024 * 1024, peak  # pieces of 1 MiB, not 100 MB copies
    tracemalloc.start()
    try:
        assert outputs_match(io.BytesIO(expected.encode()), [expected], "default")
        assert outputs_match(io.BytesIO(expected.encode()), [expected], "execeval")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * 1024 * 1024 + 16 * 1024 * 1024, peak  # the encoded capture + chunks


# ----------------------------------------------------------------------------------------------
# the HTTP server validates with the same parser


def test_server_answers_400_naming_the_field(tmp_path: Path) -> None:
    import http.client
    import threading

    from code_eval_taskpack.execution.server.http import make_server

    srv = make_server("127.0.0.1", 0, workers=1)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    body = {k: v for k, v in GOOD_LINE.items() if k != "id"}

    def post(raw: bytes) -> tuple[int, dict[str, Any]]:
        host, port = srv.server_address[:2]
        conn = http.client.HTTPConnection(str(host), port, timeout=60)
        try:
            conn.request("POST", "/api/execute_code", body=raw)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()

    try:
        cases: list[tuple[dict[str, Any], str]] = [
            ({**body, "memory_limit_mb": 1e300}, "memory_limit_mb"),
            ({**body, "memory_limit_mb": 100_000}, "memory_limit_mb"),
            ({**body, "limits": {"memory_mb": float("nan")}}, "limits.memory_mb"),
            ({**body, "limits": {"cpu": 1e300}}, "limits.cpu"),
            ({**body, "time_limit_s": True}, "time_limit_s"),
            ({**body, "unittests": [{"input": "", "output": ["1"]}] * 10_001}, "unittests"),
        ]
        for request, field in cases:
            status, answer = post(json.dumps(request).encode())
            assert status == 400, (request.get("limits"), answer)
            assert f"field {field!r}" in answer["error"], answer
        status, answer = post(b'{"language": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        assert status == 400 and "nested too deeply" in answer["error"]
        status, answer = post(b'{"language": ' + b"9" * 5000 + b"}")
        assert status == 400 and "invalid JSON" in answer["error"]
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


# ----------------------------------------------------------------------------------------------
# runtimes' own messages go to stderr, never into the judged stdout

# Under the pids limit (128) the JVM cannot start 400 threads: it logs "Failed to start thread"
# warnings (unified logging writes to stdout by default) and the program still answers 42.
THREAD_STORM_JAVA = textwrap.dedent(
    """
    public class Main {
        public static void main(String[] args) {
            int started = 0;
            try {
                for (int i = 0; i < 400; i++) {
                    Thread t = new Thread(() -> {
                        try { Thread.sleep(60000); } catch (InterruptedException e) { }
                    });
                    t.setDaemon(true);
                    t.start();
                    started++;
                }
            } catch (Throwable e) { }
            System.out.println(started > 0 ? "42" : "0");
            System.exit(0);
        }
    }
    """
)
THREAD_STORM_KOTLIN = textwrap.dedent(
    """
    fun main() {
        var started = 0
        try {
            for (i in 0 until 400) {
                val t = Thread { try { Thread.sleep(60000) } catch (e: InterruptedException) { } }
                t.isDaemon = true
                t.start()
                started++
            }
        } catch (e: Throwable) { }
        println(if (started > 0) "42" else "0")
        System.exit(0)
    }
    """
)
# Programs that make the runtime itself print a warning or diagnostic, then answer 42.
RUNTIME_CHATTER = {
    "Java 17": (THREAD_STORM_JAVA, "Failed to start"),
    "Kotlin": (THREAD_STORM_KOTLIN, "Failed to start"),
    "Node.js": ("process.emitWarning('runtime chatter');\nconsole.log(42);\n", "runtime chatter"),
    "PHP": ('<?php\necho $undefined_variable;\necho "42\\n";\n', "undefined_variable"),
    "Ruby 3": ("A = 1\nA = 2\nputs 42\n", "already initialized constant"),
    "Go": (
        'package main\nimport "fmt"\nfunc main() { println("runtime chatter"); fmt.Println(42) }\n',
        "runtime chatter",
    ),
}


@pytest.mark.parametrize("language", sorted(RUNTIME_CHATTER))
def test_runtime_messages_never_reach_the_judged_stdout(language: str) -> None:
    from code_eval_taskpack.execution.judge.engine import Engine
    from code_eval_taskpack.execution.types import Job, TestCase, Verdict

    require_runtime(language)
    source, marker = RUNTIME_CHATTER[language]
    result = Engine(workers=1).judge(
        Job(language=language, source_code=source, tests=(TestCase("", ("42",)),), time_limit_s=5)
    )
    assert result.verdict is Verdict.PASSED, (result.detail, result.tests)
    assert result.tests[0].stdout.strip() == "42"
    assert marker in result.tests[0].stderr  # the message was printed, on stderr


# ----------------------------------------------------------------------------------------------
# fuzzing the job parser and the test-file parser: a result or a DataError, nothing else

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)
_job_fields = st.fixed_dictionaries(
    {},
    optional={
        "id": _json_values,
        "language": st.sampled_from(["Python 3", "GNU C11", "no such", ""]) | _json_values,
        "source_code": st.text(max_size=20) | _json_values,
        "unittests": st.lists(
            st.fixed_dictionaries(
                {}, optional={"input": st.text(max_size=5) | _json_values, "output": _json_values}
            ),
            max_size=3,
        )
        | _json_values,
        "time_limit_s": _json_values,
        "memory_limit_mb": _json_values,
        "stop_on_first_fail": _json_values,
        "comparator": st.sampled_from(["default", "execeval", "x"]) | _json_values,
    },
)


@settings(max_examples=100)  # each example resolves a language: keep CI time small
@given(record=_job_fields | _json_values)
def test_job_parser_fuzz(record: Any) -> None:
    from code_eval_taskpack.execution.errors import DataError
    from code_eval_taskpack.execution.inputs import validate_job
    from code_eval_taskpack.execution.judge.jobfile import job_from_record

    try:
        job = job_from_record(record, "fuzz.jsonl", 1)
    except DataError as exc:
        assert exc.path == "fuzz.jsonl" and exc.row == 1
        return
    validate_job(job)  # whatever the parser accepts, the engine accepts


@settings(max_examples=100)
@given(data=st.binary(max_size=200) | _json_values.map(lambda v: json.dumps(v).encode()))
def test_tests_file_and_jsonl_parsers_fuzz(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    from code_eval_taskpack.execution.errors import DataError
    from code_eval_taskpack.execution.judge.jobfile import read_tests_file
    from code_eval_taskpack.execution.judge.jsonl import iter_jsonl

    path = tmp_path_factory.getbasetemp() / "fuzz.json"
    path.write_bytes(data)
    try:
        tests = read_tests_file(path)
        assert tests and all(isinstance(o, str) for t in tests for o in t.output)
    except DataError as exc:
        assert exc.path == str(path)
    try:
        for lineno, row in iter_jsonl(path):
            assert isinstance(row, dict) and lineno >= 1
    except DataError as exc:
        assert exc.path == str(path)
