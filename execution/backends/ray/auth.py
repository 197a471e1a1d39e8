"""Token authentication for the Ray cluster the backend starts or joins.

Ray (since 2.52) checks a shared bearer token on every control-plane request when
`RAY_AUTH_MODE=token` is set on every node and on the driver. Whoever reaches a Ray cluster
without it can run code on every node, so the backend always asks for token mode: for a local
cluster it starts, the token is the one given (`--token-file FILE`, mode 600) or else a fresh one
the backend writes itself (`private_token_file`: mode 600 in a folder of mode 700, both checked
before Ray starts, removed when the backend closes), never the file Ray would write
(`~/.ray/auth_token`, readable by every user of the machine); for a cluster it joins, the token
is the one the nodes were started with (`--token-file FILE`, or Ray's own `RAY_AUTH_TOKEN` /
`RAY_AUTH_TOKEN_PATH` / `~/.ray/auth_token`). A node that reports it runs without token
authentication makes the cluster refused (`node_refusal`), never used.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ...auth import TokenError, read_token

MODE_ENV = "RAY_AUTH_MODE"
TOKEN_ENV = "RAY_AUTH_TOKEN"
TOKEN_PATH_ENV = "RAY_AUTH_TOKEN_PATH"


class TokenEnvironment:
    """The driver process's Ray authentication settings while the backend is connected; the
    previous ones come back on `restore` (a later cluster of the same process is not handed
    a token file that is gone)."""

    def __init__(self, token_file: str = "", starts_cluster: bool = False) -> None:
        self.token_file = token_file
        #: the backend starts the cluster itself: without a given token it makes its own
        self.starts_cluster = starts_cluster
        if token_file:
            read_token(token_file)  # a TokenError (ValueError) when unusable, before Ray runs
        self._saved: dict[str, str | None] | None = None
        self._private: Path | None = None  # the folder of the token made here

    def apply(self) -> None:
        """Token mode for this process (and the nodes it starts); a TokenError when the token
        cannot be had privately, before Ray runs."""
        wanted: dict[str, str | None] = {MODE_ENV: "token"}
        token_file = self.token_file
        if not token_file and self.starts_cluster:
            token_file = str(private_token_file())
            self._private = Path(token_file).parent
        if token_file:
            read_token(token_file)
            wanted[TOKEN_PATH_ENV] = os.path.abspath(token_file)
            wanted[TOKEN_ENV] = None  # it would win over the file
        self._saved = {k: os.environ.get(k) for k in wanted}
        _set(wanted)
        _refresh_ray()

    def restore(self) -> None:
        if self._saved is not None:
            _set(self._saved)
            self._saved = None
            _refresh_ray()
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None


#: the token's folder and file: the owner's alone
PRIVATE_DIR_MODE, PRIVATE_FILE_MODE = 0o700, 0o600


def private_token_file() -> Path:
    """A fresh token for a cluster this process starts, in a new folder: the folder is made
    0700 and the file created 0600 (exclusively, never through a link) before any byte of the
    token is written, and both are checked afterwards; a TokenError when any of it fails
    (the cluster is then not started, rather than started with a token others can read)."""
    try:
        folder = Path(tempfile.mkdtemp(prefix="code-eval-ray-auth-"))
    except OSError as exc:
        raise TokenError(f"cannot make a private folder for the Ray token: {exc}") from None
    try:
        path = folder / "auth_token"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)  # exact whatever the umask
            if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_FILE_MODE:
                raise TokenError(f"the Ray token file {path} did not get mode 600")
            os.write(fd, secrets.token_hex(32).encode("ascii"))
        finally:
            os.close(fd)
        st = os.lstat(folder)
        if (
            not stat.S_ISDIR(st.st_mode)
            or stat.S_IMODE(st.st_mode) != PRIVATE_DIR_MODE
            or st.st_uid != os.geteuid()
        ):
            raise TokenError(f"the Ray token folder {folder} is not this user's alone (mode 700)")
        read_token(path)
    except (OSError, TokenError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, TokenError):
            raise
        raise TokenError(f"cannot write a private Ray token: {exc}") from None
    return path


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
