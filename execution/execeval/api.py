"""ExecEval's HTTP API over the engine: `POST /api/execute_code` and `GET /api/all_runtimes`
(served by `execution/server/http.py`, which reads the body, admits the request and sends the
answer).

`POST /api/execute_code` takes ExecEval's request `{language, source_code, unittests, limits,
compile_cmd, compile_flags, execute_cmd, execute_flags, block_network, stop_on_first_fail,
use_sanitizer}` and answers `{"data": [{input, output, result, exec_outcome, time_consumed,
peak_memory_consumed}, ...], "execution": {...}}` (a compilation error is one entry with an
empty input; `execution` says what ran: mode, runtime, compile and run argv, adaptations, the
limits applied and not applied), or `{"error": ...}` with 400 for a bad request (the field named),
500 for an engine failure and 503 with `Retry-After` when the queue is full. `GET
/api/all_runtimes` lists every accepted name, ExecEval's exact spellings included.

Two modes (`serve --mode`, or `"mode"` in a request):
- `execeval`: what ExecEval does, for identical numbers: its compile and run commands per
  runtime, its limits with its defaults, its comparator, its outcome set and mapping, and tests not
  run after the first failure listed with `exec_outcome: null` (`execution/execeval/compat.py`);
- `default`: the registry's commands, `limits.cpu` as the problem's CPU time limit scaled by the
  runtime's factor, memory `limits.memory_mb` (or `limits._as` bytes, else 256 MB) through the
  memory cgroup, our verdicts (OUTPUT_LIMIT_EXCEEDED included), tests not run omitted.
Custom commands are accepted in both modes: they are split with shlex into an argv (no shell),
validated, and run in the same sandbox with the same limits. See execution/README.md for the
compatibility table.

The engine and the batch-record parser (`judge.jobfile.job_from_record`) are given by the
caller: this folder is below `judge/` and imports nothing from it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ..errors import DataError
from ..inputs import InvalidJob, positive_number, validate_job
from ..languages.registry import Runtime, UnknownLanguageError, accepted_names, resolve
from ..types import Job, Result, TestResult, Verdict
from .compat import (
    DEFAULT_LIMITS,
    EXECEVAL_RUNTIMES,
    CompatError,
    execeval_commands,
    execeval_entry,
    execeval_limits,
    execeval_outcome,
    execeval_runtime,
)

if TYPE_CHECKING:
    from ..judge.engine import Engine

MIB = 1024 * 1024
SERVER_MODES = ("default", "execeval")
CUSTOM_FIELDS = ("compile_cmd", "compile_flags", "execute_cmd", "execute_flags")
#: a batch record -> Job (`judge.jobfile.job_from_record(record, path, row)`), raising DataError
RecordParser = Callable[[Any, str, "int | None"], Job]
#: an answer: its HTTP status and its JSON payload
Reply = tuple[HTTPStatus, Any]


class BadRequest(ValueError):
    pass


@dataclasses.dataclass
class Prepared:
    """A validated request: the job, the runtime that judges it and what the response reports."""

    job: Job
    runtime: Runtime
    mode: str
    report: dict[str, Any]


def _flag(body: dict[str, Any], key: str, default: bool) -> bool:
    """A flag read as ExecEval reads it: `form.get(key, default)`, then used by truthiness.

    Accepted: JSON booleans; integers (what `eval_passk.py --use_sanitizer 0` sends, its flags
    being parsed by `fire`), 0 false and any other true; null, which `form.get` returns as None,
    hence false (not the default). Refused, naming the field: strings (ExecEval takes any
    non-empty one, "false" and "0" included, as true: the sender cannot have meant that),
    floats, lists and objects (no client of ExecEval's sends them for a flag)."""
    if key not in body:
        return default
    value = body[key]
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        why = "ExecEval would read any non-empty string, even 'false' or '0', as true"
    else:
        why = f"got {type(value).__name__}"
    raise BadRequest(f"field {key!r}: must be true, false, an integer (0 is false) or null; {why}")


def prepare_request(
    body: Any,
    mode: str = "default",
    comparator: str = "default",
    *,
    parse_record: RecordParser,
) -> Prepared:
    """ExecEval request -> validated job and runtime (the job read by `parse_record`, as a batch
    record); raises BadRequest naming the field."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    mode = body.get("mode", mode)
    if mode not in SERVER_MODES:
        raise BadRequest(f"field 'mode': must be one of {', '.join(SERVER_MODES)}")
    language = body.get("language")
    if not isinstance(language, str) or not language.strip():
        raise BadRequest("field 'language': 'language' is required (a non-empty string)")
    try:
        base = resolve(language)
    except UnknownLanguageError as exc:
        raise BadRequest(f"field 'language': {exc}") from None
    custom = {k: body.get(k) for k in CUSTOM_FIELDS}
    has_custom = any(v not in (None, "") for v in custom.values())
    block_network = _flag(body, "block_network", True)
    use_sanitizer = _flag(body, "use_sanitizer", False)
    limits = body.get("limits")
    notes: list[str] = []
    if not block_network:
        notes.append("block_network=false not applied: the sandbox never has a network")
    if use_sanitizer:
        notes.append("use_sanitizer not applied: programs are compiled as sent")
    runtime = base
    adaptations: tuple[str, ...] = ()
    try:
        if mode == "execeval" or has_custom:
            entry = execeval_entry(language) or EXECEVAL_RUNTIMES[base.name]
            commands = execeval_commands(entry, base, custom)
            runtime = execeval_runtime(base, commands)
            adaptations = commands.adaptations
        if mode == "execeval":
            plan = execeval_limits(entry, base, limits)
            time_limit: Any = body.get("time_limit_s", plan.time_limit_s)
            memory: Any = body.get("memory_limit_mb", plan.memory_mb)
            overrides = plan.overrides
            limit_report: dict[str, Any] = {
                "applied": plan.applied,
                "not_applied": plan.not_applied,
            }
        else:
            time_limit, memory, limit_report = _default_limits(body, limits)
            overrides = None
    except CompatError as exc:
        raise BadRequest(str(exc)) from None
    record = {
        "id": "request",
        "language": language,
        "source_code": body.get("source_code"),
        "unittests": body.get("unittests"),
        "time_limit_s": time_limit,
        "memory_limit_mb": memory,
        "stop_on_first_fail": _flag(body, "stop_on_first_fail", True),
        "comparator": body.get(
            "comparator",
            "execeval" if mode == "execeval" and comparator == "default" else comparator,
        ),
    }
    origin = {
        "time_limit_s": "time_limit_s" if "time_limit_s" in body else "limits.cpu",
        "memory_limit_mb": "memory_limit_mb"
        if "memory_limit_mb" in body
        else (
            "limits.memory_mb"
            if isinstance(limits, dict) and "memory_mb" in limits
            else "limits._as"
        ),
    }
    try:
        job = parse_record(record, "request", None)
    except DataError as exc:
        field = origin.get(exc.field or "", exc.field)
        raise BadRequest(f"field {field!r}: {exc.message}" if field else exc.message) from None
    job = dataclasses.replace(job, id="", overrides=overrides)
    report = {
        "mode": mode,
        "runtime": base.name,
        "adaptations": list(adaptations),
        "limits": limit_report,
        "notes": notes,
    }
    return Prepared(job=job, runtime=runtime, mode=mode, report=report)


def _default_limits(body: dict[str, Any], limits: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Default mode: `limits.cpu` (problem time limit, scaled by the runtime's factor) and
    memory (`memory_limit_mb`, `limits.memory_mb`, `limits._as` bytes, else 256 MB)."""
    if limits is None:
        limits = {}
    if not isinstance(limits, dict):
        raise BadRequest("field 'limits': 'limits' must be an object")
    unknown = sorted(set(limits) - set(DEFAULT_LIMITS) - {"memory_mb"})
    if unknown:
        raise BadRequest(
            f"field 'limits.{unknown[0]}': unknown limit; ExecEval's are "
            f"{', '.join(DEFAULT_LIMITS)} (and memory_mb, in MB)"
        )
    memory: Any = 256
    if body.get("memory_limit_mb") is not None:
        memory = body["memory_limit_mb"]
    elif limits.get("memory_mb") is not None:
        memory = limits["memory_mb"]
    elif limits.get("_as") not in (None, -1):
        memory = limits["_as"]
        if positive_number(memory):
            memory /= MIB
    if positive_number(memory):
        memory = max(1, math.ceil(memory))  # a fraction of a MB (e.g. `_as` bytes) rounds up
    time_limit = body.get("time_limit_s", limits.get("cpu", 2))
    applied = {
        "cpu": "problem time limit x the runtime's time factor (CPU)",
        "memory_mb": "memory cgroup",
    }
    not_applied = {
        k: "ignored in default mode (the engine's own limits apply)"
        for k in limits
        if k not in ("cpu", "_as", "memory_mb")
    }
    return time_limit, memory, {"applied": applied, "not_applied": not_applied}


def job_from_request(body: Any, comparator: str = "default", *, parse_record: RecordParser) -> Job:
    """ExecEval request -> Job in the default mode (validated as a batch record)."""
    return prepare_request(body, "default", comparator, parse_record=parse_record).job


def parse_execute_code(
    raw: bytes, engine: Engine, mode: str, comparator: str, parse_record: RecordParser
) -> Prepared | Reply:
    """`POST /api/execute_code`'s body -> the prepared request, else the 400 that answers it.
    The job's fixed bounds (sizes, counts, numbers) are checked here, before it is admitted."""
    try:
        body = json.loads(raw)
        prepared = prepare_request(body, mode, comparator, parse_record=parse_record)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return HTTPStatus.BAD_REQUEST, {"error": f"invalid JSON: {exc}"}
    except RecursionError:
        return HTTPStatus.BAD_REQUEST, {"error": "invalid JSON: nested too deeply"}
    except BadRequest as exc:
        return HTTPStatus.BAD_REQUEST, {"error": str(exc)}
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        return HTTPStatus.BAD_REQUEST, {"error": f"invalid JSON: {exc}"}
    try:
        validate_job(prepared.job, engine.input_limits)
    except InvalidJob as exc:
        return HTTPStatus.BAD_REQUEST, {"error": str(exc)}
    return prepared


def execute_code(engine: Engine, prepared: Prepared) -> Reply:
    """An admitted `POST /api/execute_code`: judged (the engine runs one program per worker at
    a time; admitted requests wait here), answered 200, or 500 for an engine failure."""
    result = engine.judge_as(prepared.job, prepared.runtime)
    if result.verdict is Verdict.INFRA_ERROR:
        return HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"engine failure: {result.detail}"}
    return HTTPStatus.OK, response_from_result(prepared, result)


