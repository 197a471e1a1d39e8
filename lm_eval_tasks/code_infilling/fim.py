"""Fill-in-the-middle prompt formats, prompt packing and generation clean-up.

A format is data (see `fim_formats.json` beside this module, or a user's JSON object with the
same fields): a `template` with the placeholders `{repo} {file_path} {language} {language_tag}
{comment} {context} {prefix} {suffix}`, a `context_item` rendered once per repository snippet
(`{file_path} {content} {language} {language_tag} {comment}`), an optional `context_intro` written before
the snippets when there are any, the `sentinels` the template must contain literally, the
`stop` strings that end a generation, and `chat: true` for instruction prompts whose answer is
the code block of the reply.

Packing fits a prompt into a budget measured in tokens (a tokenizer's `encode`) or characters,
without ever touching the template's own text, so sentinels are never cut (lm-eval's left
truncation of an over-long prompt would cut the leading ones). The code nearest the hole matters
most, so the budget goes first to the end of the prefix (up to half of what the template leaves)
and the start of the suffix (up to a quarter), then to whole context snippets in rank order
(lowest `rank` first, i.e. the retriever's best; a snippet that does not fit ends the list so a
worse-ranked snippet never displaces a better one), and whatever is left goes back to the prefix
and then the suffix. Cuts fall on line boundaries whenever the kept part spans one. Snippets are
written worst first so the best one sits next to the file being completed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_eval_taskpack.utils import languages
from code_eval_taskpack.utils.code_extraction import extract_code

FORMATS_FILE = Path(__file__).resolve().parent / "fim_formats.json"

#: Default budget when no tokenizer is given: about 4-5k tokens of Python for common code
#: tokenizers (3.5-4 characters per token), which leaves room for the generation in an 8k window.
DEFAULT_MAX_PROMPT_CHARS = 16_000
#: Default budget when a tokenizer is given.
DEFAULT_MAX_PROMPT_TOKENS = 4_096

PREFIX_SHARE = 0.5
SUFFIX_SHARE = 0.25

_TEMPLATE_FIELDS = {
    *("repo", "file_path", "language", "language_tag", "comment", "context", "prefix", "suffix")
}
_ITEM_FIELDS = {"file_path", "content", "language", "language_tag", "comment"}
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")

#: What a file of an unknown language is called, fenced and commented with (the line comment of
#: Python, the infilling data's language, keeps the prompts of such files as they always were).
UNKNOWN_LANGUAGE = ("source", "", "#")


class FormatError(ValueError):
    """A FIM format definition is invalid; the message names the format and the field."""


@dataclass(frozen=True)
class FimFormat:
    name: str
    template: str
    context_item: str = ""
    context_intro: str = ""
    sentinels: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()
    chat: bool = False
    description: str = ""

    @classmethod
    def from_dict(cls, name: str, raw: Mapping[str, Any]) -> FimFormat:
        """Build and validate a format; errors name the format and the offending field."""
        if not isinstance(raw, Mapping):
            raise FormatError(f"format {name!r}: expected a JSON object, got {type(raw).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise FormatError(
                f"format {name!r}: unknown field(s) {unknown}; known: {sorted(known)}"
            )

        def text(key: str, required: bool = False) -> str:
            value = raw.get(key, "")
            if not isinstance(value, str) or (required and not value):
                wanted = "a non-empty string" if required else "a string"
                raise FormatError(f"format {name!r}, field {key!r}: expected {wanted}")
            return value

        def strings(key: str) -> tuple[str, ...]:
            value = raw.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise FormatError(f"format {name!r}, field {key!r}: expected a list of strings")
            return tuple(value)

        chat = raw.get("chat", False)
        if not isinstance(chat, bool):
            raise FormatError(f"format {name!r}, field 'chat': expected true or false")
        fmt = cls(
            name=str(raw.get("name") or name),
            template=text("template", required=True),
            context_item=text("context_item"),
            context_intro=text("context_intro"),
            sentinels=strings("sentinels"),
            stop=strings("stop"),
            chat=chat,
            description=text("description"),
        )
        fmt._validate()
        return fmt

    def _validate(self) -> None:
        used = _PLACEHOLDER.findall(self.template)
        bad = sorted(set(used) - _TEMPLATE_FIELDS)
        if bad:
            raise FormatError(
                f"format {self.name!r}, field 'template': unknown placeholder(s) {bad}; "
                f"allowed: {sorted(_TEMPLATE_FIELDS)}"
            )
        for required in ("prefix", "suffix"):
            if used.count(required) != 1:
                raise FormatError(
                    f"format {self.name!r}, field 'template': needs exactly one {{{required}}}"
                )
        bad = sorted(set(_PLACEHOLDER.findall(self.context_item)) - _ITEM_FIELDS)
        if bad:
            raise FormatError(
                f"format {self.name!r}, field 'context_item': unknown placeholder(s) {bad}; "
                f"allowed: {sorted(_ITEM_FIELDS)}"
            )
        fixed = self.template + self.context_item + self.context_intro
        for sentinel in self.sentinels:
            if sentinel not in fixed:
                raise FormatError(
                    f"format {self.name!r}, field 'sentinels': {sentinel!r} does not appear "
                    "in the template"
                )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "template": self.template,
            "context_item": self.context_item,
            "context_intro": self.context_intro,
            "sentinels": list(self.sentinels),
            "stop": list(self.stop),
            "chat": self.chat,
            "description": self.description,
        }


def builtin_formats() -> dict[str, FimFormat]:
    """The formats shipped in `fim_formats.json`, by name."""
    raw = json.loads(FORMATS_FILE.read_text(encoding="utf-8"))
    return {name: FimFormat.from_dict(name, spec) for name, spec in raw.items()}


#: the task variant whose format the user gives at run time (`sg_infilling_format`)
CUSTOM_VARIANT = "custom"


def task_variants() -> tuple[str, ...]:
    """The `sg_infilling_<variant>[_exec]` tasks: one per built-in format, then the user's own."""
    return (*builtin_formats(), CUSTOM_VARIANT)


