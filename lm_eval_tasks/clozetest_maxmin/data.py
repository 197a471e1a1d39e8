"""Loading CodeXGLUE ClozeTest-maxmin inputs and (separately distributed) gold answers.

Inputs are public (CodeXGLUE, MIT); gold answers are not: CodeXGLUE ships placeholders and
OpenCompass distributes only the Python file, inside its `OpenCompassData-core` archive. So inputs
and answers are located independently, and a run without answers either fails loudly or, when the
user asks for predict-only mode, scores NaN instead of a misleading 0.

Settings (lm-eval `--metadata` keys first, then environment variables) are declared in
`lm_eval_tasks.clozetest_maxmin.settings`: the data folder, where the answers are (see
`answers_location` for the accepted forms) and predict-only mode.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_eval_taskpack.utils import datafiles, download
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.settings import parse_settings
from lm_eval_tasks.clozetest_maxmin import settings as cs

# A child of lm-eval's logger, so messages show with lm-eval's own verbosity and handler.
log = logging.getLogger("lm_eval.tasks.clozetest_maxmin")

LANGUAGES: tuple[str, ...] = ("ruby", "javascript", "go", "python", "java", "php")
REMOTE_BASE = (
    "https://raw.githubusercontent.com/microsoft/CodeXGLUE/main/"
    "Code-Code/ClozeTesting-maxmin/data/cloze-maxmin"
)
INPUTS_NAME = "clozeTest.json"
ANSWERS_NAME = "answers.txt"
CODESPLIT = "<CODESPLIT>"
MASK = "<mask>"
LABELS = ("max", "min")
LETTERS = {"max": "A", "min": "B"}
LANG_PLACEHOLDER = "{lang}"
MAX_INPUTS_BYTES = datafiles.MAX_SMALL_JSON_BYTES

DATA_DIR_KEY, DATA_DIR_ENV = cs.DATA_DIR.key, cs.DATA_DIR.env
ANSWERS_KEY, ANSWERS_ENV = cs.ANSWERS.key, str(cs.ANSWERS.env)
PREDICT_ONLY_KEY, PREDICT_ONLY_ENV = cs.PREDICT_ONLY.key, cs.PREDICT_ONLY.env

WHERE_PYTHON_ANSWERS = (
    "CodeXGLUE publishes no gold answers for ClozeTest-maxmin. The Python answers are distributed "
    "only inside OpenCompass's OpenCompassData-core archive "
    "(data/clozeTest-maxmin/python/answers.txt); no public answers are known for the other "
    "languages."
)


@dataclass(frozen=True)
class ClozeItem:
    """One masked function. `label` is "max", "min" or None (answers unknown)."""

    language: str
    idx: str
    nl_tokens: tuple[str, ...]
    pl_tokens: tuple[str, ...]
    mask_index: int
    label: str | None = None
    line: int | None = None

    def to_doc(self) -> dict[str, Any]:
        """The flat record lm-eval sees; texts are tokens joined by single spaces (OpenCompass)."""
        return {
            "language": self.language,
            "idx": self.idx,
            "nl_text": " ".join(self.nl_tokens),
            "pl_text": " ".join(self.pl_tokens),
            "code_prefix": " ".join(self.pl_tokens[: self.mask_index]),
            "code_suffix": " ".join(self.pl_tokens[self.mask_index + 1 :]),
            "label": self.label or "",
            "gold": LETTERS[self.label] if self.label else "",
        }


# ---------------------------------------------------------------------------------------------
# Settings


def _check_language(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"clozetest_maxmin: unknown language {language!r}; expected {LANGUAGES}")
    return language


def _needed_by(language: str) -> str:
    """How download errors name the tasks of one language."""
    return f"ClozeTest-maxmin {language} (clozetest_maxmin_{language} / clozetest_maxmin_ll_{language})"


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def predict_only(settings: Mapping[str, Any]) -> bool:
    return bool(parse_settings((cs.PREDICT_ONLY,), settings)[PREDICT_ONLY_KEY])


def data_dir(settings: Mapping[str, Any]) -> Path | None:
    value = parse_settings((cs.DATA_DIR,), settings)[DATA_DIR_KEY]
    if value is None:
        return None
    path = Path(str(value)).expanduser()
    if not path.is_dir():
        raise DataError(path, f"{DATA_DIR_KEY}/{DATA_DIR_ENV} is not a directory")
    return path


def inputs_path(language: str, settings: Mapping[str, Any]) -> Path:
    """Local `clozeTest.json`: from the data directory, else downloaded from CodeXGLUE (cached)."""
    _check_language(language)
    root = data_dir(settings)
    if root is None:
        return download.download_url(
            f"{REMOTE_BASE}/{language}/{INPUTS_NAME}",
            needed_by=_needed_by(language),
            local_copy=f"{DATA_DIR_KEY} (--metadata) or ${DATA_DIR_ENV} "
            f"(a folder with <lang>/{INPUTS_NAME})",
        )
    path = root / language / INPUTS_NAME
    if not path.is_file():
        raise DataError(
            path, f"missing inputs for {language} (expected <dir>/<lang>/{INPUTS_NAME})"
        )
    return path


def _answers_spec(settings: Mapping[str, Any]) -> Any:
    spec = parse_settings((cs.ANSWERS,), settings)[ANSWERS_KEY]
    if isinstance(spec, str) and spec.lstrip().startswith("{") and LANG_PLACEHOLDER not in spec:
        try:  # the environment variable can hold the JSON mapping form
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise DataError(ANSWERS_ENV, f"not valid JSON: {exc}") from None
    return spec


def _language_in_path(text: str) -> str | None:
    """The language named by the folder holding a single answers file, if any."""
    parent = text.rstrip("/").replace("\\", "/").split("/")[-2:-1]
    return parent[0] if parent and parent[0] in LANGUAGES else None


def answers_location(language: str, settings: Mapping[str, Any]) -> str | None:
    """Where the answers for `language` are (a local path or an URL), or None if not configured.

    `clozetest_answers` may be
    - a mapping `{"python": "<file or URL>", ...}` (languages not listed have no answers);
    - a path or URL containing `{lang}`, filled in per language;
    - a directory laid out like the data directory: `<dir>/<lang>/answers.txt`.
    - a single file (path or URL) inside a folder named after its language, such as OpenCompass's
      `.../clozeTest-maxmin/python/answers.txt`: it answers that language only.
    Any other single file is rejected: ids repeat across languages, so it could silently be joined
    to the wrong language. Unset: `<data dir>/<lang>/answers.txt` if it exists.
    A configured local file that does not exist is an error, not "no answers".
    """
    _check_language(language)
    spec = _answers_spec(settings)
    if spec is None:
        root = data_dir(settings)
        candidate = root / language / ANSWERS_NAME if root else None
        return str(candidate) if candidate and candidate.is_file() else None
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(LANGUAGES))
        if unknown:
            raise DataError(ANSWERS_KEY, f"unknown language(s) {unknown}; expected {LANGUAGES}")
        location = spec.get(language)
        if location is None:
            return None
        location = str(location)
    elif isinstance(spec, str | Path):
        text = str(spec)
        if LANG_PLACEHOLDER in text:
            location = text.replace(LANG_PLACEHOLDER, language)
        elif _is_url(text) or Path(text).expanduser().is_file():
            owner = _language_in_path(text)
            if owner is None:
                raise DataError(
                    text,
                    f"{ANSWERS_KEY} names a single file whose path names no language, but ids "
                    f'repeat across languages; give a mapping such as {{"{language}": "{text}"}}, '
                    f"a path/URL containing {LANG_PLACEHOLDER}, or a directory with "
                    f"<lang>/{ANSWERS_NAME}",
                )
            if owner != language:
                return None
            location = text
        elif Path(text).expanduser().is_dir():
            location = str(Path(text).expanduser() / language / ANSWERS_NAME)
            if not Path(location).is_file():
                return None
        else:
            raise DataError(text, f"{ANSWERS_KEY}: no such file or directory")
    else:
        raise DataError(ANSWERS_KEY, f"expected a path, URL or mapping, got {type(spec).__name__}")
    if not _is_url(location) and not Path(location).expanduser().is_file():
        raise DataError(location, f"answers file for {language} does not exist")
    return location


# ---------------------------------------------------------------------------------------------
# Parsing


def _item_lines(text: str, count: int) -> list[int | None]:
    """1-based line of each item's `"idx"` key, so errors point into pretty-printed JSON."""
    lines: list[int | None] = []
    line, offset = 1, 0
    for match in re.finditer(r'(?<!\\)"idx"\s*:', text):
        line += text.count("\n", offset, match.start())
        offset = match.start()
        lines.append(line)
    return lines if len(lines) == count else [None] * count


