"""Benchmark settings from lm-eval's `--metadata`, task metadata or the environment.

lm-eval hands the same `--metadata` (and, from the CLI, every `model_args` key) to every task of a
run as keyword arguments, so each benchmark reads only its own prefixed keys
(`clozetest_data_dir`, `xcodeeval_data_dir`, ...). Environment variables come second so a cluster
can fix a data location once for all jobs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

_TRUE = {"1", "true", "yes", "on"}
# Words (lower case, stripped) that `as_bool` reads as false; other settings may reuse them.
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def lookup(kwargs: Mapping[str, Any], key: str, env: str | None = None, default: Any = None) -> Any:
    """Value of `key` from the hook's kwargs (top level or a nested `metadata` dict), else `env`."""
    if kwargs.get(key) is not None:
        return kwargs[key]
    nested = kwargs.get("metadata")
    if isinstance(nested, Mapping) and nested.get(key) is not None:
        return nested[key]
    if env and os.environ.get(env) not in (None, ""):
        return os.environ[env]
    return default


def as_bool(value: Any, name: str) -> bool:
    """Parse a flag given as bool, int or string; reject anything ambiguous."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in FALSE_WORDS:
        return False
    raise ValueError(f"setting {name!r}: expected true/false, got {value!r}")


def _where(name: str, env: str | None) -> str:
    return f"setting {name!r}" + (f" (or ${env})" if env else "")


def as_int(value: Any, name: str, env: str | None = None, minimum: int | None = None) -> int:
    """A whole number given as int or digits; "2.5", "abc" or True name the setting."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{_where(name, env)}: expected a whole number, got {value!r}")
    try:
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{_where(name, env)}: expected a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{_where(name, env)}: expected at least {minimum}, got {number}")
    return number


def as_float(value: Any, name: str, env: str | None = None) -> float:
    """A positive number given as number or text; anything else names the setting."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{_where(name, env)}: expected a number, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise ValueError(f"{_where(name, env)}: expected a positive number, got {value!r}")
    return number


def choice(value: Any, name: str, accepted: tuple[str, ...], env: str | None = None) -> str:
    """One of `accepted` (exact spelling); the error names the setting and the accepted values."""
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(
            f"{_where(name, env)}: expected one of {', '.join(repr(a) for a in accepted)}, "
            f"got {value!r}"
        )
    return value
