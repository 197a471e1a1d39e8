"""What every run records and refuses: misspelt settings are errors naming the nearest key, and
the protocol a task was scored under (comparator, tests, backend, policy, runtimes, data) is in
lm-eval's results file, beside a printed table of headline metrics only."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.utils.settings import check_known
from lm_eval_tasks import protocol
from lm_eval_tasks.clozetest_maxmin import utils as cloze_hooks
from lm_eval_tasks.code_infilling import utils as infilling_hooks
from tests import xcodeeval_support as support
from tests.clozetest_support import FIXTURE_REMOTE
from tests.conftest import TASKS_DIR, require
from tests.infilling_support import ROWS_FILE
from tests.lm_fakes import run_cli

CLOZE_DATA = (
    FIXTURE_REMOTE / "microsoft/CodeXGLUE/main/Code-Code/ClozeTesting-maxmin/data/cloze-maxmin"
)


def test_a_misspelt_key_stops_the_run_before_generation_naming_the_nearest_key() -> None:
    calls: list[str] = []

    def counting(kind: str, context: str, extra: Any) -> str:
        calls.append(context)
        return ""

    with pytest.raises(ValueError, match=r"'xcodeeval_execeval_compt' \(did you mean "):
        support.run_tasks(
            ["xcodeeval_synth_greedy_python"], counting, xcodeeval_execeval_compt=True
        )
    assert calls == []
    # every benchmark's hook checks every prefix the pack owns, in --metadata or nested metadata
    with pytest.raises(
        ValueError, match=r"'clozetest_dat_dir' \(did you mean 'clozetest_data_dir'"
    ):
        cloze_hooks.load("python", clozetest_dat_dir=str(CLOZE_DATA))
    with pytest.raises(ValueError, match=r"'exec_backnd' \(did you mean 'exec_backend'\?\)"):
        infilling_hooks.load(sg_infilling_data=str(ROWS_FILE), metadata={"exec_backnd": "local"})
    with pytest.raises(
        ValueError, match=r"'sg_infilling_grder' \(did you mean 'sg_infilling_grader'"
    ):
        infilling_hooks.load(sg_infilling_data=str(ROWS_FILE), sg_infilling_grder="local")


def test_known_internal_and_foreign_keys_pass_and_all_unknown_ones_are_named() -> None:
    # declared keys, aliases, keys the task files set and other programs' keys are fine
    protocol.check_settings(
        {
            "xcodeeval_execeval_compat": True,
            "grader": "local",
            "sg_infilling_variant": "qwen",
            "clozetest_language": "go",
            "pretrained": "m",
            "protocol": {},
        }
    )
    with pytest.raises(ValueError) as err:
        check_known({"ab_one": 1, "ab_tw": 2, "ab_zzzz": 3}, ("ab_",), ("ab_one", "ab_two"))
    assert str(err.value).startswith(
        "unknown settings 'ab_tw' (did you mean 'ab_two'?), 'ab_zzzz': no benchmark"
    )


def test_a_protocol_given_in_metadata_is_refused() -> None:
    shared: dict[str, Any] = {}
    protocol.record({"protocol": shared}, "task_a", {"x": 1})
    with pytest.raises(ValueError, match="shared by several tasks"):
        protocol.record({"protocol": shared}, "task_b", {"x": 2})
    with pytest.raises(ValueError, match="never set in --metadata"):
        protocol.record({"protocol": "hidden"}, "task_c", {})
    with pytest.raises(ValueError, match="never set in --metadata"):
        protocol.record({"protocol": {"x": 1}}, "task_d", {})
    # two tasks of one benchmark may share a label; their YAML files tell them apart
    common: dict[str, Any] = {}
    protocol.record({"protocol": common, "config_source": "a.yaml"}, "sg_infilling", {"x": 1})
    with pytest.raises(ValueError, match="shared by several tasks"):
        protocol.record({"protocol": common, "config_source": "b.yaml"}, "sg_infilling", {})


def test_a_task_built_again_records_again_in_its_own_protocol() -> None:
    metadata: dict[str, Any] = {"protocol": {}, "config_source": "/tasks/task_a.yaml"}
    protocol.record(metadata, "task_a", {"rows": 1, "old": True})
    own = metadata["protocol"]
    protocol.record(metadata, "task_a", {"rows": 2})
    assert metadata["protocol"] is own and own == {"rows": 2}
    assert protocol.update(metadata, {"judged": 2}) and own == {"rows": 2, "judged": 2}
    # what lm-eval writes into the results file: a plain mapping
    assert json.loads(json.dumps(dataclasses.asdict(_Config(metadata)))) == {
        "metadata": {"protocol": {"rows": 2, "judged": 2}, "config_source": "/tasks/task_a.yaml"}
    }
    # a task's record copied into another task's metadata is not that task's
    with pytest.raises(ValueError, match="shared by several tasks"):
        protocol.record({**metadata, "config_source": "/tasks/task_b.yaml"}, "task_a", {})
    # a metadata without a recorded protocol (a hook called outside lm-eval) takes no update
    assert not protocol.update({}, {"judged": 1})
    assert not protocol.update({"protocol": {}}, {"judged": 1})


@dataclasses.dataclass
class _Config:
    """Stand-in for lm-eval's TaskConfig, which `to_dict`s itself with `dataclasses.asdict`."""

    metadata: dict[str, Any]


