"""Uids of sandboxed programs (as root): a random one per sandbox, >= 200000, above every
account of the host."""

from __future__ import annotations

import random
import threading

_uid_lock = threading.Lock()
_uid_rng = random.Random()


def allocate_uid() -> int:
    with _uid_lock:
        return 200000 + _uid_rng.randrange(0, 1_000_000)
