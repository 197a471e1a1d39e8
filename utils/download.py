"""Cached downloads: plain URLs and files of Hugging Face Hub dataset repositories.

Both are single seams (`fetch_url`, `fetch_hub_file`) so tests can replace the network with a
fake that serves fixture files in the real remote layout. Benchmark loaders call them through
`download_url` / `download_hub_file`, so a failed download reads the same for every benchmark:
the URL, the task that needed it, and the setting that points at a local copy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

from code_eval_taskpack.execution.caches import files as engine_cache

from .errors import DataError


def cache_root() -> Path:
    """The project's cache directory (see `engine_cache.cache_root`), created if missing."""
    root = engine_cache.cache_root()
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


class DownloadError(DataError):
    """A download that failed, in the one shape every benchmark uses: what was fetched (its URL),
    for which task, and which setting points at a local copy so the run can work offline."""

    def __init__(
        self, location: str, needed_by: str, local_copy: str, cause: BaseException, hint: str = ""
    ):
        self.location = location
        self.needed_by = needed_by
        self.local_copy = local_copy
        super().__init__(
            location,
            f"could not download; {needed_by} needs it ({type(cause).__name__}: {cause}). "
            f"To work offline, point {local_copy} at a local copy{hint}",
        )


def hub_location(repo_id: str, filename: str, revision: str | None = None) -> str:
    """The `hf://` address of a Hub dataset file, as messages show it."""
    at = f"@{revision}" if revision else ""
    return f"hf://datasets/{repo_id}{at}/{filename}"


def download_url(url: str, *, needed_by: str, local_copy: str, hint: str = "") -> Path:
    """`fetch_url`, with any failure raised as a `DownloadError` (see there)."""
    try:
        return fetch_url(url)
    except Exception as exc:  # URLError, HTTPError, timeouts, disk errors: all the same to a user
        raise DownloadError(url, needed_by, local_copy, exc, hint) from exc


def download_hub_file(
    repo_id: str,
    filename: str,
    *,
    needed_by: str,
    local_copy: str,
    revision: str | None = None,
    hint: str = "",
) -> Path:
    """`fetch_hub_file`, with any failure raised as a `DownloadError` (see there)."""
    try:
        return fetch_hub_file(repo_id, filename, revision)
    except Exception as exc:  # offline, auth, missing file: huggingface_hub has many types
        raise DownloadError(
            hub_location(repo_id, filename, revision), needed_by, local_copy, exc, hint
        ) from exc
