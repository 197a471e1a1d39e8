"""xCodeEval's tasks on the real public files: the APR test files of five languages exactly as the
Hub holds them (repeated `apr_id`, whitespace-only buggy programs, Python 2 rows), loaded through
lm-eval, with every row either a document or counted by reason in the task's protocol.

The APR test split's problems and hidden tests are not public in `../shared/data`; the problem
rows joined here are the shape of the real validation problems (one real row per src_uid, its
id replaced), some left out, unusable or without tests on purpose, so that every skip reason is
met on real rows.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.languages.registry import CLUSTERS
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import kinds
from tests.conftest import SHARED_DATA, require
from tests.lm_fakes import task_manager
from tests.xcodeeval_support import XCE_DIR

REAL_APR = SHARED_DATA / "xcodeeval_apr_real" / "apr" / "test"
VALIDATION = SHARED_DATA / "xcodeeval_validation"
#: the five real files: cluster -> task suffix
REAL_CLUSTERS = {"C": "c", "Go": "go", "PHP": "php", "Python": "python", "Ruby": "ruby"}


def real_rows(cluster: str) -> list[dict[str, Any]]:
    path = REAL_APR / f"{cluster}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def role(uid: str) -> str:
    """What the built data folder holds for a problem, decided by its id alone: most problems
    are complete; some are absent from the problem file, unusable, or without tests."""
    return {0: "absent", 1: "unusable", 2: "no tests"}.get(int(uid[:4], 16) % 16, "complete")


@pytest.fixture(scope="module")
def apr_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(REAL_APR.is_dir(), f"the real APR files are missing at {REAL_APR}")
    root = tmp_path_factory.mktemp("xce_real_apr")
    (root / "apr" / "test").mkdir(parents=True)
    for cluster in CLUSTERS:
        target = root / "apr" / "test" / f"{cluster}.jsonl"
        if cluster in REAL_CLUSTERS:
            shutil.copy(REAL_APR / target.name, target)
        else:
            target.write_text("", encoding="utf-8")  # every language file exists, even empty
    template = json.loads(
        (VALIDATION / "problem_descriptions.jsonl").read_text(encoding="utf-8").splitlines()[0]
    )
    tests = next(iter(json.loads((VALIDATION / "unittest_db.json").read_text()).values()))
    uids = sorted({r["src_uid"] for c in REAL_CLUSTERS for r in real_rows(c)})
    problems, db = [], {}
    for uid in uids:
        if role(uid) == "absent":
            continue
        row = {**template, "src_uid": uid}
        if role(uid) == "unusable":
            row["description"] = None
        problems.append(row)
        if role(uid) != "no tests":
            db[uid] = tests
    (root / "problem_descriptions.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in problems), encoding="utf-8"
    )
    (root / "unittest_db.json").write_text(json.dumps(db), encoding="utf-8")
    return root


def expected_counts(cluster: str) -> tuple[int, Counter[str]]:
    """(documents, skipped rows by reason) of one real file, computed from its raw rows in the
    loaders' order: a blank program first, then an unavailable runtime, then the join."""
    docs, skipped = 0, Counter[str]()
    for row in real_rows(cluster):
        if not row["bug_source_code"].strip():
            skipped[xd.BLANK_PROGRAM] += 1
        elif xd.runtime_unavailable(row["lang"]):
            skipped["unavailable_runtime"] += 1
        elif role(row["src_uid"]) == "absent":
            skipped[xd.UNKNOWN_PROBLEM] += 1
        elif role(row["src_uid"]) == "unusable":
            skipped[xd.UNUSABLE_PROBLEM] += 1
        elif role(row["src_uid"]) == "no tests":
            skipped[xd.NO_TESTS] += 1
        else:
            docs += 1
    return docs, skipped


def test_the_real_files_hold_what_the_loaders_must_accept() -> None:
    """The quirks of the real files, as the loaders meet them."""
    require(REAL_APR.is_dir(), f"the real APR files are missing at {REAL_APR}")
    rows = {c: real_rows(c) for c in REAL_CLUSTERS}
    assert {c: len(r) for c, r in rows.items()} == {
        "C": 1957,
        "Go": 1427,
        "PHP": 1156,
        "Python": 2012,
        "Ruby": 1561,
    }
    repeated = {c: len(r) - len({x["apr_id"] for x in r}) for c, r in rows.items()}
    assert repeated == {"C": 120, "Go": 165, "PHP": 128, "Python": 41, "Ruby": 185}
    assert all(len({x["bug_code_uid"] for x in r}) == len(r) for r in rows.values())
    blank = {c: sum(not x["bug_source_code"].strip() for x in r) for c, r in rows.items()}
    assert blank == {"C": 1, "Go": 1, "PHP": 0, "Python": 0, "Ruby": 0}


