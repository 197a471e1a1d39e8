"""A deadline on a socket: a timer that shuts the socket down when an exchange outlives it, so
that a blocked connect, send or read returns at once (a peer dripping a byte a second never
resets it). The HTTP server ends the reading side of a connection whose request line, headers
or body take too long (it then answers 408); the remote backend's client ends both sides of an
exchange with a judge server that outlives its deadline."""

from __future__ import annotations

import contextlib
import socket
import threading


class Deadline:
    """Shuts `sock` down (`how`: `socket.SHUT_RD`, `SHUT_WR` or `SHUT_RDWR`) after `seconds`
    unless cancelled first; `expired` says whether it did."""

    def __init__(self, sock: socket.socket, seconds: float, how: int = socket.SHUT_RDWR) -> None:
        self.expired = False
        self._sock = sock
        self._how = how
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.expired = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(self._how)

    def cancel(self) -> None:
        self._timer.cancel()
