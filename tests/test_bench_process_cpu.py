"""The benches' CPU accounting (bench/process_cpu.py): each process of the tree is booked to
the part it is, and what a process reaped counts where its children belong."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import process_cpu

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_a_reaped_child_counts_as_programs_and_the_driver_as_itself() -> None:
    before = process_cpu.by_part()
    subprocess.run([sys.executable, "-c", BURN.format(s=0.3)], check=True)
    exec(compile(BURN.format(s=0.2), "burn", "exec"))
    used = process_cpu.spent(before, process_cpu.by_part())
    assert used["programs"] >= 0.25
    assert used["driver"] >= 0.15


def test_a_node_judge_its_children_and_ray_daemons_are_told_apart(tmp_path: Path) -> None:
    """A process titled as Ray titles a node judge: its own CPU is the judge's, a child it
    started (alive) and one it reaped are programs; a process titled as a Ray worker is Ray's."""
    started, ready, burnt = (tmp_path / name for name in ("started", "ready", "burnt"))
    live = BURN.format(s=0.3) + f"open({str(burnt)!r}, 'w').close()\ntime.sleep(60)\n"
    judge = (
        "import subprocess, time\n"
        f"child = subprocess.Popen([{sys.executable!r}, '-c', {live!r}])\n"
        f"subprocess.run([{sys.executable!r}, '-c', {BURN.format(s=0.2)!r}])\n"
        + BURN.format(s=0.2)
        + f"open({str(started)!r}, 'w').close()\ntime.sleep(60)\n"
    )
    daemon = BURN.format(s=0.2) + f"open({str(ready)!r}, 'w').close()\ntime.sleep(60)\n"
    before = process_cpu.by_part()
    procs = [
        subprocess.Popen(
            ["bash", "-c", f'exec -a "{title}" "{sys.executable}" -c "$0"', script],
            start_new_session=True,
        )
        for title, script in (("ray::NodeJudge", judge), ("ray::IDLE", daemon))
    ]
    try:
        deadline = time.monotonic() + 30
        while not all(f.exists() for f in (started, ready, burnt)) and time.monotonic() < deadline:
            time.sleep(0.05)
        used = process_cpu.spent(before, process_cpu.by_part())
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)  # the judge's live child too
            p.wait()
    assert all(f.exists() for f in (started, ready, burnt))
    assert used["node judge"] >= 0.15
    assert used["programs"] >= 0.4  # the live child's 0.3 and the reaped one's 0.2
    assert used["ray daemons"] >= 0.15
