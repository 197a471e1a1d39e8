"""`code-eval`: one command tree over the pack's modules, `--help` on every level."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from lm_eval_tasks import PATH
from lm_eval_tasks.cli import COMMANDS, main


def test_every_subcommand_names_a_real_main() -> None:
    for cmd in COMMANDS:
        module, _, func = cmd.target.partition(":")
        assert callable(getattr(importlib.import_module(module), func)), cmd


@pytest.mark.parametrize(
    "argv", [["--help"], ["score", "--help"], ["oracle", "--help"], ["leaderboard", "--help"]]
)
def test_help_on_the_inner_levels_lists_the_commands_below(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    out = capsys.readouterr().out
    below = [c for c in COMMANDS if argv[0] == "--help" or c.words[0] == argv[0]]
    assert below and all(("code-eval " + " ".join(c.words)) in out for c in below)


@pytest.mark.parametrize("words", [c.words for c in COMMANDS])
def test_help_of_every_leaf_is_its_own_parser(
    words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*words, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    # the usage line names the command as typed (`exec` is also the `code-exec` script)
    program = "code-exec" if words == ("exec",) else "code-eval " + " ".join(words)
    assert out.startswith(f"usage: {program} "), out[:200]
    # every --workers option says what it is
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("--workers"):
            rest = line.split(None, 2)[2:] or [lines[i + 1].strip()]
            assert rest[0] and not rest[0].startswith("-"), (words, line)


def test_version_is_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"code-eval {version('code-eval-taskpack')}\n"
    assert main(["--help"]) == 0 and "code-eval --version" in capsys.readouterr().out


def test_oracle_fails_on_bad_input_with_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "rows.jsonl"
    empty.write_text("")
    argv = ["oracle", "infilling", "--grader", "local", "--repos-dir", str(tmp_path)]
    assert main([*argv, "--data", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("code-eval oracle infilling: error: ") and "no rows" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main([*argv, "--data", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "missing.jsonl" in err and err.count("\n") == 1


def test_unknown_and_missing_commands_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nonsense"]) == 2
    assert "unknown command 'nonsense'" in capsys.readouterr().err
    assert main(["score", "humaneval"]) == 2
    assert "code-eval score: unknown command 'humaneval'" in capsys.readouterr().err
    assert main(["score"]) == 2


def test_console_script_dispatches(tmp_path: object) -> None:
    """The installed `code-eval` script reaches the engine and the tasks folder."""
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "tasks-path"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(PATH)
    doctor = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "exec", "doctor", "--help"],
        capture_output=True,
        text=True,
    )
    assert doctor.returncode == 0 and "doctor" in doctor.stdout
