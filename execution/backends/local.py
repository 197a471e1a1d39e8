"""The local backend: this host's sandbox (`execution.sandbox.Sandbox`) and its toolchains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..isolation import REQUIRED_LAYERS
from ..languages.registry import Runtime
from ..sandbox.command import Sandbox
from ..sandbox.host_probe import host_refusal
from ..speedups import pch
from ..types import Job
from .base import Session, SessionBackend


class LocalBackend(SessionBackend):
    """Programs run in a namespace sandbox on this host, with the host's compilers."""

    name = "local"
    required_layers = REQUIRED_LAYERS
    host_files = True

    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        return Sandbox(ro_paths=ro_paths, files=files, purposes=purposes, isolation=policy)

    def host_refusal(self, policy: str) -> str:
        return host_refusal(policy)

    def expect(self, items: Sequence[tuple[Job, Runtime]]) -> None:
        pch.expect((runtime, job.source_code) for job, runtime in items)

    def identity(self) -> str:
        return ""  # the keys of caches made before backends existed
