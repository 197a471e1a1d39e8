"""The container backend through podman, for real: rootful podman judges the reference programs
of two clusters as the local backend does, with every limit in effect (memory hog, fork bomb,
network, read-only root, the container's own ceiling); rootless podman runs as a non-root user
(`make podman-user`, `PODMAN_USER`), and where it cannot enforce the memory and pids ceilings
(cgroup v1, or controllers not delegated) every job is refused under "required", never judged
with fewer protections; under "best-effort" the same user judges the same programs with the
local backend's verdicts, every per-test limit enforced by the sandbox inside, and every result
naming the two ceilings as missing. Without podman or the image loaded into its storage (`make
podman-image`) the tests skip, or fail under REQUIRE_TOOLCHAINS=1."""

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

from code_eval_taskpack.execution import Engine
from code_eval_taskpack.execution.backends.container.backend import (
    CEILING_LAYERS,
    ContainerBackend,
    podman_refusal,
)
from code_eval_taskpack.execution.isolation import CONTAINER_LAYERS, REQUIRED_LAYERS, SandboxError
from code_eval_taskpack.execution.limits import Limits
from tests import podman_battery
from tests.conftest import require
from tests.test_engine_container import (
    assert_unsampled_memory_ends_its_program_only,
    assert_work_dir_files_are_the_programs_memory,
)

ROOT = Path(__file__).resolve().parent.parent
USER = os.environ.get("PODMAN_USER", "code-eval-rootless")


def _podman() -> str:
    path = shutil.which("podman")
    require(path is not None, "podman is not installed (make podman-tools)")
    assert path is not None
    return path


def _usable(backend: ContainerBackend) -> None:
    try:
        backend.image_id()
    except (SandboxError, OSError, subprocess.SubprocessError) as exc:
        require(False, f"judge image not in podman's storage (make podman-image): {exc}")


@pytest.fixture(scope="module")
def rootful() -> Iterator[ContainerBackend]:
    _podman()
    if os.geteuid() != 0:
        pytest.skip("rootful podman needs root; the rootless tests cover this user")
    backend = ContainerBackend(frontend="podman")
    _usable(backend)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="module")
def battery(rootful: ContainerBackend) -> dict[str, Any]:
    return podman_battery.run(rootful)


def test_rootful_verdicts_equal_local(battery: dict[str, Any]) -> None:
    assert battery["refusal"] == ""
    local = Engine(workers=1, backend="local", cache=None)
    for name, job in podman_battery.reference_jobs().items():
        got = battery["cases"][name]
        want = local.judge(job).verdict.value
        assert got["verdict"] == want, (name, got["describe"])
        assert got["layers"] and got["frontend"] == "podman", got


def _assert_limits(cases: dict[str, Any]) -> None:
    """Every hostile program stopped as LIMIT_CASES says; the thread flood by the process
    limit itself (fewer threads than it allows were running), not by its address space."""
    for name, (_, allowed) in podman_battery.LIMIT_CASES.items():
        assert cases[name]["verdict"] in allowed, (name, cases[name]["describe"])
    started = podman_battery.threads_started(cases["thread-flood"])
    assert 0 < started < Limits().processes, cases["thread-flood"]


def test_rootful_limits_enforced(battery: dict[str, Any]) -> None:
    _assert_limits(battery["cases"])
    for name in podman_battery.LIMIT_CASES:
        assert battery["cases"][name]["layers"], battery["cases"][name]


def test_rootful_hardening_as_podman_reports_it(rootful: ContainerBackend) -> None:
    """podman's own record of a warm container: the flags the backend spells for podman."""
    c = rootful._acquire()
    try:
        info = json.loads(subprocess.check_output([rootful.docker, "inspect", c.name]))[0]
    finally:
        rootful._idle.put(c)
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    # the options are one job slot's ceilings; the container has `jobs` slots
    assert host["PidsLimit"] == rootful.pids * rootful.jobs
    assert host["Memory"] == rootful.memory_mb * rootful.jobs << 20
    assert host["Privileged"] is False and not info["EffectiveCaps"], info["EffectiveCaps"]
    assert "no-new-privileges" in host["SecurityOpt"] and info["Config"]["User"] == "10001:10001"


def test_rootful_work_dir_files_are_the_programs_memory(
    rootful: ContainerBackend, tmp_path: Path
) -> None:
    """As with Docker: 320 MB of files in the work dir of a 200 MB job in a 384 MB container,
    the program's own MEMORY_LIMIT_EXCEEDED in its per-job cgroup."""
    small = ContainerBackend(frontend="podman", memory_mb="384", jobs_per_container="1")
    try:
        assert_work_dir_files_are_the_programs_memory(small, tmp_path)
    finally:
        small.close()


