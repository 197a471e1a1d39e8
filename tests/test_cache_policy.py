"""Caches never change a verdict: a result or a compile judged under a weaker isolation serves no
stronger request, and a relative cache directory judges as an absolute one does."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution import sandbox as sandbox_mod
from code_eval_taskpack.execution.cache import ResultCache, cache_root
from code_eval_taskpack.execution.sandbox import HostIsolation, host_isolation
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
        sandbox_mod, "_host", HostIsolation(False, True, "unshare: Operation not permitted (test)")
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
    monkeypatch.setattr(sandbox_mod, "_host", full)
    strict = Engine(cache=tmp_path / "c", workers=1)
    got = strict.judge(job)
    assert not got.cached and got.verdict is Verdict.RUNTIME_ERROR, got.detail
    assert got.isolation.get("pid_namespace") and got.isolation.get("fs_view")
    # a result stored under the `required` key by an older version that keyed both policies
    # alike: its snapshot lacks promised layers, so it is no hit either (judged, replaced)
    key = strict.key(job, strict.backend.resolve(job.language))
    assert strict.cache is not None
    strict.cache.put_key(key, weak)
    again = strict.judge_many([job])[0]
    assert not again.cached and again.verdict is Verdict.RUNTIME_ERROR, again.detail
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
    monkeypatch.setattr(sandbox_mod, "_host", full)
    other = Job("GNU C11", source, (TestCase("1\n", (SECRET,)),))
    got = Engine(cache=tmp_path / "c", workers=1).judge(other)
    assert got.verdict is Verdict.COMPILATION_ERROR, (got.detail, got.compile)
    assert got.compile is not None and not got.compile.cached


def test_cache_root_is_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODE_EVAL_CACHE", "rel")
    assert cache_root() == tmp_path / "rel"
    assert ResultCache("rel/exec").root == tmp_path / "rel" / "exec"
