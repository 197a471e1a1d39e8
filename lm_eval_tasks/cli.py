"""`code-eval`: the pack's one command; each subcommand runs one module's own `main(argv)`.

The table below is the whole command tree. Modules are imported only when their subcommand
runs, so `code-eval exec ...` starts without loading lm-eval, and `--help` works on every level:
`code-eval --help`, `code-eval score --help`, `code-eval score xcodeeval --help`.
`code-eval --version` prints the installed package's version.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lm_eval_tasks import PATH

DISTRIBUTION = "code-eval-taskpack"


@dataclass(frozen=True)
class Command:
    """A leaf of the command tree: `target` is "module:function", called with the rest of argv."""

    words: tuple[str, ...]
    target: str
    summary: str


COMMANDS: tuple[Command, ...] = (
    Command(
        ("run",),
        "lm_eval_tasks.checked_run:main",
        "lm_eval run, with every selected task built (and checked) before the model loads",
    ),
    Command(
        ("exec",),
        "code_eval_taskpack.execution.cli.main:main",
        "the execution engine: run, batch, serve, doctor (also `code-exec`)",
    ),
    Command(
        ("score", "xcodeeval"),
        "lm_eval_tasks.xcodeeval.score:main",
        "judge xCodeEval programs generated elsewhere (JSONL) and print pass@k",
    ),
    Command(
        ("judge",),
        "lm_eval_tasks.judge_later:main",
        "judge the execution-scored tasks of an lm_eval --predict_only run (OUT)",
    ),
    Command(
        ("oracle", "infilling"),
        "lm_eval_tasks.code_infilling.oracle:main",
        "check that every gold middle of the infilling rows resolves",
    ),
    Command(
        ("leaderboard", "run"),
        "lm_eval_tasks.reporting.leaderboard:main",
        "run lm-eval for every (model, task set) of a leaderboard YAML, resumable",
    ),
    Command(
        ("report",),
        "lm_eval_tasks.reporting.report:main",
        "Markdown, CSV/JSON and PNG report from lm-eval output or leaderboard folders",
    ),
    Command(
        ("demo", "xcodeeval-chatgpt"),
        "lm_eval_tasks.reporting.demo:main",
        "judge the bundled real ChatGPT programs on sample tests and write a report",
    ),
    Command(
        ("metric-path",),
        "code_eval_taskpack.utils.evaluate_metrics.__main__:main",
        "print the path to pass to evaluate.load() for execution pass@k",
    ),
    Command(
        ("tasks-path",),
        "lm_eval_tasks.cli:print_tasks_path",
        "print the folder to pass to lm_eval --include_path",
    ),
)


def print_tasks_path(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="code-eval tasks-path", description="Print the folder for lm_eval --include_path."
    )
    parser.parse_args(argv)
    print(PATH)
    return 0


def version() -> str:
    """The installed package's version, from its metadata."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


def _resolve(target: str) -> Callable[[list[str]], int]:
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


def _help(prefix: tuple[str, ...]) -> str:
    """The subcommands below `prefix`, one line each."""
    rows = []
    for cmd in COMMANDS:
        if cmd.words[: len(prefix)] == prefix:
            rows.append(("code-eval " + " ".join(cmd.words), cmd.summary))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name.ljust(width)}  {summary}" for name, summary in rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        print(f"code-eval {version()}")
        return 0
    prefix: tuple[str, ...] = ()
    while True:
        for cmd in COMMANDS:
            if cmd.words == prefix:
                return int(_resolve(cmd.target)(args) or 0)
        below = [c for c in COMMANDS if c.words[: len(prefix)] == prefix]
        if not below:
            break
        if not args or args[0] in ("-h", "--help"):
            where = " ".join(("code-eval", *prefix))
            usage = f"usage: {where} COMMAND [ARGS...]"
            if not prefix:
                usage += f"\n       {where} --version"
            print(f"{usage}\n\ncommands:\n{_help(prefix)}")
            return 0 if args else 2
        word = args.pop(0)
        if not any(c.words[len(prefix)] == word for c in below):
            break
        prefix = (*prefix, word)
        continue
    where = " ".join(("code-eval", *prefix))
    print(f"{where}: unknown command {word!r}\n\ncommands:\n{_help(prefix)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
