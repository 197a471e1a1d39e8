"""Who may reach a judge server: loopback only, unless a bearer token guards it.

A judge server runs whatever code it is sent, so `serve` binds to 127.0.0.1 by default and any
other address needs a token file (`--token-file`). Clients send the token as
`Authorization: Bearer <token>`; the server compares it in constant time and answers 401
otherwise. The token travels in clear over plain HTTP: put the server on a private network or
behind a TLS proxy (the remote backend accepts `https://` URLs).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import stat
from pathlib import Path

#: shortest accepted token (characters), so a guessable word is never a server's only guard
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 4096


class TokenError(ValueError):
    """An unusable token file (missing, too short, readable by others...)."""


def read_token(path: str | Path) -> str:
    """The token in `path` (surrounding whitespace stripped), checked: at least
    MIN_TOKEN_CHARS printable ASCII characters and no group/other permission bits."""
    p = Path(path)
    try:
        st = p.stat()
        raw = p.read_bytes()[: MAX_TOKEN_CHARS + 2]
    except OSError as exc:
        raise TokenError(f"cannot read the token file {p}: {exc.strerror or exc}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenError(f"token file {p} is readable by others: chmod 600 it")
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise TokenError(f"token file {p}: the token must be printable ASCII") from None
    if not token.isprintable() or any(c.isspace() for c in token):
        raise TokenError(f"token file {p}: the token must be one word of printable ASCII")
    if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
        raise TokenError(
            f"token file {p}: the token must have {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters"
        )
    return token


def bearer_matches(header: str | None, token: str) -> bool:
    """True when an `Authorization` header carries `token` (constant-time comparison)."""
    if not header:
        return False
    scheme, _, given = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode("ascii"))


def is_loopback(host: str) -> bool:
    """True for addresses only this machine reaches ("localhost", 127.0.0.0/8, ::1); an empty
    host or 0.0.0.0 listens everywhere and is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_refusal(host: str, token: str | None) -> str:
    """Why a server may not listen on `host` ("" when it may)."""
    if token or is_loopback(host):
        return ""
    return (
        f"refusing to serve on {host or 'every address'} without a token: a judge server runs "
        "any code it is sent; pass --token-file (a file with a secret of at least "
        f"{MIN_TOKEN_CHARS} characters, mode 600) or bind to 127.0.0.1"
    )


def new_token() -> str:
    """A fresh random token (for `code-exec token` and tests)."""
    return os.urandom(24).hex()
