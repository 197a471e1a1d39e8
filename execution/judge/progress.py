"""A progress bar on stderr that never floods a log file.

On a terminal: tqdm when installed, else a dependency-free bar redrawn in place. Anywhere else
(a log file, a pipe, CI): one plain line per `LOG_STEP_PERCENT` percent of progress or per
`LOG_INTERVAL_S` seconds, whichever comes first, and a final line; never one line per update.
`update(done)` takes the absolute count and may be called from any thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

LOG_STEP_PERCENT = 5
LOG_INTERVAL_S = 30.0


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or file-like without isatty
        return False


class Progress:
    def __init__(
        self,
        total: int,
        desc: str = "judging",
        enabled: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.desc = desc
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self.done = 0
        self._clock = clock
        self._tty = _isatty(self.stream)
        self._lock = threading.Lock()
        self._start = clock()
        self._last_draw = self._start
        self._last_step = 0  # in units of LOG_STEP_PERCENT
        self._logged_done = -1
        self._tqdm: Any = None
        if self.enabled and self._tty:
            try:
                from tqdm import tqdm
            except ImportError:
                self._tqdm = None
            else:
                self._tqdm = tqdm(
                    total=total, desc=desc, unit="job", file=self.stream, dynamic_ncols=True
                )

    def update(self, done: int) -> None:
        with self._lock:
            done = min(max(done, self.done), self.total)
            step, self.done = done - self.done, done
            if not self.enabled or step == 0:
                return
            if self._tqdm is not None:
                self._tqdm.update(step)
            elif self._tty:
                self._draw_bar(final=False)
            else:
                self._log_line(final=False)

    def close(self) -> None:
        with self._lock:
            if not self.enabled:
                return
            if self._tqdm is not None:
                self._tqdm.close()
            elif self._tty:
                self._draw_bar(final=True)
                self.stream.write("\n")
                self.stream.flush()
            else:
                self._log_line(final=True)
            self.enabled = False

    def _draw_bar(self, final: bool) -> None:
        now = self._clock()
        if not final and now - self._last_draw < 0.2 and self.done != self.total:
            return
        width = 30
        filled = width * self.done // self.total
        self.stream.write(
            f"\r{self.desc}: [{'#' * filled}{'.' * (width - filled)}] {self._summary(now)}"
        )
        self._last_draw = now
        self.stream.flush()

    def _log_line(self, final: bool) -> None:
        """Logs: a line when progress crosses the next step or the interval has passed."""
        now = self._clock()
        step = 100 * self.done // self.total // LOG_STEP_PERCENT
        due = step > self._last_step or now - self._last_draw >= LOG_INTERVAL_S
        if final:
            due = self.done != self._logged_done
        if not due:
            return
        self._last_step = step
        self._last_draw = now
        self._logged_done = self.done
        self.stream.write(f"{self.desc}: {self._summary(now)}\n")
        self.stream.flush()

    def _summary(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        return f"{self.done}/{self.total} ({100 * self.done // self.total}%) {self.done / elapsed:.1f} jobs/s"
