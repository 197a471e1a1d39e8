"""Cached downloads: plain URLs and files of Hugging Face Hub dataset repositories.

Both are single seams (`fetch_url`, `fetch_hub_file`) so tests can replace the network with a
fake that serves fixture files in the real remote layout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

import execution.cache


def cache_root() -> Path:
    """The project's cache directory (see `execution.cache.cache_root`), created if missing."""
    root = execution.cache.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


def _open_url(url: str, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    return urllib.request.urlopen(url, timeout=timeout)


def fetch_url(url: str) -> Path:
    """Download `url` once into the cache and return the local path (atomic: no partial files)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    name = url.rstrip("/").rsplit("/", 1)[-1] or "download"
    target = cache_root() / "urls" / digest / name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        _open_url(url) as resp,
        tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp,
    ):
        shutil.copyfileobj(resp, tmp)
    os.replace(tmp.name, target)
    return target


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def fetch_hub_file(repo_id: str, filename: str, revision: str | None = None) -> Path:
    """One file of a Hub *dataset* repository, through huggingface_hub's own cache.

    huggingface_hub's tqdm bars write a line per update into a log file, so they are shown on a
    terminal only; in logs one line says what is downloaded.
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    quiet = not _stderr_is_terminal() and not are_progress_bars_disabled()
    if quiet:
        print(f"fetching {repo_id}/{filename} from the Hub (or its cache)", file=sys.stderr)
        disable_progress_bars()
    try:
        return Path(
            hf_hub_download(
                repo_id=repo_id, filename=filename, repo_type="dataset", revision=revision
            )
        )
    finally:
        if quiet:
            enable_progress_bars()
