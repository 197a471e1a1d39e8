"""Benchmark settings from lm-eval's `--metadata`, task metadata or the environment.

lm-eval hands the same `--metadata` (and, from the CLI, every `model_args` key) to every task of a
run as keyword arguments, so each benchmark reads only its own prefixed keys
(`clozetest_data_dir`, `xcodeeval_data_dir`, ...). Environment variables come second so a cluster
can fix a data location once for all jobs.

Each benchmark declares its settings once, as a table of `Setting`s (key, environment variable,
type, default, one-line doc) in its folder's `settings.py`, reads them with `parse_settings`, and
its README's table of keys is rendered from that table (`render_table`; a test keeps it current).
Settings an execution-based benchmark needs again in its batch filter travel frozen in every
document (`Frozen.freeze`) and are regrouped there (`regroup`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from code_eval_taskpack.execution.config import setting_text

_TRUE = {"1", "true", "yes", "on"}
# Words (lower case, stripped) that `as_bool` reads as false; other settings may reuse them.
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def lookup(kwargs: Mapping[str, Any], key: str, env: str | None = None, default: Any = None) -> Any:
    """Value of `key` from the hook's kwargs (top level or a nested `metadata` dict), else the
    text of the environment variable `env` (read by the engine's configuration module)."""
    if kwargs.get(key) is not None:
        return kwargs[key]
    nested = kwargs.get("metadata")
    if isinstance(nested, Mapping) and nested.get(key) is not None:
        return nested[key]
    text = setting_text(env) if env else None
    return default if text is None else text


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


# --------------------------------------------------------------------------- declarations

KINDS = ("text", "raw", "bool", "int", "float", "choice", "dir_or_off")


@dataclass(frozen=True)
class Setting:
    """One user setting of a benchmark, declared once.

    `kind` says how the value is read: `text` (str), `raw` (as given: a mapping or JSON text
    stays what it is), `bool`, `int` (whole number, at least `minimum`), `float` (positive),
    `choice` (one of `choices`, lower-cased first when `lowercase`) or `dir_or_off` (a folder,
    or `none`/a false word for "off", read as None). `aliases` are shorter keys read after the
    key and its variable. `default` may be a function (e.g. of the CPU count); `default_doc` then
    says in the README what it gives. `blank_is_unset` reads "" like an absent value.
    """

    key: str
    kind: str
    default: Any
    doc: str
    env: str | None = None
    aliases: tuple[str, ...] = ()
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    lowercase: bool = False
    blank_is_unset: bool = False
    default_doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"setting {self.key!r}: unknown kind {self.kind!r}; use one of {KINDS}"
            )
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"setting {self.key!r}: `choices` goes with kind 'choice' only")

    @property
    def name(self) -> str:
        """How errors name the setting: its key, and its aliases if any."""
        return self.key + (f" (or {', '.join(self.aliases)})" if self.aliases else "")

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default

    def raw(self, kwargs: Mapping[str, Any]) -> Any:
        """The value as given (key, then its variable, then each alias), else None."""
        value = lookup(kwargs, self.key, env=self.env)
        for alias in self.aliases:
            if value is None:
                value = lookup(kwargs, alias)
        if self.blank_is_unset and value == "":
            return None
        return value

    def convert(self, value: Any) -> Any:
        """`value` read as this setting's kind; a bad value is a ValueError naming the setting."""
        if value is None:
            return None
        if self.kind == "text":
            return str(value)
        if self.kind == "bool":
            return as_bool(value, self.name)
        if self.kind == "int":
            return as_int(value, self.name, env=self.env, minimum=self.minimum)
        if self.kind == "float":
            return as_float(value, self.name, env=self.env)
        if self.kind == "choice":
            text = str(value).lower() if self.lowercase else value
            return choice(text, self.name, self.choices, env=self.env)
        if self.kind == "dir_or_off":
            return None if str(value).strip().lower() in {"none", *FALSE_WORDS} else str(value)
        return value  # raw


