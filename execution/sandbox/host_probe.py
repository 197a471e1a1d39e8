"""The host probe: which isolation layers this host can give a sandbox, decided once per
process with a throw-away sandbox, and the refusal the `required` policy gives without them."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal as _signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..isolation import check_policy
from . import cgroups
from .fstree import remove_tree
from .launcher import (
    launcher_binary,
    launcher_config,
    parse_kv,
    popen_launcher,
    seccomp_available,
)


@dataclass(frozen=True)
class HostIsolation:
    """What this host can give a sandbox, decided once per process by `host_isolation()`."""

    namespaces: bool  # pid/net/mount/ipc/uts namespaces and the private root could be built
    seccomp: bool  # the launcher was built with libseccomp
    detail: str = ""  # why namespaces are unavailable (the launcher's own message)
    launcher: bool = True  # False: the launcher could not be built (every job says so)
    cgroups: bool = False  # a program cgroup set could be created (else: why not, below)
    cgroup_detail: str = ""


_host_lock = threading.Lock()
_host: HostIsolation | None = None


def host_isolation() -> HostIsolation:
    """Probe once per process, with a throw-away sandbox, whether namespaces can be built here.

    Only this probe may conclude "no namespaces": a later launcher failure is an error of its job,
    never a reason to run a program with fewer layers."""
    global _host
    with _host_lock:
        if _host is None:
            _host = _probe_host()
        return _host


def host_refusal(policy: str) -> str:
    """Why `policy` cannot run any sandbox on this host ("" when it can), from the probe: under
    `required`, no namespaces or no seccomp filter. A host without a launcher at all is not a
    refusal: every job reports that as its own INFRA_ERROR."""
    if check_policy(policy) != "required":
        return ""
    host = host_isolation()
    if not host.launcher:
        return ""
    missing = [] if host.namespaces else ["namespaces"]
    missing += [] if host.seccomp else ["seccomp"]
    if not missing:
        return ""
    return (
        f"isolation policy 'required' refused: this host lacks {' and '.join(missing)}"
        f"{f' ({host.detail})' if host.detail else ''}; run as root (or enable unprivileged "
        "user namespaces, install libseccomp-dev), or pass --isolation best-effort "
        "(Engine(isolation='best-effort')) to judge with fewer layers (every result then lists "
        "the missing ones)"
    )


def _probe_cgroups() -> tuple[bool, str]:
    try:
        cgroups.CgroupSet.create("probe").destroy()
    except OSError as exc:
        return False, str(exc)
    return True, ""


def _probe_host() -> HostIsolation:
    launcher, reason = launcher_binary()
    if launcher is None:
        return HostIsolation(False, False, reason, launcher=False)
    cg = _probe_cgroups()
    ns = _probe_namespaces(launcher)
    return dataclasses.replace(ns, cgroups=cg[0], cgroup_detail=cg[1])


def _probe_namespaces(launcher: Path) -> HostIsolation:
    seccomp = seccomp_available()
    tmp = Path(tempfile.mkdtemp(prefix=f"code-exec-{os.getpid()}-probe-"))
    try:
        (tmp / "io").mkdir()
        (tmp / "root").mkdir()
        words = ["--io", str(tmp / "io"), "--ns", "--root", str(tmp / "root")]
        if os.geteuid() != 0:
            words.append("--userns")
        with open(tmp / "err", "wb") as err:
            proc = popen_launcher(launcher, err)
        try:
            out, _ = proc.communicate(launcher_config(words), timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, _signal.SIGKILL)
            proc.wait()
            return HostIsolation(False, seccomp, "the namespace probe did not answer in 60 s")
        ok = parse_kv(out.splitlines()[0] if out else b"").get("pid1") == "1"
        detail = "" if ok else (tmp / "err").read_text(errors="replace").strip()[-500:]
        return HostIsolation(ok, seccomp, detail or ("" if ok else "launcher gave no answer"))
    except OSError as exc:
        return HostIsolation(False, seccomp, f"namespace probe failed: {exc}")
    finally:
        remove_tree(tmp)
