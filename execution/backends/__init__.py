"""Backends by name: `get_backend("local")`, `register_backend(name, factory)`.

A second backend is a `Backend` subclass registered here; the runner and the engine need no
change (see execution/README.md, "Backends"). A backend may take options (judge servers, a
cluster address, an image): `get_backend(name, {"servers": "..."})` calls `factory(**options)`
with string values; one instance is kept per name and options, so a process shares its warm
containers, connections or cluster handle among engines."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from ..backends.base import Backend, Session
from ..backends.container import ContainerBackend
from ..backends.local import LocalBackend
from ..backends.raycluster import RayBackend
from ..backends.remote import RemoteBackend

_registry: dict[str, Callable[..., Backend]] = {
    "local": LocalBackend,
    "remote": RemoteBackend,
    "ray": RayBackend,
    "container": ContainerBackend,
}
_instances: dict[tuple[str, tuple[tuple[str, str], ...]], Backend] = {}
_lock = threading.Lock()
#: the backend of an `Engine(backend=None)`; `set_default_backend` changes it for the process
_default = ["local"]


def register_backend(name: str, factory: Callable[..., Backend], replace: bool = False) -> None:
    """Make `factory(**options)` reachable as `name`; a taken name is a ValueError unless
    `replace`."""
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"backend name must be a plain word: {name!r}")
    with _lock:
        if name in _registry and not replace:
            raise ValueError(f"backend {name!r} is already registered")
        _registry[name] = factory
        for key in [k for k in _instances if k[0] == name]:
            del _instances[key]


def backend_names() -> tuple[str, ...]:
    with _lock:
        return tuple(sorted(_registry))


def get_backend(
    backend: str | Backend | None = None, options: Mapping[str, str] | None = None
) -> Backend:
    """The backend named `backend` built with `options` (one instance per name, options and
    process), `backend` itself when it is an instance, or the default one. An unknown name, or
    options the backend does not take, is a ValueError naming what is accepted."""
    if isinstance(backend, Backend):
        if options:
            raise ValueError("backend options apply to a backend name, not an instance")
        return backend
    name = _default[0] if backend is None else backend
    opts = dict(options or {})
    key = (name, tuple(sorted((str(k), str(v)) for k, v in opts.items())))
    with _lock:
        inst = _instances.get(key)
        if inst is not None:
            return inst
        factory = _registry.get(name)
        if factory is None:
            raise ValueError(f"unknown backend {name!r}; use one of {tuple(sorted(_registry))}")
        try:
            inst = factory(**opts)
        except TypeError as exc:  # an option the factory does not declare
            raise ValueError(f"backend {name!r}: bad options {sorted(opts)}: {exc}") from exc
        if inst.name != name:
            raise ValueError(f"backend registered as {name!r} calls itself {inst.name!r}")
        _instances[key] = inst
        return inst


def set_default_backend(name: str) -> None:
    """The backend of engines built without one (e.g. a test run's `--backend NAME`)."""
    get_backend(name)  # unknown names fail here
    _default[0] = name


def default_backend_name() -> str:
    return _default[0]


__all__ = [
    "Backend",
    "LocalBackend",
    "RayBackend",
    "RemoteBackend",
    "Session",
    "backend_names",
    "default_backend_name",
    "get_backend",
    "register_backend",
    "set_default_backend",
]
