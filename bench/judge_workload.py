"""The judge-speed workloads: real and hand-written programs for the xCodeEval validation problems.

Two workloads, both judged on the problems' public sample tests:

- **equal**: 106 distinct programs in each of the 11 xCodeEval languages, the way a real run
  weighs them (a model writes every problem in every language). The 848 shared ChatGPT programs
  (106 in each of 8 languages) plus 106 Java, Kotlin and JavaScript programs of our own, built
  from the base programs in `bench/workload/base/<language>/<problem>.<kind>.<ext>`: correct ones
  and wrong answers, crashes, time-outs and compile errors. A base program gives several variants
  that differ as independent samples do (names, comments, indentation, the `main` signature), so
  no two sources are identical and neither the compile cache nor the result cache can serve one
  program from another.
- **sampled**: 20 near-identical samples for each of a few problems and languages, as a sampled
  run (20 samples per problem) produces: some samples repeat exactly, others differ in comments
  or layout only. This is where the caches' deduplication shows.

`python bench/judge_workload.py --write` regenerates `bench/workload/{equal,sampled}.jsonl` from
the bases (deterministic); `--record` judges them with the installed engine and writes the
verdicts to `bench/workload/verdicts.json`, which `judge_speed.py` and the tests compare with.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workload"
BASES = WORKLOAD / "base"
PROBLEMS_FILE = WORKLOAD / "problems.json"
EQUAL_FILE = WORKLOAD / "equal.jsonl"
SAMPLED_FILE = WORKLOAD / "sampled.jsonl"
VERDICTS_FILE = WORKLOAD / "verdicts.json"
#: the shared data folder (`make bench` passes the Makefile's SHARED_DATA)
SHARED_DATA = Path(os.environ.get("SHARED_DATA") or HERE.parent.parent / "shared" / "data")

PER_LANGUAGE = 106
SAMPLES = 20
#: the base-program folders and the cluster each one writes
OWN_LANGUAGES = {"java": "Java", "kotlin": "Kotlin", "javascript": "Javascript"}
EXTENSIONS = {"java": ".java", "kotlin": ".kt", "javascript": ".js"}
#: variants per base program kind in the equal workload (time-outs cost seconds each)
MAX_VARIANTS = {"tle": 2}
#: the sampled workload: these problems, in these languages (own bases or shared programs)
SAMPLED_PROBLEMS = ("watermelon", "hongcow", "kefa", "display", "stock")
SAMPLED_LANGUAGES = ("Java", "Kotlin", "Javascript", "C++", "Python")

HEADERS = (
    "",
    "{c} Solution\n",
    "{c} Read the input, compute the answer and print it.\n",
    "{c} Approach: simulate the statement directly.\n\n",
    "{c} Time complexity is fine for the given constraints.\n",
    "{c} Solution to the problem\n{c} We read the input and output the result\n\n",
    "{c} Simple implementation\n",
)
#: (name, replacement) pairs for locals the bases use; applied only when the name is present as a
#: whole word and the replacement is not
RENAMES = (
    (("sc", "scan"), ("count", "cnt"), ("counts", "freq"), ("minutes", "steps")),
    (("scanner", "input"), ("removed", "answer"), ("result", "res"), ("seen", "unique")),
    (("br", "reader"), ("portions", "k"), ("toasts", "ans"), ("rows", "best")),
    (("sc", "in"), ("cur", "current"), ("need", "diff"), ("target", "word")),
)


@dataclass(frozen=True)
class Base:
    """One hand-written base program."""

    folder: str  # java, kotlin, javascript
    problem: str  # slug, see problems.json
    kind: str  # ok, wa, re, tle, ce (what it was written to be; the engine decides the verdict)
    source: str

    @property
    def cluster(self) -> str:
        return OWN_LANGUAGES[self.folder]


def problems() -> dict[str, str]:
    """Problem slug -> src_uid."""
    data: dict[str, str] = json.loads(PROBLEMS_FILE.read_text(encoding="utf-8"))
    return data


def bases(folder: str) -> list[Base]:
    out = []
    for path in sorted((BASES / folder).iterdir()):
        problem, kind, _ = path.name.split(".")
        out.append(Base(folder, problem, kind, path.read_text(encoding="utf-8")))
    return out


def _reindent(source: str, unit: str) -> str:
    """Leading indentation re-expressed in `unit` per level (the bases indent by 4 or 2)."""
    lines = source.split("\n")
    widths = [len(ln) - len(ln.lstrip(" ")) for ln in lines if ln.strip()]
    step = min((w for w in widths if w), default=4)
    out = []
    for ln in lines:
        width = len(ln) - len(ln.lstrip(" "))
        out.append(unit * (width // step) + " " * (width % step) + ln[width:])
    return "\n".join(out)


def _rename(source: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for old, new in pairs:
        word = re.compile(rf"(?<![\w\\.$'\"]){re.escape(old)}(?![\w'\"])")
        if word.search(source) and not re.search(rf"\b{re.escape(new)}\b", source):
            source = word.sub(new, source)
    return source


def _main_signature(source: str, folder: str, k: int) -> str:
    if folder == "java" and k:
        return source.replace("main(String[] args)", "main(String... args)")
    if folder == "kotlin" and k:
        return source.replace("fun main() {", "fun main(args: Array<String>) {")
    if folder == "javascript" and k:
        return "'use strict';\n\n" + source
    return source


def variant(base: Base, index: int) -> str:
    """The index-th variant of a base program (index 0 is the base itself)."""
    if index == 0:
        return base.source
    comment = "//"
    header = HEADERS[index % len(HEADERS)].format(c=comment)
    unit = ("    ", "  ", "\t")[(index // len(HEADERS)) % 3]
    source = _reindent(base.source, unit)
    source = _rename(source, RENAMES[index % len(RENAMES)])
    source = _main_signature(source, base.folder, (index // 2) % 2)
    return header + source


def _distinct_variants(base: Base, count: int) -> Iterator[str]:
    seen: set[str] = set()
    index = 0
    while len(seen) < count and index < 200:
        src = variant(base, index)
        index += 1
        if src not in seen:
            seen.add(src)
            yield src


def own_programs(folder: str, count: int = PER_LANGUAGE) -> list[dict[str, Any]]:
    """`count` distinct programs of one language, spread over its bases round-robin."""
    uids = problems()
    pool = bases(folder)
    variants = {
        (b.problem, b.kind): list(_distinct_variants(b, MAX_VARIANTS.get(b.kind, count)))
        for b in pool
    }
    out: list[dict[str, Any]] = []
    used: set[str] = set()
    rnd = 0
    while len(out) < count:
        added = False
        for b in pool:
            vs = variants[(b.problem, b.kind)]
            if rnd < len(vs) and len(out) < count and vs[rnd] not in used:
                used.add(vs[rnd])
                out.append(
                    {
                        "id": f"{b.cluster}/{b.problem}.{b.kind}.v{rnd}",
                        "src_uid": uids[b.problem],
                        "lang_cluster": b.cluster,
                        "kind": b.kind,
                        "source_code": vs[rnd],
                    }
                )
                added = True
        if not added:
            raise SystemExit(f"{folder}: the bases give only {len(out)} distinct programs")
        rnd += 1
    return out


def shared_programs(data: Path = SHARED_DATA) -> list[dict[str, Any]]:
    path = data / "xcodeeval_chatgpt_direct" / "predictions.jsonl"
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out.append(
                {
                    "id": f"{row['lang_cluster']}/{row['src_uid']}",
                    "src_uid": row["src_uid"],
                    "lang_cluster": row["lang_cluster"],
                    "kind": "shared",
                    "source_code": row["source_code"],
                }
            )
    return out


def sampled_programs(data: Path = SHARED_DATA) -> list[dict[str, Any]]:
    """SAMPLES samples per (problem, language): 7 distinct texts, the rest exact repeats."""
    uids = problems()
    shared = {(p["src_uid"], p["lang_cluster"]): p for p in shared_programs(data)}
    own = {
        (OWN_LANGUAGES[f], b.problem): b for f in OWN_LANGUAGES for b in bases(f) if b.kind == "ok"
    }
    out = []
    for problem in SAMPLED_PROBLEMS:
        for cluster in SAMPLED_LANGUAGES:
            base = own.get((cluster, problem))
            src0 = shared[(uids[problem], cluster)]["source_code"] if base is None else ""
            comment = "#" if cluster == "Python" else "//"
            for i in range(SAMPLES):
                k = (i * 3) % 7
                if base is not None:
                    src = variant(base, k)
                else:
                    src = src0 if k == 0 else src0.rstrip("\n") + f"\n{comment} sample note {k}\n"
                out.append(
                    {
                        "id": f"{cluster}/{problem}.s{i}",
                        "src_uid": uids[problem],
                        "lang_cluster": cluster,
                        "kind": "sampled",
                        "source_code": src,
                    }
                )
    return out


def equal_workload(data: Path = SHARED_DATA) -> list[dict[str, Any]]:
    """The committed equal-weight programs: shared ones first, then our own."""
    programs = shared_programs(data)
    for p in read_jsonl(EQUAL_FILE):
        programs.append(p)
    return programs


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _dump(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def generated() -> dict[Path, str]:
    """What `--write` writes: our own equal-weight programs and the sampled workload."""
    own = [p for folder in OWN_LANGUAGES for p in own_programs(folder)]
    return {EQUAL_FILE: _dump(own), SAMPLED_FILE: _dump(sampled_programs())}


def load_problems(data: Path = SHARED_DATA) -> dict[str, dict[str, Any]]:
    """src_uid -> the judging parameters of the problem: sample tests, limits."""
    from lm_eval_tasks.xcodeeval.data import parse_memory_limit, parse_time_limit, sample_tests

    path = data / "xcodeeval_sample" / "problem_descriptions.jsonl"
    out = {}
    for row in read_jsonl(path):
        out[row["src_uid"]] = {
            "tests": sample_tests(row["sample_inputs"], row["sample_outputs"]),
            "time_limit_s": parse_time_limit(row["time_limit"]),
            "memory_limit_mb": parse_memory_limit(row["memory_limit"]),
        }
    return out


def jobs_for(programs: list[dict[str, Any]], data: Path = SHARED_DATA) -> list[dict[str, Any]]:
    """Engine jobs as plain dicts (so the baseline engine can read them too)."""
    probs = load_problems(data)
    return [
        {
            "id": p["id"],
            "language": p["lang_cluster"],
            "source_code": p["source_code"],
            **probs[p["src_uid"]],
        }
        for p in programs
    ]


def distinct_problems(programs: list[dict[str, Any]]) -> dict[str, int]:
    """Programs per language whose source appears more than once in that language (want: none)."""
    dupes: dict[str, int] = {}
    for lang in {p["lang_cluster"] for p in programs}:
        counts = Counter(p["source_code"] for p in programs if p["lang_cluster"] == lang)
        n = sum(c for c in counts.values() if c > 1)
        if n:
            dupes[lang] = n
    return dupes


def recorded_verdicts() -> dict[str, str]:
    """id -> the verdict recorded in verdicts.json (empty when not recorded yet)."""
    if not VERDICTS_FILE.is_file():
        return {}
    data: dict[str, str] = json.loads(VERDICTS_FILE.read_text(encoding="utf-8"))
    return data


def record(workers: int) -> dict[str, str]:
    """Judge both workloads with the installed engine (no cache) and return id -> verdict."""
    from judge_driver import judge_jobs

    programs = equal_workload() + read_jsonl(SAMPLED_FILE)
    unique = {p["id"]: p for p in programs}
    out = judge_jobs(jobs_for(list(unique.values())), workers=workers, cache_dir=None)
    return {r["id"]: r["verdict"] for r in out["results"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="regenerate equal.jsonl, sampled.jsonl")
    ap.add_argument("--check", action="store_true", help="fail if the files are not up to date")
    ap.add_argument("--record", action="store_true", help="judge and write verdicts.json")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.write:
        for path, text in generated().items():
            path.write_text(text, encoding="utf-8")
    if args.check:
        stale = [p.name for p, t in generated().items() if p.read_text(encoding="utf-8") != t]
        if stale:
            print(f"out of date: {stale}; run with --write", file=sys.stderr)
            return 1
    if args.record:
        verdicts = record(args.workers)
        VERDICTS_FILE.write_text(json.dumps(verdicts, indent=0, sort_keys=True) + "\n")
        print(Counter(verdicts.values()))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