def load_format(spec: str | Mapping[str, Any]) -> FimFormat:
    """A format from a built-in name, a JSON object (dict or string) or a path to a JSON file."""
    if isinstance(spec, Mapping):
        return FimFormat.from_dict(str(spec.get("name", "custom")), spec)
    text = str(spec).strip()
    builtins = builtin_formats()
    if text in builtins:
        return builtins[text]
    if text.startswith("{"):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(f"format given as JSON text is not valid JSON: {exc}") from exc
        return FimFormat.from_dict(str(raw.get("name", "custom")), raw)
    path = Path(text).expanduser()
    if path.is_file():
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise FormatError(f"{path}: not valid JSON: {exc}") from exc
        return FimFormat.from_dict(str(raw.get("name", path.stem)), raw)
    raise FormatError(
        f"unknown FIM format {text!r}: not a built-in ({', '.join(sorted(builtins))}), "
        "not a JSON object and not an existing JSON file"
    )


def language_of(file_path: str) -> tuple[str, str, str]:
    """(prose name, fence tag, line-comment opener) of a file's language from its extension
    (`utils/languages.toml`); `UNKNOWN_LANGUAGE` when the extension is not in the table."""
    lang = languages.for_path(file_path)
    return (lang.name, lang.fence, lang.comment) if lang else UNKNOWN_LANGUAGE


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Substitute `{name}` placeholders; values are inserted verbatim (braces in code are safe)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True)
class Snippet:
    file_path: str
    content: str
    rank: int


@dataclass(frozen=True)
class Budget:
    """A prompt budget: `limit` units as counted by `measure` (characters or tokens)."""

    limit: int
    measure: Callable[[str], int] = len
    unit: str = "chars"

    @classmethod
    def chars(cls, limit: int = DEFAULT_MAX_PROMPT_CHARS) -> Budget:
        return cls(limit=int(limit), measure=len, unit="chars")

    @classmethod
    def tokens(cls, tokenizer: Any, limit: int = DEFAULT_MAX_PROMPT_TOKENS) -> Budget:
        def count(text: str) -> int:
            return len(tokenizer.encode(text, add_special_tokens=False))

        return cls(limit=int(limit), measure=count, unit="tokens")


@dataclass
class PackedPrompt:
    text: str
    cost: int
    budget: int
    unit: str
    prefix_chars: int  # characters of the prefix kept (its end)
    suffix_chars: int  # characters of the suffix kept (its start)
    snippets_kept: int
    snippets_total: int

    def summary(self) -> dict[str, Any]:
        return {
            "cost": self.cost,
            "budget": self.budget,
            "unit": self.unit,
            "prefix_chars": self.prefix_chars,
            "suffix_chars": self.suffix_chars,
            "snippets_kept": self.snippets_kept,
            "snippets_total": self.snippets_total,
        }


