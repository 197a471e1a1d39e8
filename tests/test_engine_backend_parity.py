"""One verdict table and a few hostile programs, judged by every backend of
`tests/backend_params.py`: each verdict must equal the local backend's (same toolchains here)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict, resolve
from code_eval_taskpack.execution.backends import Backend
from tests.backend_params import BACKENDS
from tests.conftest import require_runtime
from tests.engine_programs import COMPILE_ERROR, LUCKY, LUCKY_EXTRA_TESTS, wrong

LUCKY_TESTS = tuple(TestCase(i, (o,)) for i, o in [("2\n", "6"), *LUCKY_EXTRA_TESTS])


def self_harm(step: str) -> str:
    """The C program of LUCKY that first does `step` to its own files: it passes its first test,
    and what it did is its own at the second (RUNTIME_ERROR, never left out as INFRA_ERROR)."""
    body = LUCKY["C"].split("int main(void) {", 1)[1]
    return (
        "#include <stdio.h>\n#include <unistd.h>\n#include <sys/stat.h>\n"
        f"int main(int argc, char **argv) {{ (void)argc; {step}{body}"
    )


# (id, language, source, time limit s, memory MB, the verdict the local backend must give)
TABLE: list[tuple[str, str, str, float, int, Verdict]] = [
    ("c-ok", "C", LUCKY["C"], 1.0, 64, Verdict.PASSED),
    ("c-wrong", "C", wrong("C"), 1.0, 64, Verdict.WRONG_ANSWER),
    ("c-compile", "C", COMPILE_ERROR["C"], 1.0, 64, Verdict.COMPILATION_ERROR),
    ("c-segv", "C", "int main(void) { int *p = 0; return *p; }\n", 1.0, 64, Verdict.RUNTIME_ERROR),
    # a program that makes its own binary, or its work dir, unrunnable for the next test
    ("c-chmod-self", "C", self_harm("chmod(argv[0], 0644);"), 1.0, 64, Verdict.RUNTIME_ERROR),
    ("c-delete-self", "C", self_harm("unlink(argv[0]);"), 1.0, 64, Verdict.RUNTIME_ERROR),
    (
        "c-folder-self",
        "C",
        self_harm("unlink(argv[0]); mkdir(argv[0], 0755);"),
        1.0,
        64,
        Verdict.RUNTIME_ERROR,
    ),
    ("c-lock-workdir", "C", self_harm('chmod(".", 0);'), 1.0, 64, Verdict.RUNTIME_ERROR),
    ("py-ok", "Python 3", LUCKY["Python"], 1.0, 64, Verdict.PASSED),
    (  # its script gone from the second test on (the warm start's too)
        "py-delete-self",
        "Python 3",
        "import os\nos.unlink(__file__)\n" + LUCKY["Python"],
        1.0,
        64,
        Verdict.RUNTIME_ERROR,
    ),
    ("py-wrong", "Python 3", wrong("Python"), 1.0, 64, Verdict.WRONG_ANSWER),
    ("py-exit", "Python 3", "raise SystemExit(3)\n", 1.0, 64, Verdict.RUNTIME_ERROR),
    ("py-spin", "Python 3", "while True:\n    pass\n", 0.2, 64, Verdict.TIME_LIMIT_EXCEEDED),
    # hostile: memory, output flood, sleeping forever, network, files outside the work dir
    ("py-memory", "Python 3", "x = bytearray(512 << 20)\n", 1.0, 64, Verdict.MEMORY_LIMIT_EXCEEDED),
    (
        "py-flood",
        "Python 3",
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
        2.0,
        64,
        Verdict.OUTPUT_LIMIT_EXCEEDED,
    ),
    ("py-sleep", "Python 3", "import time\ntime.sleep(60)\n", 0.2, 64, Verdict.TIME_LIMIT_EXCEEDED),
    (
        "py-network",
        "Python 3",
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)\nprint(6)\n",
        1.0,
        64,
        Verdict.RUNTIME_ERROR,
    ),
    (
        "py-files",
        "Python 3",
        "import os\nprint(len(os.listdir('/home')) + len(os.listdir('/tmp')) + 6)\n",
        1.0,
        64,
        Verdict.RUNTIME_ERROR,  # /home is not in the sandbox's view
    ),
]


def _jobs() -> list[Job]:
    return [
        Job(lang, src, LUCKY_TESTS, time_limit_s=t, memory_limit_mb=m, id=jid)
        for jid, lang, src, t, m, _ in TABLE
    ]


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with BACKENDS[request.param]() as b:
        yield b


@pytest.fixture(scope="module")
def local_results() -> dict[str, Verdict]:
    require_runtime("C")
    results = Engine(backend="local").judge_many(_jobs())
    return {r.id: r.verdict for r in results}


def test_the_table_is_what_the_local_backend_says(local_results: dict[str, Verdict]) -> None:
    assert local_results == {jid: v for jid, *_, v in TABLE}


def _covered(backend: Backend) -> list[Job]:
    """The table's jobs in the languages `backend` holds (all, unless it says otherwise)."""
    clusters = getattr(backend, "clusters", lambda: None)()
    jobs = _jobs()
    if clusters is None:
        return jobs
    return [j for j in jobs if resolve(j.language).cluster in clusters]


def test_every_backend_gives_the_local_verdicts(
    backend: Backend, local_results: dict[str, Verdict]
) -> None:
    jobs = _covered(backend)
    left_out = sorted({j.id for j in _jobs()} - {j.id for j in jobs})
    if left_out:  # reported, never silent (CI's image holds every language of the table)
        warnings.warn(f"{backend.name}: rows not in its languages: {left_out}", stacklevel=1)
    assert jobs, f"{backend.name} holds none of the table's languages"
    results = Engine(backend=backend).judge_many(jobs)
    assert [r.id for r in results] == [j.id for j in jobs]
    assert {r.id: r.verdict for r in results} == {j.id: local_results[j.id] for j in jobs}
    for r in results:
        assert r.isolation["backend"] == backend.name
