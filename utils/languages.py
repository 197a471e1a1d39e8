"""The benchmarks' language table: task slugs, fence tags, file extensions and comment syntax.

The data lives in `languages.toml` next to this module, keyed by the engine's cluster names;
loading it checks that it names exactly the engine's clusters (`execution/languages/languages.toml`), so a
language can never be runnable but missing from the prompts, or the other way round. Prompt
building, answer parsing and the per-language task lists read this module; nothing else in the
pack spells language names.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.languages.registry import REGISTRY_PATH, load_registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CATALOG_PATH = Path(__file__).with_name("languages.toml")
_KEYS = ("name", "fence", "fence_tags", "extensions", "comment")


@dataclass(frozen=True)
class Language:
    """One row of the table (see languages.toml for the meaning of each field)."""

    key: str  # the cluster name (or the prompt-only language's name)
    name: str
    fence: str
    fence_tags: frozenset[str]
    extensions: tuple[str, ...]
    comment: str
    slug: str = ""  # "" for prompt-only languages
    open_tag: str = ""  # "" when a program needs no opening tag

    @property
    def runnable(self) -> bool:
        return bool(self.slug)


@dataclass(frozen=True)
class Catalog:
    languages: tuple[Language, ...]  # every row, engine clusters first, in file order

    @property
    def clusters(self) -> tuple[Language, ...]:
        """The rows the engine can run (one per cluster)."""
        return tuple(lang for lang in self.languages if lang.runnable)

    def slugs(self) -> dict[str, str]:
        """Task-name suffix -> cluster, sorted by suffix (the order of task lists)."""
        return dict(sorted((lang.slug, lang.key) for lang in self.clusters))

    def for_tag(self, tag: str) -> Language | None:
        """The language a cluster name or fence tag names (case-insensitive), if any."""
        key = tag.strip().casefold()
        for lang in self.languages:
            if key == lang.key.casefold() or key in lang.fence_tags:
                return lang
        return None

    def for_path(self, file_path: str) -> Language | None:
        """The language of a file, from its extension, if known."""
        suffix = Path(file_path).suffix.lower()
        for lang in self.languages:
            if suffix in lang.extensions:
                return lang
        return None


def _text(raw: dict[str, Any], field: str, where: str) -> str:
    value = raw.get(field)
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ValueError(f"{where}: field {field!r} must be a non-empty string, got {value!r}")
    return value


def _texts(raw: dict[str, Any], field: str, where: str) -> tuple[str, ...]:
    value = raw.get(field)
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: field {field!r} must be a non-empty list, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item or item != item.strip().lower():
            raise ValueError(f"{where}: {field!r} entry {item!r} must be lower-case, no spaces")
    return tuple(value)


def _row(key: str, raw: Any, where: str, runnable: bool) -> Language:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a table")
    known = {*_KEYS, "open_tag", "slug"} if runnable else {*_KEYS, "open_tag"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}")
    tags = _texts(raw, "fence_tags", where)
    fence = _text(raw, "fence", where)
    if fence not in tags:
        raise ValueError(f"{where}: fence {fence!r} is not one of its fence_tags")
    extensions = _texts(raw, "extensions", where)
    if not all(e.startswith(".") for e in extensions):
        raise ValueError(f"{where}: extensions must start with a dot, got {list(extensions)}")
    return Language(
        key=key,
        name=_text(raw, "name", where),
        fence=fence,
        fence_tags=frozenset(tags),
        extensions=extensions,
        comment=_text(raw, "comment", where),
        slug=_text(raw, "slug", where) if runnable else "",
        open_tag=_text(raw, "open_tag", where) if "open_tag" in raw else "",
    )


def _unique(values: Iterable[tuple[str, str]], what: str, path: Path) -> None:
    seen: dict[str, str] = {}
    for value, owner in values:
        if value in seen and seen[value] != owner:
            raise ValueError(
                f"{path}: {what} {value!r} belongs to both {seen[value]!r} and {owner!r}"
            )
        seen[value] = owner


def load_catalog(path: Path = CATALOG_PATH, engine_registry: Path = REGISTRY_PATH) -> Catalog:
    """Parse and validate the table; its clusters must be exactly the engine registry's."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    unknown = sorted(set(data) - {"languages", "prompt_only"})
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {', '.join(unknown)}")
    rows = [
        _row(str(k), v, f'{path}: [languages."{k}"]', True)
        for k, v in data.get("languages", {}).items()
    ]
    rows += [
        _row(str(k), v, f'{path}: [prompt_only."{k}"]', False)
        for k, v in data.get("prompt_only", {}).items()
    ]
    engine = tuple(load_registry(engine_registry).clusters)
    ours = [lang.key for lang in rows if lang.runnable]
    if sorted(ours) != sorted(engine):
        raise ValueError(
            f"{path} and {engine_registry} name different languages: "
            f"only here {sorted(set(ours) - set(engine))}, "
            f"only in the engine {sorted(set(engine) - set(ours))}"
        )
    prompt_only = [lang.key for lang in rows if not lang.runnable]
    if set(prompt_only) & set(engine):
        raise ValueError(f"{path}: prompt_only {prompt_only} names an engine cluster")
    _unique(((lang.slug, lang.key) for lang in rows if lang.runnable), "slug", path)
    _unique(((t, lang.key) for lang in rows for t in lang.fence_tags), "fence tag", path)
    _unique(((e, lang.key) for lang in rows for e in lang.extensions), "extension", path)
    return Catalog(languages=tuple(rows))


@functools.lru_cache(maxsize=1)
def catalog() -> Catalog:
    return load_catalog()


def xcodeeval_slugs() -> dict[str, str]:
    """Task-name suffix -> cluster of every language (xCodeEval's per-language tasks)."""
    return catalog().slugs()


def for_tag(tag: str) -> Language | None:
    return catalog().for_tag(tag)


def for_path(file_path: str) -> Language | None:
    return catalog().for_path(file_path)