def _tokens(path: Path, value: Any, line: int | None, field: str) -> tuple[str, ...]:
    if value is None:
        raise DataError(path, "missing required field", row=line, field=field)
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise DataError(path, "expected a list of strings", row=line, field=field)
    return tuple(value)


def read_inputs(path: Path, language: str) -> list[ClozeItem]:
    """Parse and validate one language's `clozeTest.json`.

    Bytes that are not UTF-8, a file over `MAX_INPUTS_BYTES`, a missing field, an idx that is not
    text, has surrounding whitespace or repeats another up to case are errors naming the line.
    """
    raw, text = datafiles.read_json(path, MAX_INPUTS_BYTES)
    if not isinstance(raw, list) or not raw:
        raise DataError(path, "expected a non-empty JSON list of items")
    lines = _item_lines(text, len(raw))
    items: list[ClozeItem] = []
    seen = datafiles.IdRegistry(path, "idx")
    for position, (entry, line) in enumerate(zip(raw, lines, strict=True), start=1):
        where = f"item {position}"
        if not isinstance(entry, dict):
            raise DataError(path, f"{where} is not an object", row=line)
        idx = entry.get("idx")
        if not isinstance(idx, str) or not idx:
            raise DataError(path, f"{where} has no string idx", row=line, field="idx")
        idx = datafiles.required_id(entry, "idx", path, line)
        seen.add(idx, line)
        nl = _tokens(path, entry.get("nl_tokens"), line, "nl_tokens")
        pl = _tokens(path, entry.get("pl_tokens"), line, "pl_tokens")
        masks = [i for i, tok in enumerate(pl) if tok == MASK]
        if len(masks) != 1:
            raise DataError(
                path,
                f"{where} (idx {idx}) has {len(masks)} {MASK} tokens, expected exactly one",
                row=line,
                field="pl_tokens",
            )
        items.append(ClozeItem(language, idx, nl, pl, masks[0], line=line))
    return items


