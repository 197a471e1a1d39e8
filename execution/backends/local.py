"""The local backend: this host's sandbox (`execution.sandbox.Sandbox`) and its toolchains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..config import EngineConfig
from ..isolation import REQUIRED_LAYERS
from ..languages.registry import Runtime
from ..sandbox.command import Sandbox
from ..sandbox.host_probe import host_refusal
from ..speedups import pch
from ..types import Job
from .base import Session, SessionBackend


class LocalBackend(SessionBackend):
    """Programs run in a namespace sandbox on this host, with the host's compilers.

    `test_fail_stage` is for tests only: every sandbox opened fails at that launcher stage
    (`Sandbox`'s parameter of that name)."""

    name = "local"
    required_layers = REQUIRED_LAYERS
    host_files = True
    test_fail_stage: tuple[str, str] | None = None

    def __init__(self, test_fail_stage: tuple[str, str] | None = None) -> None:
        self.test_fail_stage = test_fail_stage

    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        return Sandbox(
            ro_paths=ro_paths,
            files=files,
            purposes=purposes,
            isolation=policy,
            test_fail_stage=self.test_fail_stage,
        )

    def host_refusal(self, policy: str) -> str:
        return host_refusal(policy)

    def expect(
        self, items: Sequence[tuple[Job, Runtime]], config: EngineConfig | None = None
    ) -> None:
        pch.expect(((runtime, job.source_code) for job, runtime in items), config)

    def identity(self) -> str:
        return ""  # the keys of caches made before backends existed
