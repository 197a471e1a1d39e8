"""Backends by name: `get_backend("local")`, `register_backend(name, factory)`.

A second backend is a `Backend` subclass registered here; the runner and the engine need no
change (see execution/README.md, "Backends")."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..backends.base import Backend, Session
from ..backends.local import LocalBackend

_registry: dict[str, Callable[[], Backend]] = {"local": LocalBackend}
_instances: dict[str, Backend] = {}
_lock = threading.Lock()
#: the backend of an `Engine(backend=None)`; `set_default_backend` changes it for the process
_default = ["local"]


def register_backend(name: str, factory: Callable[[], Backend], replace: bool = False) -> None:
    """Make `factory()` reachable as `name`; a taken name is a ValueError unless `replace`."""
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"backend name must be a plain word: {name!r}")
    with _lock:
        if name in _registry and not replace:
            raise ValueError(f"backend {name!r} is already registered")
        _registry[name] = factory
        _instances.pop(name, None)


def backend_names() -> tuple[str, ...]:
    with _lock:
        return tuple(sorted(_registry))


def get_backend(backend: str | Backend | None = None) -> Backend:
    """The backend named `backend` (one instance per name and process), `backend` itself when it
    is an instance, or the default one; an unknown name is a ValueError naming the known ones."""
    if isinstance(backend, Backend):
        return backend
    name = _default[0] if backend is None else backend
    with _lock:
        inst = _instances.get(name)
        if inst is not None:
            return inst
        factory = _registry.get(name)
        if factory is None:
            raise ValueError(f"unknown backend {name!r}; use one of {tuple(sorted(_registry))}")
        inst = factory()
        if inst.name != name:
            raise ValueError(f"backend registered as {name!r} calls itself {inst.name!r}")
        _instances[name] = inst
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
    "Session",
    "backend_names",
    "default_backend_name",
    "get_backend",
    "register_backend",
    "set_default_backend",
]
