"""The backends the shared parity suite runs through: name -> a context manager yielding the
backend (and stopping what it started). A backend joins the suite by adding one entry here; one
that holds only some languages (a judge image of a subset) says which by a `clusters()` method."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Callable, Iterator

from code_eval_taskpack.execution.backends import Backend, get_backend
from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
from code_eval_taskpack.execution.server.http import make_server
from tests.conftest import require


@contextlib.contextmanager
def _local() -> Iterator[Backend]:
    yield get_backend("local")


@contextlib.contextmanager
def _remote() -> Iterator[Backend]:
    """Two of our judge servers on loopback ports."""
    servers = [make_server("127.0.0.1", 0, workers=1) for _ in range(2)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    try:
        urls = ",".join(f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
        yield RemoteBackend(servers=urls)
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


@contextlib.contextmanager
def _ray() -> Iterator[Backend]:
    """A local Ray cluster of 2 CPUs."""
    try:
        import ray  # noqa: F401
    except ImportError:
        require(False, "Ray is not installed (pip install -e '.[ray]')")
    backend = get_backend("ray", {"num_cpus": "2"})
    try:
        yield backend
    finally:
        close = getattr(backend, "close", None)
        if close is not None:
            close()


@contextlib.contextmanager
def _container(frontend: str = "docker") -> Iterator[Backend]:
    """Warm containers of the judge image (`make image`; CI builds one of C and Python), started
    by `frontend` (rootful podman: the image copied into its storage by `make podman-image`)."""
    from code_eval_taskpack.execution.backends.container.backend import ContainerBackend
    from code_eval_taskpack.execution.isolation import SandboxError

    backend = ContainerBackend(frontend=frontend)
    try:
        backend.image_id()
    except (SandboxError, OSError, subprocess.SubprocessError) as exc:
        require(False, f"judge image unusable for {frontend} (make image podman-image): {exc}")
    try:
        yield backend
    finally:
        backend.close()


def _podman() -> contextlib.AbstractContextManager[Backend]:
    return _container("podman")


BACKENDS: dict[str, Callable[[], contextlib.AbstractContextManager[Backend]]] = {
    "local": _local,
    "remote": _remote,
    "ray": _ray,
    "container": _container,
    "podman": _podman,
}