def parse_settings(
    declarations: Sequence[Setting],
    kwargs: Mapping[str, Any],
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """key -> value of every declared setting, read from lm-eval's kwargs or the environment.

    `defaults` replaces declared defaults where a task has its own (e.g. another split).
    """
    out: dict[str, Any] = {}
    for setting in declarations:
        value = setting.raw(kwargs)
        if value is None:
            given = (defaults or {}).get(setting.key)
            value = setting.default_value() if given is None else given
        out[setting.key] = setting.convert(value)
    return out


def known_keys(declarations: Sequence[Setting]) -> list[str]:
    """Every key and alias of `declarations`."""
    return [k for s in declarations for k in (s.key, *s.aliases)]


def unknown_keys(
    kwargs: Mapping[str, Any], prefixes: Sequence[str], known: Sequence[str]
) -> list[str]:
    """Keys of `kwargs` (top level or a nested `metadata` dict) that start with one of
    `prefixes` but are not in `known`, in the order given."""
    nested = kwargs.get("metadata")
    keys = [*kwargs, *(nested if isinstance(nested, Mapping) else ())]
    allowed = set(known)
    found = (k for k in keys if isinstance(k, str) and k.startswith(tuple(prefixes)))
    return list(dict.fromkeys(k for k in found if k not in allowed))


def check_known(
    kwargs: Mapping[str, Any],
    prefixes: Sequence[str],
    known: Sequence[str],
    internal: Sequence[str] = (),
) -> None:
    """A ValueError naming every key with a benchmark's prefix that no setting declares, each with
    the nearest declared key: a misspelt setting must never run silently on its default.
    `internal` keys (set by the task files themselves) are accepted but never suggested."""
    unknown = unknown_keys(kwargs, prefixes, [*known, *internal])
    if not unknown:
        return
    parts = []
    for key in unknown:
        near = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
        parts.append(f"{key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    raise ValueError(
        f"unknown setting{'s' if len(parts) > 1 else ''} {', '.join(parts)}: no benchmark of "
        f"this pack reads {'them' if len(parts) > 1 else 'it'}; the READMEs list every key"
    )


def render_table(declarations: Sequence[Setting]) -> str:
    """The README table of `declarations` (Markdown), one row per setting."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| key | environment variable | default | meaning |", "|---|---|---|---|"]
    for s in declarations:
        keys = " / ".join(f"`{k}`" for k in (s.key, *s.aliases))
        env = f"`{s.env}`" if s.env else "—"
        if s.default_doc:
            default = s.default_doc
        elif s.default is None:
            default = "—"
        elif isinstance(s.default, bool):
            default = f"`{str(s.default).lower()}`"
        else:
            default = f"`{s.default}`"
        rows.append(f"| {keys} | {env} | {cell(default)} | {cell(s.doc)} |")
    return "\n".join(rows)


TABLE_BEGIN = "<!-- settings table: begin (generated from {module}; do not edit) -->"
TABLE_END = "<!-- settings table: end -->"


def replace_table(readme: str, module: str, declarations: Sequence[Setting]) -> str:
    """`readme` with the text between its settings-table markers replaced by the rendered table."""
    begin = TABLE_BEGIN.format(module=module)
    head, sep, rest = readme.partition(begin)
    if not sep or TABLE_END not in rest:
        raise ValueError(f"no settings table markers for {module} in the README")
    tail = rest.split(TABLE_END, 1)[1]
    return f"{head}{begin}\n{render_table(declarations)}\n{TABLE_END}{tail}"


# --------------------------------------------------------------------------- frozen settings

F = TypeVar("F", bound="Frozen")


class Frozen:
    """A mixin for settings dataclasses that travel inside lm-eval documents.

    lm-eval builds documents once (where the settings are read) and later hands a filter every
    response of a task at once; the filter needs the settings again, so each document carries
    them as one JSON string, and the filter regroups documents by that string.
    """

    def freeze(self) -> str:
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__} is not a dataclass")
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def thaw(cls: type[F], text: str) -> F:
        return cls(**json.loads(text))


def regroup(
    docs: Sequence[Mapping[str, Any]], field: str, thaw: Callable[[str], F]
) -> list[tuple[F, list[int]]]:
    """(settings, indices of the documents carrying them) per distinct frozen value of `field`,
    in the order first met."""
    groups: dict[str, list[int]] = {}
    for index, doc in enumerate(docs):
        groups.setdefault(str(doc[field]), []).append(index)
    return [(thaw(text), members) for text, members in groups.items()]