def test_rootful_unsampled_memory_ends_its_program_only(
    rootful: ContainerBackend, tmp_path: Path
) -> None:
    two = ContainerBackend(frontend="podman", memory_mb="384", jobs_per_container="2")
    try:
        assert_unsampled_memory_ends_its_program_only(two, tmp_path)
    finally:
        two.close()


# -- rootless: the same backend as a user without root ------------------------------------------


def _as_user(
    *argv: str, pythonpath: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`argv` as the rootless user (as this process when it is not root), in a clean
    environment, in `cwd` or the user's home."""
    if os.geteuid() != 0:
        env = {**os.environ, "PYTHONPATH": pythonpath}
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=cwd
        )
    try:
        home = subprocess.check_output(["getent", "passwd", USER], text=True).split(":")[5]
    except subprocess.CalledProcessError:
        require(False, f"no user {USER} (make podman-user)")
    env = {"HOME": home, "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv],
        capture_output=True, text=True, timeout=300, check=False, cwd=cwd or home,
    )  # fmt: skip


@pytest.fixture(scope="module")
def rootless_info() -> dict[str, Any]:
    _podman()
    proc = _as_user("podman", "info", "--format", "json")
    assert proc.returncode == 0, proc.stderr[-800:]
    info = json.loads(proc.stdout)
    assert info["host"]["security"]["rootless"] is True, "the rootless user's podman is rootful"
    proc = _as_user("podman", "image", "exists", "code-eval-judge:latest")
    require(proc.returncode == 0, f"{USER} has no judge image (make podman-image)")
    return dict(info)


@pytest.fixture(scope="module")
def user_tree() -> Iterator[Path]:
    """What the rootless user runs, copied where it can read it (a checkout under /root is not):
    the engine package and the battery's modules."""
    tree = Path(tempfile.mkdtemp(prefix="code-eval-podman-"))
    try:
        tree.chmod(0o755)
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "execution", tree / "code_eval_taskpack" / "execution", ignore=skip)
        (tree / "tests").mkdir()
        for name in ("__init__.py", "podman_battery.py", "engine_programs.py"):
            shutil.copy(ROOT / "tests" / name, tree / "tests" / name)
        for d in tree.rglob("*"):
            d.chmod(0o755 if d.is_dir() else 0o644)
        yield tree
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def _python() -> str:
    """An interpreter the user may run: this one, unless it lives where the user cannot read
    (a pyenv under /root), then the system's."""
    for python in (sys.executable, "/usr/bin/python3"):
        if _as_user(python, "-c", "import tomllib").returncode == 0:
            return python
    pytest.fail(f"no Python 3.11+ that {USER} may run")


