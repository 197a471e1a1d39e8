"""Caches never change a verdict: a result or a compile judged under a weaker isolation serves no
stronger request, and a relative cache directory judges as an absolute one does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.caches.files import cache_root
from code_eval_taskpack.execution.caches.results import ResultCache
from code_eval_taskpack.execution.sandbox import host_probe
from code_eval_taskpack.execution.sandbox.host_probe import HostIsolation, host_isolation
from code_eval_taskpack.execution.speedups import pch
from code_eval_taskpack.execution.types import Verdict
from tests.conftest import require, require_runtime

SECRET = "host-secret-4f1c"


@pytest.fixture
def host_secret() -> Iterator[Path]:
    """A host file every uid may read, outside anything a sandbox mounts."""
    folder = Path(tempfile.mkdtemp(prefix="policy-secret-", dir="/var/tmp"))
    os.chmod(folder, 0o755)
    secret = folder / "secret.txt"
    secret.write_text(SECRET)
    os.chmod(secret, 0o644)
    yield secret
    shutil.rmtree(folder, ignore_errors=True)


def _full_sandbox() -> HostIsolation:
    host = host_isolation()
    require(host.namespaces and host.seccomp, f"no full sandbox here: {host.detail}")
    return host


def _weak_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the start-up probe finds on a host without namespaces: best-effort runs plainly."""
    monkeypatch.setattr(
        host_probe, "_host", HostIsolation(False, True, "unshare: Operation not permitted (test)")
    )


def test_a_best_effort_result_never_answers_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host_secret: Path
) -> None:
    """A program that reads a host file PASSES best-effort on a host without namespaces; the same
    job under `required` with the same cache is judged again, in namespaces, and fails."""
    require_runtime("Python 3")
    full = _full_sandbox()
    job = Job("Python 3", f"print(open({str(host_secret)!r}).read())\n", (TestCase("", (SECRET,)),))
    _weak_host(monkeypatch)
    weak = Engine(cache=tmp_path / "c", isolation="best-effort", workers=1).judge(job)
    assert weak.verdict is Verdict.PASSED, weak.detail
    assert not weak.isolation.get("pid_namespace")
    monkeypatch.setattr(host_probe, "_host", full)
    strict = Engine(cache=tmp_path / "c", workers=1)
    got = strict.judge(job)
    assert not got.cached and got.verdict is Verdict.RUNTIME_ERROR, got.detail
    assert got.isolation.get("pid_namespace") and got.isolation.get("fs_view")
    # a result stored under the `required` key by an older version that keyed both policies
    # alike: its snapshot lacks promised layers, so it is no hit either (judged, replaced)
    key = strict.key(job, strict.backend.resolve(job.language))
    assert strict.cache is not None
    strict.cache.put_key(key, weak)
    hits = strict.cache.stats.hits
    again = strict.judge_many([job])[0]
    assert not again.cached and again.verdict is Verdict.RUNTIME_ERROR, again.detail
    assert strict.cache.stats.hits == hits  # a refused entry counts as a miss
    stored = ResultCache(tmp_path / "c").get_key(key)
    assert stored is not None and stored.verdict is Verdict.RUNTIME_ERROR
    # the stronger result stays apart from best-effort requests (their own key)
    best = Engine(cache=tmp_path / "c", isolation="best-effort", workers=1).judge(job)
    assert best.cached and best.verdict is Verdict.PASSED


INCBIN = (
    "#include <stdio.h>\n"
    '__asm__(".section .rodata\\n.global blob\\nblob:\\n.incbin \\"{path}\\"\\n.byte 0\\n'
    '.text\\n");\n'
    "extern const char blob[];\n"
    "int main(void) {{ puts(blob); return 0; }}\n"
)


def test_a_best_effort_compile_never_serves_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host_secret: Path
) -> None:
    """A C program that assembles a host file into itself compiles best-effort without
    namespaces; a `required` run of the same source (other tests, so no result-cache hit) does
    not get that binary from the compile cache: it compiles in namespaces, where the file is not."""
    require_runtime("GNU C11")
    full = _full_sandbox()
    source = INCBIN.format(path=host_secret)
    _weak_host(monkeypatch)
    job = Job("GNU C11", source, (TestCase("", (SECRET,)),))
    weak = Engine(cache=tmp_path / "c", isolation="best-effort", workers=1).judge(job)
    assert weak.verdict is Verdict.PASSED, (weak.detail, weak.compile)
    monkeypatch.setattr(host_probe, "_host", full)
    other = Job("GNU C11", source, (TestCase("1\n", (SECRET,)),))
    got = Engine(cache=tmp_path / "c", workers=1).judge(other)
    assert got.verdict is Verdict.COMPILATION_ERROR, (got.detail, got.compile)
    assert got.compile is not None and not got.compile.cached


