"""A complete xCodeEval data folder (validation split) built from real data, in the real files' shapes.

`build_real_folder(root)` writes, in the Hub repository's layout:

- `problem_descriptions.jsonl` and `unittest_db.json`: the 106 real validation problems and their
  hidden tests (`../shared/data/xcodeeval_validation`), copied unchanged;
- `program_synthesis/validation/prog_syn_val.jsonl`: the same 106 problem rows;
- per language cluster, files made from real programs for those problems: the 848 ChatGPT
  programs (`../shared/data/xcodeeval_chatgpt_direct`, 8 clusters) and, for Java, Kotlin and
  Javascript, the judge-speed workload's programs (`bench/workload/equal.jsonl`). A program's
  verdict is the one the engine recorded for it on the public sample tests
  (`bench/workload/verdicts.json`); a ChatGPT program counts as correct only if ExecEval passed it
  on the hidden tests:
  - `code_translation/validation/<Cluster>.jsonl`: correct programs;
  - `tag_classification/validation/<Cluster>.jsonl`: programs with their problem's tags;
  - `code_compilation/validation/<Cluster>.jsonl`: `compilation_error` true for the programs
    whose verdict was COMPILATION_ERROR, false for programs that compiled;
  - `apr/validation/<Cluster>.jsonl`: failing programs as buggy programs, `bug_exec_outcome` their
    verdict, `bug_code_uid` unique, `apr_id` one per problem, so it repeats where a file holds
    several buggy programs of one problem (as in the real files);
  - `retrieval_{nl_code,code_code}/validation/<Cluster>_{nl_code,code_code}_dev_file.jsonl`:
    candidates as objects (`{"source_code": ...}`), the nl query an object with `description`,
    `input_spec` and `output_spec`; positives solve the query's problem, negatives other problems.

At most `ROWS` rows per file, chosen in a fixed order: the folder is the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, SHARED_DATA
from tests.xcodeeval_support import fx

VALIDATION = SHARED_DATA / "xcodeeval_validation"
CHATGPT = SHARED_DATA / "xcodeeval_chatgpt_direct" / "predictions.jsonl"
WORKLOAD = ROOT / "bench" / "workload"
OWN_PROGRAMS = WORKLOAD / "equal.jsonl"
VERDICTS = WORKLOAD / "verdicts.json"
CLUSTERS = tuple(fx.LANGS)
ROWS = 12  # rows per language file at most
NEGATIVES = 3  # negative candidates per retrieval row
POSITIVES = 2  # positive candidates per code-code retrieval row, at most
PASSED = "PASSED"
COMPILATION_ERROR = "COMPILATION_ERROR"


@dataclass(frozen=True)
class Program:
    """A real program for one of the validation problems."""

    key: str  # its key in verdicts.json
    cluster: str
    src_uid: str
    source_code: str
    verdict: str  # the engine's verdict on the problem's sample tests
    correct: bool

    @property
    def code_uid(self) -> str:
        return _uid("code", self.key)


def _uid(*parts: str) -> str:
    """A 32-hex id like xCodeEval's, the same on every machine."""
    return hashlib.md5("/".join(parts).encode()).hexdigest()


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def programs() -> list[Program]:
    """Every program the folder may use, ChatGPT's first, in file order."""
    verdicts: dict[str, str] = json.loads(VERDICTS.read_text(encoding="utf-8"))
    out = []
    for row in _jsonl(CHATGPT):
        key = f"{row['lang_cluster']}/{row['src_uid']}"
        verdict = verdicts[key]
        correct = bool(row["execeval_hidden_tests_passed"]) and verdict == PASSED
        out.append(
            Program(key, row["lang_cluster"], row["src_uid"], row["source_code"], verdict, correct)
        )
    for row in _jsonl(OWN_PROGRAMS):
        verdict = verdicts[row["id"]]
        out.append(
            Program(
                row["id"],
                row["lang_cluster"],
                row["src_uid"],
                row["source_code"],
                verdict,
                verdict == PASSED,
            )
        )
    return out