def _battery(tree: Path, *flags: str) -> dict[str, Any]:
    proc = _as_user(_python(), "-m", "tests.podman_battery", *flags, pythonpath=str(tree), cwd=tree)
    assert proc.returncode == 0, proc.stderr[-1500:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_rootless_user_namespaces_work() -> None:
    """The user's own namespace with its subordinate ranges, which rootless podman builds on."""
    _podman()
    proc = _as_user("podman", "unshare", "cat", "/proc/self/uid_map")
    assert proc.returncode == 0, proc.stderr[-500:]
    sizes = [int(line.split()[2]) for line in proc.stdout.splitlines()]
    assert sum(sizes) >= 65537, proc.stdout  # the user's own uid plus its 65536 subordinate ones


def test_rootless_refused_without_ceilings(rootless_info: dict[str, Any], user_tree: Path) -> None:
    """Where rootless podman cannot enforce the memory and pids ceilings, the backend refuses
    before starting anything; with that check skipped, the agent's probe inside still refuses
    under "required" (both say why, neither judges)."""
    reason = podman_refusal(rootless_info)
    if not reason:
        pytest.skip("this user's podman enforces the ceilings: the verdict test covers it")
    out = _battery(user_tree)
    assert "memory and pids ceilings" in out["refusal"], out
    (case,) = out["cases"].values()
    assert case["verdict"] == "INFRA_ERROR" and reason in case["describe"], case
    out = _battery(user_tree, "--no-preflight")
    for layer in ("container_pids_ceiling", "container_memory_ceiling"):
        assert layer in out["refusal"], out
    (case,) = out["cases"].values()
    assert case["verdict"] == "INFRA_ERROR" and "container_pids_ceiling" in case["describe"]


def test_rootless_verdicts_and_limits(rootless_info: dict[str, Any], user_tree: Path) -> None:
    """Where the ceilings are delegated, the rootless user judges as rootful podman does."""
    reason = podman_refusal(rootless_info)
    if reason:
        pytest.skip(f"rootless podman cannot enforce the ceilings on this host: {reason}")
    out = _battery(user_tree)
    assert out["refusal"] == "", out
    local = Engine(workers=1, backend="local", cache=None)
    for name, job in podman_battery.reference_jobs().items():
        got = out["cases"][name]
        assert got["verdict"] == local.judge(job).verdict.value, (name, got["describe"])
        assert got["layers"], got
    _assert_limits(out["cases"])


def test_rootless_best_effort_judges_and_names_missing_ceilings(
    rootless_info: dict[str, Any], user_tree: Path
) -> None:
    """Under "best-effort" the rootless user judges: the local backend's verdicts, a CPU spin,
    a memory hog, a thread flood, a fork bomb, a network call and a write to the root each
    stopped by the sandbox inside (every layer "required" demands of it active, no limit held
    per process only), and each result lists exactly the container layers it lacked: the two
    ceilings where this podman cannot set them, none where it can. The cached results are not
    served to a "required" engine afterwards."""
    reason = podman_refusal(rootless_info)
    absent = sorted(CEILING_LAYERS) if reason else []
    out = _battery(user_tree, "--policy", "best-effort", "--cache")
    assert out["refusal"] == "", out
    local = Engine(workers=1, backend="local", cache=None)
    want = {
        name: local.judge(job).verdict.value
        for name, job in podman_battery.reference_jobs().items()
    }
    _assert_limits(out["cases"])
    for name, case in out["cases"].items():
        assert name not in want or case["verdict"] == want[name], (name, case["describe"])
        assert sorted(n for n in case["missing"] if n in CONTAINER_LAYERS) == absent, case
        assert set(REQUIRED_LAYERS) | (set(CONTAINER_LAYERS) - set(absent)) <= set(case["active"])
        assert case["unenforced"] == [] and case["frontend"] == "podman", case
        if reason:
            assert case["enforcement"] == ["pid_namespace_sampling"] * 2, case
            assert any(n.startswith(f"no container ceilings: {reason}") for n in case["notes"])
    assert set(out["cases"]) == set(want) | set(podman_battery.LIMIT_CASES)
    # a result judged without the ceilings never answers "required" from the cache
    again = out["then_required"]
    assert again["cached"] is False, again
    if reason:  # the warm container's probe, or the backend before starting one, refuses
        assert again["verdict"] == "INFRA_ERROR", again
        assert "container_memory_ceiling" in again["detail"] or reason in again["detail"], again


def test_uncapped_podman_refused_under_required_and_flagless_under_best_effort() -> None:
    """The backend's own rule for a podman that cannot set the ceilings: "required" refuses
    before starting anything; "best-effort" starts containers without the ceiling flags, so the
    command line claims nothing that is not in effect."""
    backend = ContainerBackend(frontend="podman")
    backend._frontend_refusal = "rootless podman on cgroup v1 cannot enforce the ceilings"
    with pytest.raises(SandboxError, match="cgroup v1"):
        backend.check_frontend("required")
    backend.check_frontend("best-effort")
    backend._image_id = "sha256:" + "0" * 64  # argv names the image by ID; none is started
    argv = backend.argv("code-eval-judge-test")
    assert not {"--memory", "--memory-swap", "--pids-limit"} & set(argv), argv
    backend._frontend_refusal = ""
    argv = backend.argv("code-eval-judge-test")
    # a slot's ceiling times the container's job slots
    assert argv[argv.index("--memory") + 1] == f"{backend.memory_mb * backend.jobs}m"
    assert argv[argv.index("--pids-limit") + 1] == str(backend.pids * backend.jobs)
    backend.close()


def test_frontend_and_runtime_are_separate_settings() -> None:
    with pytest.raises(ValueError, match="docker or podman"):
        ContainerBackend(frontend="lxc")
    with pytest.raises(ValueError, match="podman front-end's OCI runtime must be runc or crun"):
        ContainerBackend(frontend="podman", runtime="runsc")
    assert ContainerBackend(frontend="podman").docker == "/usr/bin/podman"
    rootful_v1 = {"host": {"security": {"rootless": False}, "cgroupVersion": "v1"}}
    assert podman_refusal(rootful_v1) == ""
    v2 = {"host": {"security": {"rootless": True}, "cgroupVersion": "v2"}}
    assert "memory, pids are not delegated" in podman_refusal(v2)
    v2["host"]["cgroupControllers"] = ["cpu", "memory", "pids"]  # type: ignore[index]
    assert podman_refusal(v2) == ""
    assert "cgroup v1" in podman_refusal({"host": {"cgroupVersion": "v1"}})