def test_cache_root_is_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Resolved once, where it is read: a later chdir of the process does not move it."""
    monkeypatch.chdir(tmp_path)
    name = f"rel-{tmp_path.name}"
    monkeypatch.setenv("CODE_EVAL_CACHE", name)
    assert cache_root() == tmp_path / name
    assert ResultCache(f"{name}/exec").root == tmp_path / name / "exec"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert cache_root() == tmp_path / name


# -- relative cache paths and files of ours --------------------------------------------------

CPP_HEAD = "#include <iostream>\n#include <vector>\n"


def _cpp_jobs(n: int) -> list[dict[str, object]]:
    """`n` C++ programs sharing their include list (enough for a precompiled header)."""
    return [
        {
            "id": f"p{i}",
            "language": "GNU C++17",
            "source_code": CPP_HEAD
            + f"int main() {{ std::vector<int> v{{{i}}}; std::cout << v[0] + {i} << '\\n'; }}\n",
            "unittests": [{"input": "", "output": [str(2 * i)]}],
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_relative_cache_judges_as_an_absolute_one(tmp_path: Path, how: str) -> None:
    """`--cache DIR` or `CODE_EVAL_CACHE=DIR` relative to the caller's directory: the
    precompiled header's path reaches the compiler as given, and a cwd-relative path there made
    every C++ program that used it a COMPILATION_ERROR (cached)."""
    require_runtime("GNU C++17")
    _full_sandbox()
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(j) + "\n" for j in _cpp_jobs(6)))
    env = {**os.environ, "CODE_EVAL_CACHE": str(tmp_path / "root")}
    args = ["batch", str(jobs), "-o", str(tmp_path / "out.jsonl"), "--no-progress"]
    if how == "flag":
        args += ["--cache", "rel"]
    else:
        env["CODE_EVAL_CACHE"] = "rel"
    proc = subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in rows] == ["PASSED"] * 6, [r["detail"] for r in rows]
    used = [r for r in rows if any("pch" in a for a in r["runtime"]["compile_argv"])]
    assert used, "no program used a precompiled header: the attack did not run"
    assert all(Path(r["runtime"]["compile_argv"][r["runtime"]["compile_argv"].index("-include") + 1]).is_absolute() for r in used)  # fmt: skip


class _Cleaner:
    """Removes the precompiled headers (as a concurrent cache clean-up does) at one moment:
    `before` right after the header is chosen, `during` as the compile command starts."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def clean(self) -> None:
        shutil.rmtree(self.root / "compiled" / "pch", ignore_errors=True)


@pytest.mark.parametrize("when", ["before", "during"])
def test_a_compile_without_our_header_is_ours(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, when: str
) -> None:
    """A compile that fails because a header of ours vanished is an INFRA_ERROR, never the
    program's COMPILATION_ERROR, and nothing of it is cached: the same job judges PASSED next."""
    require_runtime("GNU C++17")
    _full_sandbox()
    monkeypatch.setattr(pch, "BUILD_AFTER", 1)
    cleaner = _Cleaner(tmp_path / "c")
    real_for_source = pch.for_source

    def for_source(*args: Any, **kwargs: Any) -> Any:
        got = real_for_source(*args, **kwargs)
        if when == "before":
            cleaner.clean()
        return got

    real_open = LocalBackend.open_session

    def open_session(self: LocalBackend, *args: Any, **kwargs: Any) -> Any:
        session = real_open(self, *args, **kwargs)
        real_run = session.run

        def run(argv: Any, **kw: Any) -> Any:
            if when == "during" and kw.get("purpose") == "compile" and "-include" in argv:
                cleaner.clean()
            return real_run(argv, **kw)

        session.run = run  # type: ignore[method-assign]
        return session

    monkeypatch.setattr(pch, "for_source", for_source)
    monkeypatch.setattr(LocalBackend, "open_session", open_session)
    raw = _cpp_jobs(1)[0]
    job = Job("GNU C++17", str(raw["source_code"]), (TestCase("", ("0",)),))
    got = Engine(cache=tmp_path / "c", workers=1).judge(job)
    assert got.verdict is Verdict.INFRA_ERROR, (got.detail, got.compile)
    assert "engine files unusable" in got.detail
    monkeypatch.undo()
    again = Engine(cache=tmp_path / "c", workers=1).judge(job)
    assert again.verdict is Verdict.PASSED and not again.cached, again.detail
    assert again.compile is not None and not again.compile.cached
