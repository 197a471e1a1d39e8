"""The engine's switches, declared once: name, environment variable, type, default, one-line doc.

Every engine switch (the speed-ups on or off, warm servers per language, classic builds, the
cache directory) is a row of `SWITCHES`, parsed by `parse` with one rule for each type:

- a boolean: `1/true/yes/on` is true, `0/false/no/off` is false (case and surrounding spaces do
  not matter), unset or empty is the default, anything else is a ValueError naming the variable;
- an integer: a whole number at least the switch's minimum, else a ValueError naming it;
- a path: any non-empty text (unset or empty: the default).

This module is the only product module that reads a `CODE_EVAL_*` variable: the benchmarks'
settings read theirs through `setting_text` (tests/test_layering.py checks the source). Nothing
is read at import: a configuration is passed to where it is used, and None there means
`EngineConfig.from_env()` read at that call (`or_env`), so a bad value is an error where a
switch is used (or where `EngineConfig.from_env()` is called), never on `import`. `CODE_EVAL_REPORT_KEY_FILE` (execution/repo_tests/pytest_plugin.py) is not a switch but
the protocol with a child pytest process, and stays there.

`SPEEDUPS` names the switches a driver may hand to a judge node with its jobs: they choose how
a program is built, never how it is isolated, and every value a node receives is validated
here like an environment variable's (`EngineConfig.from_mapping`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Switch:
    """One engine switch: its `EngineConfig` field, environment variable, type and default."""

    field: str
    env: str
    kind: type  # bool, int or Path
    default: Any
    doc: str
    minimum: int | None = None  # integers only
    default_doc: str = ""  # the README's text for a default computed at run time


SWITCHES: tuple[Switch, ...] = (
    Switch(
        "pch", "CODE_EVAL_PCH", bool, True,
        "precompiled headers for C++ programs that open with standard includes",
    ),
    Switch(
        "go_direct", "CODE_EVAL_GO_DIRECT", bool, True,
        "Go programs compiled and linked by the toolchain's own tools, without the go command",
    ),
    Switch(
        "warm_compilers", "CODE_EVAL_WARM_COMPILERS", bool, True,
        "Java, Kotlin and C# compiled by long-lived warm compiler servers (else every compile cold)",
    ),
    Switch(
        "zygote", "CODE_EVAL_ZYGOTE", bool, True,
        "PyPy 3 and Ruby tests forked from one pre-initialised interpreter per program (else "
        "each test starts its interpreter cold)",
    ),
    Switch(
        "cpython_zygote", "CODE_EVAL_CPYTHON_ZYGOTE", bool, False,
        "CPython tests forked too, with CODE_EVAL_ZYGOTE (off: a program's forked tests share one "
        "string hash seed, hence one order of its sets of strings; README, CPython zygote)",
    ),
    Switch(
        "warm_servers", "CODE_EVAL_WARM_SERVERS", int, 1,
        "warm compiler servers per language and process", minimum=1,
    ),
    Switch(
        "jvm_cds", "CODE_EVAL_JVM_CDS", bool, True,
        "Java runs map the class-data sharing archive of the JDK classes judged programs use",
    ),
    Switch(
        "classic_build", "CODE_EVAL_CLASSIC_BUILD", bool, False,
        "the classic command lines (`compile_classic` / `run_classic`) of engine versions before "
        "the build and start-up speed-ups",
    ),
    Switch(
        "cache", "CODE_EVAL_CACHE", Path, None,
        "the one cache directory (results, launcher, downloads, headers)",
        default_doc="`~/.cache/code_eval_taskpack`",
    ),
)  # fmt: skip

BY_FIELD = {s.field: s for s in SWITCHES}
#: the switches a judge node accepts from its driver (how programs are built, never isolation;
#: not classic_build: a process's registry keeps the command lines it was loaded with)
SPEEDUPS = ("pch", "go_direct", "warm_compilers", "zygote", "cpython_zygote")


def parse(switch: Switch, value: Any) -> Any:
    """`value` (a variable's text, or a value sent with a job) as the switch's type; None or
    empty text is the default; anything else a ValueError naming the variable."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return switch.default
    if switch.kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
        raise ValueError(
            f"{switch.env}={value!r}: expected one of 1/true/yes/on or 0/false/no/off "
            "(or unset for the default)"
        )
    if switch.kind is int:
        try:
            number = value if type(value) is int else int(str(value).strip())
        except ValueError:
            number = None
        if number is None or (switch.minimum is not None and number < switch.minimum):
            at_least = f" of at least {switch.minimum}" if switch.minimum is not None else ""
            raise ValueError(f"{switch.env}={value!r}: expected a whole number{at_least}")
        return number
    if not isinstance(value, (str, Path)):
        raise ValueError(f"{switch.env}={value!r}: expected a path")
    return Path(value)


@dataclass(frozen=True)
class EngineConfig:
    """The engine's switches, one field per row of `SWITCHES` (same defaults)."""

    pch: bool = True
    go_direct: bool = True
    warm_compilers: bool = True
    zygote: bool = True
    cpython_zygote: bool = False
    warm_servers: int = 1
    jvm_cds: bool = True
    classic_build: bool = False
    cache: Path | None = None  # None: ~/.cache/code_eval_taskpack

    def __post_init__(self) -> None:
        for switch in SWITCHES:  # a value given in code obeys the rule a variable's does
            value = getattr(self, switch.field)
            if value is not None and not (switch.kind is bool and isinstance(value, bool)):
                object.__setattr__(self, switch.field, parse(switch, value))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EngineConfig:
        """The switches from `environ` (default: the process's environment)."""
        env = os.environ if environ is None else environ
        return cls(**{s.field: parse(s, env.get(s.env)) for s in SWITCHES})

    def speedups(self) -> dict[str, Any]:
        """The switches a judge node may take from this driver (JSON-ready)."""
        return {name: getattr(self, name) for name in SPEEDUPS}

    def with_speedups(self, sent: Any) -> EngineConfig:
        """This configuration with the speed-up switches `sent` with a job (hostile: a mapping
        of known speed-up names to values, each parsed by its switch's rule) in place."""
        if sent is None:
            return self
        if not isinstance(sent, Mapping):
            raise ValueError(f"engine switches must be an object, got {type(sent).__name__}")
        unknown = sorted(str(k) for k in sent if k not in SPEEDUPS)
        if unknown:
            raise ValueError(
                f"engine switches {', '.join(unknown)} cannot be sent with a job "
                f"(accepted: {', '.join(SPEEDUPS)})"
            )
        changes: dict[str, Any] = {}
        for name, value in sent.items():
            if not isinstance(value, bool):
                raise ValueError(f"engine switch {name}: expected true or false, got {value!r}")
            changes[name] = value
        return dataclasses.replace(self, **changes)


def or_env(config: EngineConfig | None) -> EngineConfig:
    """`config`, or for None the switches as the environment sets them now (read at this
    call): what every function taking an optional `EngineConfig` judges with."""
    return config if config is not None else EngineConfig.from_env()


def env_value(field: str) -> Any:
    """One switch's value from the environment now (the others are not read)."""
    switch = BY_FIELD[field]
    return parse(switch, os.environ.get(switch.env))


def setting_text(variable: str) -> str | None:
    """The text of a benchmark setting's environment variable now (`CODE_EVAL_EXEC_BACKEND`,
    `XCODEEVAL_DATA`...), None when unset or empty. The benchmarks' settings (`utils.settings`)
    read their variables here, so this stays the one module that reads a `CODE_EVAL_*` one;
    the setting parses and names the text itself."""
    text = os.environ.get(variable)
    return text if text else None


# --------------------------------------------------------------------------- the README's table

README = Path(__file__).with_name("README.md")
TABLE_BEGIN = "<!-- engine switches: begin (generated from execution/config.py; do not edit) -->"
TABLE_END = "<!-- engine switches: end -->"


def render_table() -> str:
    """The README's table of `SWITCHES` (Markdown), one row per switch."""
    rows = ["| environment variable | type | default | meaning |", "|---|---|---|---|"]
    for s in SWITCHES:
        if s.default_doc:
            default = s.default_doc
        elif isinstance(s.default, bool):
            default = f"`{str(s.default).lower()}`"
        else:
            default = f"`{s.default}`"
        kind = {bool: "boolean", int: f"integer ≥ {s.minimum}", Path: "path"}[s.kind]
        doc = s.doc.replace("|", "\\|")
        rows.append(f"| `{s.env}` | {kind} | {default} | {doc} |")
    return "\n".join(rows)


def rendered_readme(text: str) -> str:
    """`text` (the README) with the text between its switch-table markers rendered anew."""
    head, sep, rest = text.partition(TABLE_BEGIN)
    if not sep or TABLE_END not in rest:
        raise ValueError(f"{README}: no engine switch table markers")
    return f"{head}{TABLE_BEGIN}\n{render_table()}\n{TABLE_END}{rest.split(TABLE_END, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    """`python -m code_eval_taskpack.execution.config [--check]`: write the README's table, or
    with --check change nothing and fail when it is out of date (a test runs it)."""
    import argparse

    parser = argparse.ArgumentParser(description="render the engine switch table")
    parser.add_argument("--check", action="store_true", help="fail if the README is out of date")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = rendered_readme(text)
    if args.check:
        if new != text:
            print(f"out of date: {README} (run python -m code_eval_taskpack.execution.config)")
        return 1 if new != text else 0
    if new != text:
        README.write_text(new, encoding="utf-8")
        print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
