"""Token authentication for the Ray cluster the backend starts or joins.

Ray (since 2.52) checks a shared bearer token on every control-plane request when
`RAY_AUTH_MODE=token` is set on every node and on the driver. Whoever reaches a Ray cluster
without it can run code on every node, so the backend always asks for token mode: for a local
cluster it starts, Ray makes a token (`~/.ray/auth_token`) unless one is given; for a cluster it
joins, the token is the one the nodes were started with (`--token-file FILE`, mode 600, or Ray's
own `RAY_AUTH_TOKEN` / `RAY_AUTH_TOKEN_PATH` / `~/.ray/auth_token`). A node that reports it
runs without token authentication makes the cluster refused (`node_refusal`), never used.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Mapping

from ..auth import read_token

MODE_ENV = "RAY_AUTH_MODE"
TOKEN_ENV = "RAY_AUTH_TOKEN"
TOKEN_PATH_ENV = "RAY_AUTH_TOKEN_PATH"


class TokenEnvironment:
    """The driver process's Ray authentication settings while the backend is connected; the
    previous ones come back on `restore` (a later cluster of the same process is not handed
    a token file that is gone)."""

    def __init__(self, token_file: str = "") -> None:
        self.token_file = token_file
        if token_file:
            read_token(token_file)  # a TokenError (ValueError) when unusable, before Ray runs
        self._saved: dict[str, str | None] | None = None

    def apply(self) -> None:
        wanted: dict[str, str | None] = {MODE_ENV: "token"}
        if self.token_file:
            read_token(self.token_file)
            wanted[TOKEN_PATH_ENV] = os.path.abspath(self.token_file)
            wanted[TOKEN_ENV] = None  # it would win over the file
        self._saved = {k: os.environ.get(k) for k in wanted}
        _set(wanted)
        _refresh_ray()

    def restore(self) -> None:
        if self._saved is not None:
            _set(self._saved)
            self._saved = None
            _refresh_ray()


def _set(values: Mapping[str, str | None]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _refresh_ray() -> None:
    """Make this process's Ray read the mode and the token again (it caches both)."""
    with contextlib.suppress(Exception):
        raylet = importlib.import_module("ray._raylet")  # Ray's own, pinned (no public API)
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()


def node_refusal(modes: Mapping[str, str]) -> str:
    """Why a cluster whose nodes report these authentication modes (node name -> mode) may not
    judge ("" when every node requires the token)."""
    open_nodes = sorted(name for name, mode in modes.items() if mode != "token")
    if not open_nodes:
        return ""
    return (
        f"Ray node(s) {', '.join(open_nodes)} run without token authentication (anyone reaching "
        f"the cluster could run code on them): start every node with {MODE_ENV}=token and the "
        "cluster's token (ray get-auth-token --generate; README, 'Scaling out')"
    )