def test_lm_eval_downloads_a_task_again_and_refuses_a_protocol_from_metadata() -> None:
    """lm-eval's own `download`, called again on a built task, records again; a `protocol`
    mapping given through --metadata reaches two tasks and is refused."""
    from lm_eval.tasks import TaskManager

    meta = {"xcodeeval_data_dir": str(support.FIXTURES), "xcodeeval_split": "validation"}
    names = ["xcodeeval_compile_c", "xcodeeval_compile_go"]
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta)
    tasks = manager.load(names)["tasks"]
    for name in names:
        task = tasks[name]
        recorded = task.config.metadata["protocol"]
        assert recorded["task"] == name
        task.download(task.config.dataset_kwargs)
        assert task.config.metadata["protocol"] is recorded and recorded["task"] == name
    shared = TaskManager(
        include_path=str(TASKS_DIR), include_defaults=False, metadata={**meta, "protocol": {}}
    )
    with pytest.raises(ValueError, match="shared by several tasks"):
        shared.load(names)


def every_benchmark(kind: str, context: str, extra: Any) -> str:
    """Scripted model for the three benchmarks at once: xCodeEval's reference solution, a cloze
    letter, an empty infilling middle."""
    if context.lstrip().startswith("Write a program in"):
        return support.plain_oracle(kind, context, extra)
    return "A" if "<mask>" in context else ""


def _table_rows(stdout: str) -> dict[str, list[str]]:
    """Task (or group) -> the metrics of its rows in lm-eval's printed tables."""
    rows: dict[str, list[str]] = {}
    name = ""
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] in ("Tasks", "Groups") or set(cells[0]) <= {"-", ":"}:
            continue
        name = re.sub(r"^- ", "", cells[0]) or name
        rows.setdefault(name, []).append(cells[4])
    return rows


@pytest.mark.slow
def test_the_results_file_records_the_protocol_and_the_table_shows_headlines(
    tmp_path: Path,
) -> None:
    from code_eval_taskpack import execution

    pypy = execution.resolve("PyPy 3")
    require(pypy.available, f"PyPy 3 missing: {pypy.reason}")
    metadata = {
        "xcodeeval_data_dir": str(support.FIXTURES),
        "xcodeeval_exec_cache": "none",
        "clozetest_data_dir": str(CLOZE_DATA),
        "clozetest_predict_only": True,
        "sg_infilling_data": str(ROWS_FILE),
    }
    tasks = ["xcodeeval_synth_greedy_python", "clozetest_maxmin_ruby", "sg_infilling_qwen"]
    run = run_cli(
        "tests.test_run_protocol:every_benchmark",
        ",".join(tasks),
        tmp_path / "out",
        "--confirm_run_unsafe_code",
        include_path=TASKS_DIR,
        metadata=metadata,
        env={"HF_HUB_OFFLINE": "1"},
    )
    configs = run.report["configs"]
    xce = configs["xcodeeval_synth_greedy_python"]["metadata"]["protocol"]
    assert {
        k: xce[k] for k in ("tests", "comparator", "backend", "isolation_policy", "split", "data")
    } == {
        "tests": "hidden",
        "comparator": "default",
        "backend": "local",
        "isolation_policy": "required",
        "split": "test",
        "data": str(support.FIXTURES.resolve()),
    }
    assert xce["limits"].startswith("the problem's")
    assert xce["unscored_rows"] == 1 and xce["unavailable_runtime_rows"] == 0
    assert xce["programs_judged"] == 2 and xce["infra_errors"] == 0
    assert xce["verdicts"] == {"PASSED": 2}
    assert xce["runtimes"] == {
        "PyPy 3": {
            "version": pypy.version,
            "time_factor": pypy.time_factor,
            "memory_headroom_mb": pypy.as_headroom_mb,
        }
    }
    assert xce["judged_by"] == [{"backend": "local"}]
    cloze = configs["clozetest_maxmin_ruby"]["metadata"]["protocol"]
    assert cloze == {
        "benchmark": "clozetest_maxmin",
        "language": "ruby",
        "inputs": str(CLOZE_DATA),
        "answers": None,
        "predict_only": True,
        "items": 2,
    }
    infill = configs["sg_infilling_qwen"]["metadata"]["protocol"]
    assert infill["data"] == f"local:{ROWS_FILE}" and infill["rows"] == 2
    assert infill["format"] == "qwen" and infill["grading"] is None
    assert infill["prompt_budget"]["unit"] in ("chars", "tokens")
    # the printed table: pass@1 alone for the xCodeEval task, no bookkeeping counters
    rows = _table_rows(run.stdout)
    assert rows["xcodeeval_synth_greedy_python"] == ["pass@1"], run.stdout
    metrics = {k for k in run.report["results"]["xcodeeval_synth_greedy_python"] if "," in k}
    assert metrics == {"pass@1,judge", "pass@1_stderr,judge"}


def test_the_report_warns_from_the_recorded_protocol(tmp_path: Path) -> None:
    from lm_eval_tasks.reporting.results import Run
    from lm_eval_tasks.reporting.table import run_warnings

    recorded = {"tests": "sample", "infra_errors": 2, "unscored_rows": 3}
    data = {
        "results": {"xcodeeval_synth_greedy_go": {"pass@1,judge": 0.5}},
        "configs": {"xcodeeval_synth_greedy_go": {"metadata": {"protocol": recorded}}},
        "config": {"model": "hf", "model_args": "pretrained=m"},
    }
    text = "\n".join(run_warnings(Run(tmp_path / "results_x.json", data)))
    assert "xcodeeval_synth_greedy_go: infra_errors = 2" in text
    assert "xcodeeval_synth_greedy_go: unscored_rows = 3" in text
    assert "SAMPLE-TEST scoring in 1 xCodeEval tasks" in text