def _largest(n: int, fits: Callable[[int], bool]) -> int:
    """Largest k in [0, n] with fits(k), assuming fits is monotone (true up to some k)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def keep_tail(text: str, cap: float, measure: Callable[[str], int]) -> str:
    """The longest end of `text` costing at most `cap`, starting at a line start if it can."""
    if cap <= 0 or not text:
        return ""
    if measure(text) <= cap:
        return text
    start = len(text) - _largest(len(text), lambda k: measure(text[len(text) - k :]) <= cap)
    kept = text[start:]
    cut = kept.find("\n")
    if text[start - 1] != "\n" and 0 <= cut < len(kept) - 1:
        kept = kept[cut + 1 :]  # drop the partial first line
    return kept


def keep_head(text: str, cap: float, measure: Callable[[str], int]) -> str:
    """The longest start of `text` costing at most `cap`, ending at a line end if it can."""
    if cap <= 0 or not text:
        return ""
    if measure(text) <= cap:
        return text
    n = _largest(len(text), lambda k: measure(text[:k]) <= cap)
    kept = text[:n]
    cut = kept.rfind("\n")
    if cut >= 0 and not kept.endswith("\n"):
        kept = kept[: cut + 1]
    return kept


def _values(repo: str, file_path: str) -> dict[str, str]:
    language, tag, comment = language_of(file_path)
    return {
        "repo": repo,
        "file_path": file_path,
        "language": language,
        "language_tag": tag,
        "comment": comment,
    }


def render_context(fmt: FimFormat, snippets: Sequence[Snippet], file_path: str) -> str:
    """The context block for already chosen snippets, written worst-ranked first."""
    if not snippets or not fmt.context_item:
        return ""
    language, tag, comment = language_of(file_path)
    items = [
        _fill(
            fmt.context_item,
            {
                "file_path": s.file_path,
                "content": s.content,
                "language": language,
                "language_tag": tag,
                "comment": comment,
            },
        )
        for s in sorted(snippets, key=lambda s: s.rank, reverse=True)
    ]
    return fmt.context_intro + "".join(items)


def render(
    fmt: FimFormat,
    *,
    repo: str,
    file_path: str,
    prefix: str,
    suffix: str,
    snippets: Sequence[Snippet] = (),
) -> str:
    """The prompt with everything given, no budget applied."""
    values = _values(repo, file_path)
    values.update(context=render_context(fmt, snippets, file_path), prefix=prefix, suffix=suffix)
    return _fill(fmt.template, values)


def pack(
    fmt: FimFormat,
    *,
    repo: str,
    file_path: str,
    prefix: str,
    suffix: str,
    snippets: Sequence[Snippet],
    budget: Budget,
) -> PackedPrompt:
    """The prompt fitted into `budget` (see the module docstring for what is kept first)."""
    measure = budget.measure

    def build(p: str, s: str, chosen: Sequence[Snippet]) -> str:
        return render(fmt, repo=repo, file_path=file_path, prefix=p, suffix=s, snippets=chosen)

    fixed = measure(build("", "", []))
    available = budget.limit - fixed
    if available < 0:
        raise ValueError(
            f"prompt budget of {budget.limit} {budget.unit} is smaller than format "
            f"{fmt.name!r}'s own text for {file_path!r} ({fixed} {budget.unit})"
        )
    ranked = sorted(snippets, key=lambda s: s.rank)
    p = keep_tail(prefix, available * PREFIX_SHARE, measure)
    s = keep_head(suffix, available * SUFFIX_SHARE, measure)
    left = available - measure(p) - measure(s)
    chosen: list[Snippet] = []
    for snippet in ranked:
        trial = [*chosen, snippet]
        cost = measure(render_context(fmt, trial, file_path))
        if cost > left:
            break
        chosen = trial
    context_cost = measure(render_context(fmt, chosen, file_path))
    # Give what the context did not use back to the code around the hole.
    p = keep_tail(prefix, available - context_cost - measure(s), measure)
    s = keep_head(suffix, available - context_cost - measure(p), measure)
    text = build(p, s, chosen)
    # Token counts of the parts need not add up to the count of the whole: shrink until it fits.
    while measure(text) > budget.limit:
        if chosen:
            chosen = chosen[:-1]
        elif len(p) >= len(s) and p:
            p = keep_tail(p, measure(p) * 0.9, measure)
        elif s:
            s = keep_head(s, measure(s) * 0.9, measure)
        else:  # pragma: no cover - the fixed text alone fitted above
            break
        text = build(p, s, chosen)
    return PackedPrompt(
        text=text,
        cost=measure(text),
        budget=budget.limit,
        unit=budget.unit,
        prefix_chars=len(p),
        suffix_chars=len(s),
        snippets_kept=len(chosen),
        snippets_total=len(ranked),
    )


def clean_generation(
    fmt: FimFormat, generation: str, *, prefix: str, suffix: str, file_path: str
) -> str:
    """The middle a model proposed: cut at the first stop string; for chat, the reply's code.

    Chat answers lose their surrounding newlines in extraction and often repeat the indentation
    that already ends the prefix, so when the hole starts at a line start the answer is ended
    with a newline (it is whole lines), and an indentation already present in the prefix's last
    line is not written twice.
    """
    text = generation
    for stop in fmt.stop:
        at = text.find(stop)
        if at >= 0:
            text = text[:at]
    if not fmt.chat:
        return text
    _, tag, _ = language_of(file_path)
    text = extract_code(text, tag or None)
    last_line = prefix[prefix.rfind("\n") + 1 :]
    at_line_start = last_line.strip() == ""
    if last_line and at_line_start and text.startswith(last_line):
        text = text[len(last_line) :]
    if text and at_line_start and suffix and not text.endswith("\n"):
        text += "\n"
    return text