def read_answers(path: Path) -> dict[str, tuple[str, int]]:
    """`idx<CODESPLIT>max|min` lines -> {idx: (label, line)}; blank lines are ignored.

    Streamed with the line-length cap; ids repeated (or equal up to case) are errors."""
    answers: dict[str, tuple[str, int]] = {}
    seen = datafiles.IdRegistry(path, "idx")
    for number, raw in datafiles.text_lines(path):
        line = raw.strip()
        if not line:
            continue
        parts = line.split(CODESPLIT)
        if len(parts) != 2:
            raise DataError(path, f"expected idx{CODESPLIT}max|min, got {line[:80]!r}", row=number)
        idx, label = parts[0].strip(), parts[1].strip()
        if not idx:
            raise DataError(path, "empty idx", row=number, field="idx")
        if label not in LABELS:
            raise DataError(
                path,
                f"label {label!r} for {idx} is neither max nor min",
                row=number,
                field="label",
            )
        seen.add(idx, number)
        answers[idx] = (label, number)
    return answers


def _preview(ids: list[str], limit: int = 5) -> str:
    more = f", ... ({len(ids) - limit} more)" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def join_answers(
    items: list[ClozeItem],
    answers: Mapping[str, tuple[str, int]],
    answers_file: str | Path,
    inputs_file: str | Path,
) -> list[ClozeItem]:
    """Attach labels; the answer ids must match the input ids exactly (one language)."""
    wanted = {item.idx for item in items}
    missing = [item for item in items if item.idx not in answers]
    extra = sorted((line, idx) for idx, (_, line) in answers.items() if idx not in wanted)
    if missing or extra:
        parts = []
        if missing:
            parts.append(
                f"{len(missing)} input id(s) missing from the answers "
                f"({_preview([f'{m.idx} (line {m.line} of {inputs_file})' for m in missing])})"
            )
        if extra:
            parts.append(
                f"{len(extra)} answer id(s) not in {inputs_file} "
                f"({_preview([f'{idx} (line {line})' for line, idx in extra])})"
            )
        raise DataError(
            answers_file,
            "answer ids do not match the inputs: " + "; ".join(parts),
            row=extra[0][0] if extra else None,
            field="idx",
        )
    return [
        ClozeItem(
            i.language, i.idx, i.nl_tokens, i.pl_tokens, i.mask_index, answers[i.idx][0], i.line
        )
        for i in items
    ]


