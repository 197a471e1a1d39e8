"""Reading classification answers out of free-form model replies.

Replies come as "dp, greedy", "Tags: [\"math\", \"number theory\"]", bullet lists, or prose; the
parsers look for vocabulary items as whole phrases rather than trusting a format, so chat and
base models are read the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def _norm(text: str) -> str:
    """Lower-case; '-', '_' and '*' become spaces; runs of whitespace collapse."""
    return " ".join(re.sub(r"[-_*]", " ", text.lower()).split())


def parse_tags(reply: str, vocabulary: Sequence[str]) -> list[str]:
    """Vocabulary tags named in `reply`, in vocabulary order.

    Longer tags are matched first and their text consumed, so "string suffix structures" does not
    also count as "strings", and "graph matchings" not as "graphs". Matches need word boundaries
    ("dp" is not found inside "dpq"); '-', '_' and spaces are interchangeable ("2-sat", "2 sat").
    """
    text = f" {_norm(reply)} "
    found: set[str] = set()
    for tag in sorted(vocabulary, key=lambda t: (-len(_norm(t)), t)):
        key = _norm(tag)
        if not key:
            continue
        pattern = re.compile(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])")
        if pattern.search(text):
            found.add(tag)
            text = pattern.sub(" | ", text)
    return [t for t in vocabulary if t in found]


_YES_NO = re.compile(r"\b(yes|no)\b", re.I)
_ERROR_PHRASES = re.compile(
    r"(does not|doesn't|won't|will not|would not|fails? to|cannot|can't) compile|compil(e|ation) error",
    re.I,
)
_OK_PHRASES = re.compile(r"\b(compiles|compile successfully|compiles successfully)\b", re.I)


def parse_compile_answer(reply: str) -> str | None:
    """ "compiles", "error" or None (unreadable): the first yes/no wins, then telling phrases."""
    m = _YES_NO.search(reply)
    if m:
        return "compiles" if m.group(1).lower() == "yes" else "error"
    if _ERROR_PHRASES.search(reply):
        return "error"
    if _OK_PHRASES.search(reply):
        return "compiles"
    return None
