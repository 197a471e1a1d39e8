"""The local backend: this host's sandbox (`execution.sandbox.Sandbox`) and its toolchains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..backends.base import Backend, Session
from ..isolation import REQUIRED_LAYERS, check_policy
from ..sandbox import Sandbox, host_isolation


class LocalBackend(Backend):
    """Programs run in a namespace sandbox on this host, with the host's compilers."""

    name = "local"
    required_layers = REQUIRED_LAYERS

    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        return Sandbox(ro_paths=ro_paths, files=files, purposes=purposes, isolation=policy)

    def host_refusal(self, policy: str) -> str:
        if check_policy(policy) != "required":
            return ""
        host = host_isolation()
        if not host.launcher:
            return ""  # no launcher at all: every job reports that as its INFRA_ERROR
        missing = [] if host.namespaces else ["namespaces"]
        missing += [] if host.seccomp else ["seccomp"]
        if not missing:
            return ""
        return (
            f"isolation policy 'required' refused: this host lacks {' and '.join(missing)}"
            f"{f' ({host.detail})' if host.detail else ''}; run as root (or enable unprivileged "
            "user namespaces, install libseccomp-dev), or pass --isolation best-effort to judge "
            "with fewer layers (every result then lists the missing ones)"
        )

    def identity(self) -> str:
        return ""  # the keys of caches made before backends existed