def test_real_apr_files_build_through_lm_eval(apr_folder: Path) -> None:
    """Each real file becomes a task: a document per scorable buggy program (several per
    `apr_id`), every other row counted by reason in `configs.<task>.metadata.protocol`."""
    names = {c: kinds.APR.task(kinds.GREEDY.name, s) for c, s in REAL_CLUSTERS.items()}
    metadata = {"xcodeeval_data_dir": str(apr_folder), "xcodeeval_split": "test"}
    loaded = task_manager(XCE_DIR, metadata).load(list(names.values()))["tasks"]
    seen = {}
    for cluster, name in names.items():
        task = loaded[name]
        docs = list(task.test_docs())
        want_docs, want_skipped = expected_counts(cluster)
        protocol = task.config.metadata["protocol"]
        seen[cluster] = (len(docs), dict(protocol["skipped_rows"]))
        assert len(docs) == protocol["documents"] == want_docs, cluster
        assert protocol["skipped_rows"] == dict(sorted(want_skipped.items())), cluster
        assert protocol["rows_read"] == len(real_rows(cluster))
        assert protocol["unscored_rows"] == sum(want_skipped.values())
        uids = [d["bug_code_uid"] for d in docs]
        assert len(set(uids)) == len(uids)
        # one problem, several buggy programs: each its own document
        assert max(Counter(d["apr_id"] for d in docs).values()) > 1
    # every reason is met on the real rows (an unavailable runtime where the machine lacks
    # one of the rows' runtimes: PyPy 2 and, without a python2, Python 2 on Debian 12)
    reasons = {r for _, skipped in seen.values() for r in skipped}
    assert {xd.BLANK_PROGRAM, xd.UNKNOWN_PROBLEM, xd.UNUSABLE_PROBLEM, xd.NO_TESTS} <= reasons
    missing_here = {r["lang"] for r in real_rows("Python") if xd.runtime_unavailable(r["lang"])}
    assert ("unavailable_runtime" in seen["Python"][1]) == bool(missing_here)


def test_a_task_left_without_documents_says_why_in_one_line(apr_folder: Path) -> None:
    """lm-eval fails on an empty task with an IndexError far from the cause; the task stops
    first, with the rows read and why each group was dropped."""
    from lm_eval_tasks.xcodeeval import documents

    common = {"xcodeeval_data_dir": str(apr_folder), "xcodeeval_split": "test"}
    with pytest.raises(DataError) as err:
        documents.build_dataset(
            xce_task="xcodeeval_apr_java", xce_kind="apr", xce_cluster="Java", **common
        )
    text = str(err.value)
    assert "\n" not in text and "no document" in text and "0 rows read" in text
    assert "apr/test/Java.jsonl" in text
    # a file whose every row is skipped names each reason
    go = apr_folder / "apr" / "test" / "Go.jsonl"
    keep = go.read_text(encoding="utf-8")
    try:
        rows = [json.loads(line) for line in keep.splitlines()]
        blank = next(r for r in rows if not r["bug_source_code"].strip())
        absent = next(r for r in rows if role(r["src_uid"]) == "absent")
        go.write_text(json.dumps(blank) + "\n" + json.dumps(absent) + "\n", encoding="utf-8")
        xd._cached_jsonl.cache_clear()
        with pytest.raises(DataError) as err:
            documents.build_dataset(
                xce_task="xcodeeval_apr_go", xce_kind="apr", xce_cluster="Go", **common
            )
        text = str(err.value)
        assert "\n" not in text and "0 of 2 rows scored" in text
        assert "blank program" in text and "src_uid absent" in text
    finally:
        go.write_text(keep, encoding="utf-8")
        xd._cached_jsonl.cache_clear()


def test_truncated_hidden_tests_are_counted_and_can_be_dropped() -> None:
    """435 of the 5,579 real hidden tests of the 106 validation problems (11 problems) were cut
    by their publisher; the protocol counts them, and an opt-in run judges without them."""
    require(VALIDATION.is_dir(), f"the real validation folder is missing at {VALIDATION}")
    source = xd.DataSource(VALIDATION)
    uids = list(xd.load_problems(source, "t"))
    assert len(uids) == 106
    assert xd.truncated_tests(source, uids, "t") == {"problems": 11, "tests": 435, "dropped": False}
    db = xd.load_unittests(source, "t")
    assert sum(len(db.tests(u) or []) for u in uids) == 5579
    dropped = xd.DataSource(VALIDATION, drop_truncated=True)
    assert dropped.tests_kind == xd.HIDDEN_WITHOUT_TRUNCATED
    assert sum(len(db.tests(u, True) or []) for u in uids) == 5579 - 435
    assert sum(sum(db.cut(u)) for u in uids) == 435
    # no CR survives in the tests the judge receives (the file's line ends are CRLF)
    assert not any("\r\n" in t["input"] for u in uids for t in db.tests(u) or [])
    # through the task: its protocol records the counts, and the setting changes the test kind
    from lm_eval.tasks import TaskManager

    from tests.conftest import TASKS_DIR

    name = "xcodeeval_synth_greedy_go"
    for drop, kind in ((False, "hidden"), (True, xd.HIDDEN_WITHOUT_TRUNCATED)):
        meta = {
            "xcodeeval_data_dir": str(VALIDATION),
            "xcodeeval_split": "validation",
            "xcodeeval_drop_truncated_tests": drop,
        }
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta)
        task = manager.load([name])["tasks"][name]
        built = task.dataset["test"]
        assert len(built) == 106 and set(built["_tests"]) == {kind}
        recorded = task.config.metadata["protocol"]
        assert recorded["tests"] == kind
        assert recorded["truncated_tests"] == {"problems": 11, "tests": 435, "dropped": drop}
