"""Progress output never floods a log: a line per 5% or per 30 s when stderr is not a terminal."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.judge.progress import LOG_INTERVAL_S, LOG_STEP_PERCENT, Progress
from tests.conftest import ROOT


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_stream_gets_a_line_per_step_not_per_update() -> None:
    stream = io.StringIO()  # not a terminal, and tqdm is installed (dev extra)
    bar = Progress(848, desc="judging demo", stream=stream)
    for done in range(1, 849):
        bar.update(done)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()  # no tqdm redraws in a log
    assert len(lines) <= 100 // LOG_STEP_PERCENT + 1
    assert len(lines) >= 100 // LOG_STEP_PERCENT  # but progress is still visible
    assert all(line.startswith("judging demo: ") for line in lines)
    assert lines[-1].startswith("judging demo: 848/848 (100%)")
    percents = [int(line.split("(")[1].split("%")[0]) for line in lines]
    assert percents == sorted(percents)


def test_log_stream_gets_a_line_every_interval_when_progress_is_slow() -> None:
    clock = FakeClock()
    stream = io.StringIO()
    bar = Progress(10_000, desc="slow", stream=stream, clock=clock)
    for done in range(1, 41):  # 0.4% in total: no 5% step is crossed
        clock.now += 10.0
        bar.update(done)
    # 400 s of updates every 10 s: a line per 30 s, not one per update
    lines = stream.getvalue().splitlines()
    assert len(lines) == int(400 // LOG_INTERVAL_S)
    bar.close()
    assert stream.getvalue().splitlines()[-1].startswith("slow: 40/10000 (0%)")


def test_close_after_last_line_does_not_repeat_it() -> None:
    stream = io.StringIO()
    bar = Progress(4, stream=stream)
    for done in range(1, 5):
        bar.update(done)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4 and len(set(lines)) == 4
    assert lines[-1].startswith("judging: 4/4 (100%)")


def test_terminal_keeps_a_live_bar() -> None:
    stream = Terminal()
    bar = Progress(50, desc="tty", stream=stream)
    for done in range(1, 51):
        bar.update(done)
    bar.close()
    assert "\r" in stream.getvalue()  # redrawn in place (tqdm or the built-in bar)


def test_stderr_redirected_to_a_file_by_default(tmp_path: Path) -> None:
    """The default stream is sys.stderr; redirected to a file it is a log, not a terminal."""
    log = tmp_path / "stderr.log"
    code = (
        "from execution.judge.progress import Progress\n"
        "bar = Progress(848, desc='judging')\n"
        "[bar.update(i) for i in range(1, 849)]\n"
        "bar.close()\n"
    )
    with open(log, "w") as err:
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, stderr=err, check=True)
    lines = log.read_text().splitlines()
    assert 1 <= len(lines) <= 21, lines[:5]
    assert lines[-1].startswith("judging: 848/848 (100%)")


def test_hub_download_bars_are_off_in_logs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import huggingface_hub
    from huggingface_hub.utils import are_progress_bars_disabled

    from code_eval_taskpack.utils import download

    seen: list[bool] = []

    def fake_download(**kwargs: Any) -> str:
        seen.append(are_progress_bars_disabled())
        return "/nowhere/" + kwargs["filename"]

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.setattr(download, "_stderr_is_terminal", lambda: False)
    assert download.fetch_hub_file("org/repo", "big.json") == Path("/nowhere/big.json")
    monkeypatch.setattr(download, "_stderr_is_terminal", lambda: True)
    download.fetch_hub_file("org/repo", "big.json")
    assert seen == [True, False]  # off in a log, on at a terminal
    assert not are_progress_bars_disabled()  # restored
    assert "fetching org/repo/big.json" in capsys.readouterr().err