# ---------------------------------------------------------------------------------------------
# Entry point for the lm-eval hooks


def _missing_answers_error(language: str, settings: Mapping[str, Any]) -> DataError:
    others = []
    for other in LANGUAGES:
        if other == language:
            continue
        try:
            if answers_location(other, settings) is None:
                others.append(other)
        except DataError:
            others.append(other)
    spec, root = _answers_spec(settings), data_dir(settings)
    where: str | Path
    if isinstance(spec, Mapping):
        where = f"{ANSWERS_KEY} (no entry for {language})"
    elif spec is not None:
        where = Path(str(spec)).expanduser() / language / ANSWERS_NAME
    elif root is not None:
        where = root / language / ANSWERS_NAME
    else:
        where = f"{ANSWERS_KEY} (not set)"
    also = f" (also none for: {', '.join(others)})" if others else ""
    return DataError(
        where,
        f"no gold answers for ClozeTest-maxmin language(s) {language}{also}. {WHERE_PYTHON_ANSWERS} "
        f"Put them at <{DATA_DIR_KEY}>/<lang>/{ANSWERS_NAME} or pass --metadata "
        f"'{{\"{ANSWERS_KEY}\": ...}}'; or run with --metadata '{{\"{PREDICT_ONLY_KEY}\": true}}' "
        f"(or {PREDICT_ONLY_ENV}=1) to only generate predictions, with accuracy reported as NaN.",
    )


def label_balance(items: list[ClozeItem]) -> float:
    """Share of `max` labels: accuracy of always answering A (chance is 50% only if ~0.5)."""
    labelled = [i.label for i in items if i.label is not None]
    return sum(label == "max" for label in labelled) / len(labelled) if labelled else float("nan")


def load_items(language: str, settings: Mapping[str, Any]) -> list[ClozeItem]:
    """Inputs of one language, joined with their answers unless predict-only."""
    source = inputs_path(language, settings)
    items = read_inputs(source, language)
    if not items:  # lm-eval fails on an empty task far from the cause: say it here
        raise DataError(source, f"{_needed_by(language)}: no document: 0 items read")
    if predict_only(settings):
        log.warning(
            "clozetest_maxmin_%s: predict-only mode, %d items; answers are ignored and accuracy "
            "is reported as NaN",
            language,
            len(items),
        )
        return items
    location = answers_location(language, settings)
    if location is None:
        raise _missing_answers_error(language, settings)
    answers_file = (
        download.download_url(
            location,
            needed_by=_needed_by(language),
            local_copy=f"{ANSWERS_KEY} (--metadata) or ${ANSWERS_ENV} (a local answers file)",
        )
        if _is_url(location)
        else Path(location).expanduser()
    )
    items = join_answers(items, read_answers(answers_file), location, source)
    log.info(
        "clozetest_maxmin_%s: %d items, share of max labels %.3f (always-A accuracy)",
        language,
        len(items),
        label_balance(items),
    )
    return items


def load_dataset_dict(language: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """`{"test": datasets.Dataset}` as lm-eval's `custom_dataset` hook must return."""
    import datasets

    docs = [item.to_doc() for item in load_items(language, settings)]
    return {"test": datasets.Dataset.from_list(docs)}