def _write(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")


def _first(items: Iterable[Program], n: int = ROWS) -> list[Program]:
    return list(items)[:n]


def _one_per_problem(items: Iterable[Program]) -> Iterator[Program]:
    seen: set[str] = set()
    for p in items:
        if p.src_uid not in seen:
            seen.add(p.src_uid)
            yield p


def _one_per_cluster(items: Iterable[Program]) -> Iterator[Program]:
    seen: set[str] = set()
    for p in items:
        if p.cluster not in seen:
            seen.add(p.cluster)
            yield p


def build_real_folder(root: Path) -> Path:
    """Write the folder (see the module docstring) under `root`; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("problem_descriptions.jsonl", "unittest_db.json"):
        shutil.copyfile(VALIDATION / name, root / name)
    problem_rows = _jsonl(VALIDATION / "problem_descriptions.jsonl")
    _write(root / "program_synthesis/validation/prog_syn_val.jsonl", problem_rows)
    problems = {p["src_uid"]: p for p in problem_rows}
    every = [p for p in programs() if p.src_uid in problems]
    for cluster in CLUSTERS:
        _write_cluster(root, cluster, every, problems)
    return root


def _write_cluster(
    root: Path, cluster: str, every: list[Program], problems: dict[str, dict[str, Any]]
) -> None:
    """The language files of one cluster (see the module docstring)."""
    mine = [p for p in every if p.cluster == cluster]
    correct = [p for p in mine if p.correct]

    def row(p: Program, **fields: Any) -> dict[str, Any]:
        return {
            "lang": fx.LANGS[cluster],
            "lang_cluster": cluster,
            "src_uid": p.src_uid,
            "difficulty": problems[p.src_uid]["difficulty"],
            **fields,
        }

    def program(p: Program, **fields: Any) -> dict[str, Any]:
        return row(p, source_code=p.source_code, code_uid=p.code_uid, **fields)

    _write(
        root / f"code_translation/validation/{cluster}.jsonl",
        (program(p, exec_outcome=PASSED) for p in _first(correct)),
    )
    _write(
        root / f"tag_classification/validation/{cluster}.jsonl",
        (program(p, tags=problems[p.src_uid]["tags"]) for p in _first(mine)),
    )
    errors = _first((p for p in mine if p.verdict == COMPILATION_ERROR), ROWS // 2)
    compiled = _first((p for p in mine if p.verdict != COMPILATION_ERROR), ROWS - len(errors))
    _write(
        root / f"code_compilation/validation/{cluster}.jsonl",
        (program(p, compilation_error=p.verdict == COMPILATION_ERROR) for p in errors + compiled),
    )
    # the buggy programs of one problem next to each other, as in the real files
    failing = (p for p in mine if not p.correct and p.verdict != PASSED)
    _write(
        root / f"apr/validation/{cluster}.jsonl",
        (
            row(
                p,
                bug_source_code=p.source_code,
                bug_exec_outcome=p.verdict,
                apr_id=_uid("apr", cluster, p.src_uid),
                bug_code_uid=p.code_uid,
                tags=problems[p.src_uid]["tags"],
            )
            for p in _first(sorted(failing, key=lambda p: p.src_uid))
        ),
    )
    queries = _first(_one_per_problem(correct))
    _write(
        root / f"retrieval_nl_code/validation/{cluster}_nl_code_dev_file.jsonl",
        (
            {
                "nl": {
                    k: problems[q.src_uid][k] for k in ("description", "input_spec", "output_spec")
                },
                "positive_code": [{"source_code": q.source_code}],
                "negative_code": _candidates(mine, q.src_uid),
                "src_uid": q.src_uid,
            }
            for q in queries
        ),
    )
    _write(
        root / f"retrieval_code_code/validation/{cluster}_code_code_dev_file.jsonl",
        _code_code_rows(queries, every),
    )


def _candidates(pool: Iterable[Program], src_uid: str, n: int = NEGATIVES) -> list[dict[str, str]]:
    """Candidate objects of `n` programs of `pool` that solve other problems than `src_uid`."""
    others = _first(_one_per_problem(p for p in pool if p.src_uid != src_uid), n)
    return [{"source_code": p.source_code} for p in others]


def _code_code_rows(queries: Iterable[Program], every: list[Program]) -> Iterator[dict[str, Any]]:
    """A query program; positives: correct programs of its problem in other clusters (one each);
    negatives: programs of other problems in the first positive's cluster."""
    for q in queries:
        positives = _first(
            _one_per_cluster(
                p for p in every if p.src_uid == q.src_uid and p.correct and p.cluster != q.cluster
            ),
            POSITIVES,
        )
        if not positives:
            continue
        pool = [p for p in every if p.cluster == positives[0].cluster]
        yield {
            "source_code": q.source_code,
            "positive_code": [{"source_code": p.source_code} for p in positives],
            "negative_code": _candidates(pool, q.src_uid),
            "src_uid": q.src_uid,
        }
