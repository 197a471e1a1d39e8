"""The one routine that turns a model reply into a program.

Chat models wrap code in Markdown fences, often with prose around it and sometimes several
blocks; base models continue the prompt with bare code followed by chatter. The rules, in order:

1. If the reply has fenced blocks (``` or ~~~, with or without a language tag), take the block
   whose tag matches the wanted language, else the longest block. An unterminated final fence
   (the generation hit its token limit) still counts as a block.
2. Otherwise the reply is code: strip a leading "Here is the code:"-style line only when it ends
   with a colon and the rest is non-empty.
3. A language whose programs need an opening tag (`open_tag` in `utils/languages.toml`: PHP's
   `<?php`) gets it in front of a program that has none: without it PHP prints the program as
   text, and models often leave it out of a fenced block (64 of the 106 PHP replies of the
   shared ChatGPT set do).
"""

from __future__ import annotations

import re

from . import languages

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([^\n`]*)\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)


def _tags_for(language: str | None) -> set[str]:
    """The fence tags of a language named by its cluster name or one of its tags
    (`utils/languages.toml`); an unknown name stands for itself."""
    if not language:
        return set()
    key = language.strip().lower()
    known = languages.for_tag(key)
    return set(known.fence_tags) if known else {key}


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """All (tag, body) fenced blocks in order of appearance."""
    return [(m.group(2).strip().lower(), m.group(3)) for m in _FENCE.finditer(text)]


def extract_code(text: str, language: str | None = None) -> str:
    """The program in a model reply (see module docstring for the rules)."""
    code = _program(text, language)
    known = languages.for_tag(language) if language else None
    if known and known.open_tag and code.strip() and known.open_tag not in code:
        code = f"{known.open_tag}\n{code}"
    return code


def _program(text: str, language: str | None) -> str:
    """Rules 1 and 2 of the module docstring."""
    blocks = fenced_blocks(text)
    if blocks:
        wanted = _tags_for(language)
        tagged = [body for tag, body in blocks if tag.split()[0:1] and tag.split()[0] in wanted]
        pool = tagged or [body for _, body in blocks]
        return max(pool, key=len).strip("\n")
    # split on "\n" only: str.splitlines would also break at form feeds, \x1c-\x1e, \u2028 ...
    # inside string literals and silently change the program
    lines = text.strip("\n").split("\n")
    if len(lines) > 1 and lines[0].rstrip().endswith(":") and " " in lines[0].strip():
        first = lines[0].strip()
        # a prose lead-in, not code such as "def f():" or "int main() {"
        if not re.match(r"^(def|class|for|while|if|elif|else|try|except|with|case)\b", first):
            lines = lines[1:]
    return "\n".join(lines).strip("\n")
