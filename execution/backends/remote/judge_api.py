"""The judge server's side of the remote backend (served by `execution/server/http.py`, which
reads the body, admits the request and sends the answer; the client is `client.py`, the wire
format `protocol.py`).

`GET /api/info[?language=NAME]` says what judges here (engine version, workers, policy, the
runtime's fingerprint) and `POST /api/judge` takes one whole Job and answers its whole Result.
"""

from __future__ import annotations

import dataclasses
import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from ...config import EngineConfig
from ...inputs import validate_job
from ...languages.registry import UnknownLanguageError
from ...types import Job
from ...version import ENGINE_VERSION
from .protocol import PROTOCOL_VERSION, ProtocolError, job_from_wire

if TYPE_CHECKING:
    from ...judge.engine import Engine

#: an answer: its HTTP status and its JSON payload
Reply = tuple[HTTPStatus, Any]


@dataclasses.dataclass(frozen=True)
class JudgeRequest:
    """A validated `POST /api/judge`: the job and the driver's speed-up switches."""

    job: Job
    switches: EngineConfig


def parse_judge(raw: bytes, engine: Engine) -> JudgeRequest | Reply:
    """`POST /api/judge`'s body -> the request, else the 400 that answers it. An `engine` object
    beside the job holds the driver's speed-up switches (`config.SPEEDUPS`, booleans only)."""
    try:
        body = json.loads(raw)
        if not isinstance(body, dict) or set(body) not in ({"job"}, {"job", "engine"}):
            raise ProtocolError('the body must be {"job": {...}} (and "engine": {...})')
        job = job_from_wire(body["job"])
        validate_job(job, engine.input_limits)
        # the driver's speed-up switches (config.SPEEDUPS only: never isolation), validated
        switches = engine.switches().with_speedups(body.get("engine"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        return HTTPStatus.BAD_REQUEST, {"error": f"invalid JSON: {exc!r}"[:500]}
    except ValueError as exc:  # ProtocolError, InvalidJob, a huge integer
        return HTTPStatus.BAD_REQUEST, {"error": str(exc)[:2000]}
    return JudgeRequest(job=job, switches=switches)


def judge(engine: Engine, request: JudgeRequest) -> Reply:
    """An admitted `POST /api/judge`: one whole Job in, its whole Result out (INFRA_ERROR
    included: the client decides what an engine failure means)."""
    result = engine.judge(request.job, config=request.switches)
    return HTTPStatus.OK, {"result": result.to_dict(), "server": {"engine_version": ENGINE_VERSION}}


def server_info(engine: Engine, query: str, capacity: int, mode: str) -> Reply:
    """`GET /api/info[?language=NAME]`: what judges here (engine version, workers, backend,
    isolation policy) and, with a language, the runtime that judges it here."""
    info: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "engine_version": ENGINE_VERSION,
        "workers": engine.workers,
        "capacity": capacity,
        "mode": mode,
        "isolation_policy": engine.isolation,
        "backend": engine.backend.describe(),
    }
    params = parse_qs(query, max_num_fields=4)
    names = params.get("language")
    if names:
        try:
            rt = engine.backend.resolve(names[0])
        except UnknownLanguageError as exc:
            return HTTPStatus.BAD_REQUEST, {"error": f"field 'language': {exc}"}
        info["runtime"] = {
            **{k: v for k, v in rt.info().items() if k in ("name", "cluster", "version")},
            "binary": rt.binary,
            "available": rt.available,
            "reason": rt.reason,
            "fingerprint": engine.backend.runtime_fingerprint(rt),
            "time_factor": rt.time_factor,
        }
    return HTTPStatus.OK, info
