"""A progress bar on stderr: tqdm when installed, else a dependency-free one.

`update(done)` takes the absolute count and may be called from any thread.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO


class Progress:
    def __init__(
        self, total: int, desc: str = "judging", enabled: bool = True, stream: TextIO | None = None
    ) -> None:
        self.total = total
        self.desc = desc
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self.done = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._last_decile = -1
        self._tqdm: Any = None
        if self.enabled:
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
            if not self.enabled or (step == 0 and done != self.total):
                return
            if self._tqdm is not None:
                self._tqdm.update(step)
            else:
                self._draw(final=False)

    def close(self) -> None:
        with self._lock:
            if not self.enabled:
                return
            if self._tqdm is not None:
                self._tqdm.close()
            else:
                self._draw(final=True)
                if self.stream.isatty():
                    self.stream.write("\n")
                self.stream.flush()
            self.enabled = False

    def _draw(self, final: bool) -> None:
        now = time.monotonic()
        tty = self.stream.isatty()
        if tty:
            if not final and now - self._last_draw < 0.2 and self.done != self.total:
                return
            width = 30
            filled = width * self.done // self.total
            self.stream.write(
                f"\r{self.desc}: [{'#' * filled}{'.' * (width - filled)}] {self._summary(now)}"
            )
        else:  # logs: one line per 10%
            decile = 10 * self.done // self.total
            if decile == self._last_decile:
                return
            self._last_decile = decile
            self.stream.write(f"{self.desc}: {self._summary(now)}\n")
        self._last_draw = now
        self.stream.flush()

    def _summary(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        return f"{self.done}/{self.total} ({100 * self.done // self.total}%) {self.done / elapsed:.1f} jobs/s"