def response_from_result(prepared: Prepared | Job, result: Result) -> dict[str, Any]:
    """ExecEval's `{"data": [...]}` for a judged job, plus what ran (`execution`)."""
    if isinstance(prepared, Job):
        job, mode, report = prepared, "default", None
    else:
        job, mode, report = prepared.job, prepared.mode, dict(prepared.report)
    compat = mode == "execeval"
    out: dict[str, Any]
    if result.verdict is Verdict.COMPILATION_ERROR:
        message = result.compile.stderr if result.compile else result.detail
        entry: dict[str, Any] = {
            "input": "",
            "output": [],
            "result": message or result.detail,
            "exec_outcome": Verdict.COMPILATION_ERROR.value,
            "time_consumed": None,
            "peak_memory_consumed": None,
        }
        out = {"data": [entry]}
    else:
        data = [
            _entry(job.tests[i].input, list(job.tests[i].output), t, compat)
            for i, t in enumerate(result.tests)
        ]
        if compat:  # ExecEval lists every test; the ones not run have no outcome
            data += [
                {
                    "input": t.input,
                    "output": list(t.output),
                    "result": None,
                    "exec_outcome": None,
                    "time_consumed": None,
                    "peak_memory_consumed": None,
                }
                for t in job.tests[len(result.tests) :]
            ]
        out = {"data": data}
    if report is not None:
        report["runtime_version"] = result.runtime.get("version")
        report["compile"] = result.runtime.get("compile_argv")
        report["execute"] = result.runtime.get("run_argv")
        out["execution"] = report
    return out


