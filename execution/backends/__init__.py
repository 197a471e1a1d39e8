"""Backends by name: `get_backend("local")`, `register_backend(name, factory)`.

The interface is `base.py` (what the runner and the engine ask of a backend), the session backend
is `local.py` (this host's sandbox), `options.py` the table of options a backend takes; the job
backends are the folders `remote/`, `container/` and `ray/`.
A second backend is a `SessionBackend` or `JobBackend` subclass (`base.py`) registered
here; the runner and the engine need no change (see execution/README.md, "Backends"). Built-in
backends are named by lazy "module:Class" strings, so importing the engine imports no backend
it does not use. A backend may take options (judge servers, a cluster address, an image):
`get_backend(name, {"servers": "..."})` calls `factory(**options)` with string values; one
instance is kept per name and options, so a process shares its warm containers, connections or
cluster handle among engines."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .base import Backend, JobBackend, Session, SessionBackend

#: a factory, or where its class lives ("module:Class", the module relative to this package)
Factory = Callable[..., Backend] | str

BUILT_IN: dict[str, str] = {
    "local": ".local:LocalBackend",
    "remote": ".remote.client:RemoteBackend",
    "ray": ".ray.cluster:RayBackend",
    "container": ".container.backend:ContainerBackend",
}
_registry: dict[str, Factory] = dict(BUILT_IN)
_instances: dict[tuple[str, tuple[tuple[str, str], ...]], Backend] = {}
_lock = threading.Lock()
#: the backend of an `Engine(backend=None)`; `set_default_backend` changes it for the process
_default = ["local"]


def register_backend(name: str, factory: Factory, replace: bool = False) -> None:
    """Make `factory(**options)` reachable as `name` (`factory` may be a "module:Class" string,
    imported when first used); a taken name is a ValueError unless `replace`."""
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
        found = _registry.get(name)
        if found is None:
            raise ValueError(f"unknown backend {name!r}; use one of {tuple(sorted(_registry))}")
        factory = _load(found)
        try:
            inst = factory(**opts)
        except TypeError as exc:  # an option the factory does not declare
            raise ValueError(f"backend {name!r}: bad options {sorted(opts)}: {exc}") from exc
        if inst.name != name:
            raise ValueError(f"backend registered as {name!r} calls itself {inst.name!r}")
        _instances[key] = inst
        return inst


def _load(factory: Factory) -> Callable[..., Backend]:
    """The factory itself, or the class a "module:Class" string names."""
    if not isinstance(factory, str):
        return factory
    module, _, attr = factory.partition(":")
    loaded: Callable[..., Backend] = getattr(importlib.import_module(module, __name__), attr)
    return loaded


def set_default_backend(name: str) -> None:
    """The backend of engines built without one (e.g. a test run's `--backend NAME`)."""
    get_backend(name)  # unknown names fail here
    _default[0] = name


def default_backend_name() -> str:
    return _default[0]


#: the built-in backends' classes, importable from here as before (each loaded when asked for)
_CLASSES = {"LocalBackend": "local", "RemoteBackend": "remote", "RayBackend": "ray"}


def __getattr__(attr: str) -> Any:
    if attr in _CLASSES:
        return _load(BUILT_IN[_CLASSES[attr]])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = [
    "Backend",
    "JobBackend",
    "LocalBackend",
    "RayBackend",
    "RemoteBackend",
    "Session",
    "SessionBackend",
    "backend_names",
    "default_backend_name",
    "get_backend",
    "register_backend",
    "set_default_backend",
]