def _entry(test_input: str, expected: list[str], t: TestResult, compat: bool) -> dict[str, Any]:
    if t.verdict in (Verdict.PASSED, Verdict.WRONG_ANSWER):
        shown = t.stdout.strip()
    else:
        shown = t.stderr or t.detail or t.stdout
    return {
        "input": test_input,
        "output": expected,
        "result": shown,
        "exec_outcome": execeval_outcome(t) if compat else t.verdict.value,
        "time_consumed": t.time_s,
        "peak_memory_consumed": f"{round(t.memory_mb * 1024)} kB",
    }


def _factor(value: float) -> int | float:
    """ExecEval's time factors are integers: keep that type when the value is one."""
    return int(value) if float(value).is_integer() else value


def all_runtimes(mode: str = "default") -> list[dict[str, Any]]:
    """ExecEval's runtime list: every name ExecEval lists (its exact spellings) and every other
    accepted name, with ExecEval's keys and types (extra keys: runtime, cluster, version...).
    In `execeval` mode the commands shown are ExecEval's shipped ones, else the registry's."""
    names = list(EXECEVAL_RUNTIMES) + [n for n in accepted_names() if n not in EXECEVAL_RUNTIMES]
    out = []
    for name in names:
        rt = resolve(name)
        entry = EXECEVAL_RUNTIMES.get(name)
        if mode == "execeval" and entry is not None:
            shown = {
                "compile_cmd": entry.compile_cmd,
                "compile_flags": entry.compile_flags,
                "execute_cmd": entry.execute_cmd,
                "execute_flags": entry.execute_flags,
                "is_compiled": True,
            }
        else:
            compile_argv = _show_argv(rt.binary, rt.compile or ())
            run_argv = _show_argv(rt.binary, rt.run)
            shown = {
                "compile_cmd": compile_argv[0] if compile_argv else "",
                "compile_flags": " ".join(compile_argv[1:]),
                "execute_cmd": run_argv[0] if run_argv else "",
                "execute_flags": " ".join(run_argv[1:]),
                "is_compiled": rt.is_compiled,
            }
        out.append(
            {
                "runtime_name": name,
                **shown,
                "timelimit_factor": _factor(rt.time_factor),
                "has_sanitizer": False,
                "runtime": rt.name,
                "cluster": rt.cluster,
                "version": rt.version,
                "available": rt.available,
            }
        )
    return out


class _KeepPlaceholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _show_argv(binary: str | None, argv: tuple[str, ...]) -> list[str]:
    """A runtime's argv for display: the real binary filled in, other placeholders kept."""
    values = _KeepPlaceholders(binary=binary or "{binary}")
    return [a.format_map(values) for a in argv]
