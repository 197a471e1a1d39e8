"""The remote backend: whole jobs judged by one or more judge servers (`code-exec serve`).

`--backend remote --servers URL[,URL...]`. Each job goes to the live server with the fewest
requests in flight (round robin among equals), under a timeout derived from its limits. A
connection error, a timeout or a malformed reply takes that server out of rotation for
`DEAD_FOR_S` seconds (said on stderr) and the job is retried on another one (bounded attempts);
a 503 is retried after its `Retry-After`. A server that falls is forgotten: what it is and the
runtimes it reported (`/api/info`) are asked again, as it may come back as another server.
Whatever happens, each job gets exactly one result, and that result says which server judged it (`isolation["judged_by"]`), which failed it first
(`failed_servers`) and which were out of rotation (`servers_out_of_rotation`). A reply is
hostile input: one deadline bounds the whole exchange, its size and JSON values are bounded by
what a result of the job can be (`protocol.result_reply_bound`), and anything but a
well-formed result consistent with the job is an INFRA_ERROR naming the server, never a verdict.
Under `required`, every job checks its server's advertised policy and its result's isolation
snapshot (`server_refusal`, `base.verdict_under_policy`), whatever front end asked.

Cache keys and availability use the runtime as the servers report it (`/api/info`), so a server
with another compiler version never shares cache entries with this host's; a server that answers
it cannot judge a runtime (its toolchain is missing there) is never sent a job of it, and a
result lists the servers that could judge it (`isolation["eligible_servers"]`). A server that is not
ours but speaks ExecEval's API (no `/api/info`) is used best-effort: its verdicts and its
isolation are its own, results say so (`isolation["execeval_server"]`), and it never judges
under `--isolation required`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.client
import json
import math
import sys
import threading
import time
import urllib.parse
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ...auth import read_token
from ...config import EngineConfig, or_env
from ...deadline import Deadline
from ...inputs import DEFAULT_INPUT_LIMITS, InputLimits
from ...isolation import REQUIRED_LAYERS, check_policy
from ...languages.registry import Runtime, resolve
from ...limits import MB
from ...types import EXECEVAL_VERDICTS, Job, Result, TestResult, Verdict
from ..base import JobBackend, verdict_under_policy
from .protocol import (
    INFO_REPLY_BYTES,
    ProtocolError,
    execeval_reply_bound,
    info_runtime_from_wire,
    job_to_wire,
    parse_bounded,
    result_from_wire,
    result_reply_bound,
)

#: seconds a failing server stays out of rotation
DEAD_FOR_S = 30.0
CONNECT_TIMEOUT_S = 10.0
#: a request's read timeout beyond what the job's own limits allow (compilation, queueing)
SLACK_S = 300.0
#: longest wait a 503's Retry-After may ask for, and the most 503s one job accepts
MAX_RETRY_AFTER_S = 30.0
MAX_BUSY_REPLIES = 200
#: JSON values an info reply may hold
INFO_REPLY_VALUES = 200_000
#: seconds a failed runtime lookup is remembered (no request storm while servers are down)
NEGATIVE_TTL_S = 5.0
EXECEVAL_OUTCOMES = frozenset(v.value for v in EXECEVAL_VERDICTS)


class _Refused(Exception):
    """A server that may not judge under the job's policy (not a failure of the server)."""


class ServerError(Exception):
    """One failed exchange with one server; `dead` takes the server out of rotation."""

    def __init__(self, message: str, dead: bool = True, retry_after: float | None = None):
        super().__init__(message)
        self.dead = dead
        self.retry_after = retry_after


@dataclasses.dataclass(frozen=True)
class Identity:
    """What a server's `/api/info` said, read whole: a job checks the one it read, so a server
    forgotten meanwhile (see `_failed`) never leaves it half of an answer."""

    kind: str  # "ours" or "execeval"
    info: Mapping[str, Any]


@dataclasses.dataclass
class Server:
    url: str
    scheme: str
    host: str
    port: int
    prefix: str
    in_flight: int = 0
    dead_until: float = 0.0
    judged: int = 0
    failures: int = 0
    last_error: str = ""
    #: read by its first job, forgotten when it falls out of rotation (`_failed`)
    identity: Identity | None = None


def parse_server(url: str) -> Server:
    """`http://host:port[/prefix]` (or https) -> Server; a ValueError naming the URL otherwise."""
    text = url.strip()
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"judge server {url!r}: expected http://HOST:PORT or https://HOST:PORT")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"judge server {url!r}: no query, fragment or credentials in the URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"judge server {url!r}: bad port") from None
    return Server(
        url=text.rstrip("/"),
        scheme=parts.scheme,
        host=parts.hostname,
        port=port,
        prefix=parts.path.rstrip("/"),
    )


class RemoteBackend(JobBackend):
    """Judges whole jobs on judge servers; the engine keeps validation, cache and dedup."""

    name = "remote"
    required_layers = ()  # each server enforces its own policy; see host_refusal

    def __init__(
        self,
        servers: str = "",
        token_file: str = "",
        timeout: str = "",
        retries: str = "3",
        api: str = "auto",
    ) -> None:
        urls = [u for u in servers.split(",") if u.strip()]
        if not urls:
            raise ValueError("the remote backend needs --servers URL[,URL...]")
        self.servers = [parse_server(u) for u in urls]
        if len({s.url for s in self.servers}) != len(self.servers):
            raise ValueError("the same judge server is listed twice")
        self.token = read_token(token_file) if token_file else None
        self.timeout = float(timeout) if timeout else None
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds: {timeout!r}")
        self.retries = int(retries)
        if not 0 <= self.retries <= 20:
            raise ValueError("retries must be between 0 and 20")
        if api not in ("auto", "judge", "execeval"):
            raise ValueError("api must be auto, judge or execeval")
        self.api = api
        self._lock = threading.Lock()
        self._turn = 0
        self._runtimes: dict[str, tuple[float, Runtime]] = {}
        #: runtime name -> the servers that answered they cannot judge it, and why
        self._unable: dict[str, dict[str, str]] = {}

    # -- the backend interface ---------------------------------------------------------------

    def host_refusal(self, policy: str) -> str:
        """Refused when no server answers, or (fail closed) when a server may not judge under
        `policy` (`server_refusal`: the same check `judge` applies to every job)."""
        check_policy(policy)
        errors = []
        reachable = 0
        for server in self.servers:
            try:
                identity = self._identity(server)
            except ServerError as exc:
                errors.append(f"{server.url}: {exc}")
                continue
            reachable += 1
            refusal = self.server_refusal(server.url, identity, policy)
            if refusal:
                return f"{refusal}; use --isolation best-effort to accept its isolation as it is"
        if not reachable:
            return "no judge server reachable: " + "; ".join(errors)
        return ""

    @staticmethod
    def server_refusal(url: str, identity: Identity, policy: str) -> str:
        """Why the server at `url`, as `identity` says it is, may not judge under `policy` (""
        when it may): under "required" it must be one of ours and judge with `--isolation
        required`."""
        if check_policy(policy) != "required":
            return ""
        if identity.kind != "ours":
            return f"judge server {url} is an ExecEval server (its isolation is its own)"
        if identity.info.get("isolation_policy") != "required":
            shown = str(identity.info.get("isolation_policy"))[:40]
            return f"judge server {url} judges with --isolation {shown}"
        return ""

    def parallelism(self) -> int | None:
        """Programs judged at once: the sum of the servers' workers (as they report them)."""
        total = 0
        for server in self.servers:
            try:
                workers = self._identity(server).info.get("workers")
            except ServerError:
                continue
            total += workers if isinstance(workers, int) and 0 < workers <= 4096 else 1
        return total or None

    def describe(self) -> dict[str, Any]:
        with self._lock:
            servers = [
                {
                    "url": s.url,
                    "kind": s.identity.kind if s.identity else "unknown",
                    "judged": s.judged,
                    "failures": s.failures,
                    "out_of_rotation": s.dead_until > time.monotonic(),
                    "last_error": s.last_error,
                    "backend": s.identity.info.get("backend") if s.identity else None,
                }
                for s in self.servers
            ]
            mixed = sorted(
                name for name, (_, rt) in self._runtimes.items() if "||" in rt.fingerprint()
            )
        return {
            "name": self.name,
            "required_layers": [],
            "servers": servers,
            "mixed_runtimes": mixed,
        }

    def resolve(self, language: str) -> Runtime:
        """The registry's runtime (unknown names raise here) as the servers run it: their
        binary, version and fingerprint (joined when servers differ, so a cache entry never
        outlives a change on any server); unavailable when no server answers."""
        base = resolve(language)
        now = time.monotonic()
        with self._lock:
            hit = self._runtimes.get(base.name)
            if hit is not None and (hit[0] == math.inf or hit[0] > now):
                return hit[1]
        seen: dict[str, dict[str, Any]] = {}
        errors = []
        for server in self.servers:
            try:
                seen[server.url] = self._runtime_info(server, language)
            except ServerError as exc:
                errors.append(f"{server.url}: {exc}")
        if not seen:
            rt = _remote_runtime(base, None, "", "no judge server answered: " + "; ".join(errors))
            with self._lock:
                self._runtimes[base.name] = (now + NEGATIVE_TTL_S, rt)
            return rt
        fps = sorted({i["fingerprint"] for i in seen.values()})
        versions = sorted({i["version"] for i in seen.values()})
        first = next(iter(seen.values()))
        usable = [i for i in seen.values() if i["available"]]
        reason = "" if usable else f"unavailable on every server: {first['reason']}"
        rt = _remote_runtime(
            base,
            (usable or [first])[0].get("binary"),
            " / ".join(versions),
            reason,
            fingerprint="remote:" + "||".join(fps),
        )
        with self._lock:
            # complete answers are kept for the process; partial ones are asked again later
            ttl = math.inf if len(seen) == len(self.servers) else now + DEAD_FOR_S
            self._runtimes[base.name] = (ttl, rt)
            self._unable[base.name] = {
                url: str(i.get("reason") or "unavailable")
                for url, i in seen.items()
                if not i["available"]
            }
        return rt

    def eligible_servers(self, runtime_name: str) -> list[str]:
        """The servers that may be sent jobs of the runtime: all but those that answered they
        cannot judge it (a server without the toolchain never receives its jobs)."""
        with self._lock:
            unable = self._unable.get(runtime_name, {})
        return [s.url for s in self.servers if s.url not in unable]

    def runtime_fingerprint(self, runtime: Runtime) -> str:
        return runtime.fingerprint()  # already the servers' (see resolve)

    def judge(
        self,
        job: Job,
        runtime: Runtime,
        *,
        compiled: Any = None,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> Result:
        timeout = self.timeout or _job_timeout(job, runtime)
        tried: list[str] = []
        errors: list[str] = []
        failed: list[str] = []  # the servers that failed this job, and why
        eligible = self.eligible_servers(runtime.name)
        # servers that may not judge under `policy`, or lack the job's toolchain
        refused: set[str] = {s.url for s in self.servers} - set(eligible)
        busy = 0
        attempts = 0
        while attempts <= self.retries:
            server = self._pick(tried, refused)
            if server is None:  # every server out of rotation: wait for the first to return
                if len(refused) == len(self.servers):
                    break
                attempts += 1
                errors.append("no server in rotation")
                time.sleep(min(1.0 + attempts, self._next_revival()))
                continue
            tried.append(server.url)
            try:
                result = self._judge_on(server, job, timeout, policy, input_limits, config)
            except _Refused as exc:
                refused.add(server.url)
                tried.pop()
                errors.append(str(exc))
                continue
            except ServerError as exc:
                self._failed(server, str(exc), exc.dead)
                if exc.retry_after is not None and busy < MAX_BUSY_REPLIES:
                    busy += 1
                    tried.pop()  # a busy server is not a failed one
                    time.sleep(exc.retry_after)
                    continue
                attempts += 1
                errors.append(f"{server.url}: {exc}")
                failed.append(f"{server.url}: {str(exc)[:300]}")
                continue
            finally:
                with self._lock:
                    server.in_flight -= 1
            with self._lock:
                server.judged += 1
            self._note_failures(result, failed)
            result.isolation["eligible_servers"] = eligible
            return result
        result = Result(
            verdict=Verdict.INFRA_ERROR,
            runtime=runtime.info(),
            isolation={"backend": self.name, "judged_by": None, "eligible_servers": eligible},
            detail="no judge server judged the job: "
            + "; ".join(errors[-8:] or [f"no server may judge {runtime.name}"]),
        )
        self._note_failures(result, failed)
        return result

    def _note_failures(self, result: Result, failed: list[str]) -> None:
        """A result says which servers failed its job before it was judged, and which servers
        were out of rotation at the time (so no score hides that a server was dropped)."""
        if failed:
            result.isolation["failed_servers"] = failed
        now = time.monotonic()
        with self._lock:
            dropped = [f"{s.url}: {s.last_error[:300]}" for s in self.servers if s.dead_until > now]
        if dropped:
            result.isolation["servers_out_of_rotation"] = dropped

    # -- choosing servers --------------------------------------------------------------------

    def _pick(self, tried: Sequence[str], refused: Collection[str] = ()) -> Server | None:
        """The live server with the fewest requests in flight (preferring ones this job has not
        tried yet, never one in `refused`), round robin among equals; it is counted in flight
        from here."""
        with self._lock:
            now = time.monotonic()
            live = [s for s in self.servers if s.dead_until <= now and s.url not in refused]
            if not live:
                return None
            fresh = [s for s in live if s.url not in tried] or live
            n = len(self.servers)
            order = {s.url: i for i, s in enumerate(self.servers)}
            best = min(fresh, key=lambda s: (s.in_flight, (order[s.url] - self._turn) % n))
            self._turn += 1
            best.in_flight += 1
            return best

    def _next_revival(self) -> float:
        with self._lock:
            now = time.monotonic()
            return max(0.05, min(s.dead_until for s in self.servers) - now)

    def _failed(self, server: Server, message: str, dead: bool) -> None:
        """Count a failure; a dead one takes the server out of rotation, said on stderr once
        per fall (the jobs it had go to the other servers, and their results say so)."""
        with self._lock:
            server.failures += 1
            server.last_error = message[:500]
            now = time.monotonic()
            fell = dead and server.dead_until <= now
            if dead:
                server.dead_until = now + DEAD_FOR_S
                # it may return as another server: what it is and runs is asked again
                server.identity = None
                self._runtimes.clear()
        if fell:
            print(
                f"warning: judge server {server.url} taken out of rotation for {DEAD_FOR_S:g} s: "
                f"{message[:300]}; its jobs are retried on the other servers",
                file=sys.stderr,
                flush=True,
            )

    # -- talking to one server ---------------------------------------------------------------

    def _request(
        self,
        server: Server,
        method: str,
        path: str,
        body: bytes | None = None,
        timeout: float = CONNECT_TIMEOUT_S,
        bound: tuple[int, int] = (INFO_REPLY_BYTES, INFO_REPLY_VALUES),
    ) -> tuple[int, Any]:
        """One exchange, all of it (connect, send, headers, body) within `timeout` seconds:
        (status, parsed JSON reply), or ServerError for a connection failure, the deadline, a
        503 (with its Retry-After) or a reply over `bound` (bytes, JSON values)."""
        max_bytes, max_values = bound
        deadline = time.monotonic() + timeout
        conn_cls = (
            http.client.HTTPSConnection if server.scheme == "https" else http.client.HTTPConnection
        )
        conn = conn_cls(server.host, server.port, timeout=min(CONNECT_TIMEOUT_S, timeout))
        headers = {"Accept": "application/json", "Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        watchdog: Deadline | None = None
        try:
            conn.connect()
            assert conn.sock is not None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("connect took the whole deadline")
            watchdog = Deadline(conn.sock, left)
            conn.sock.settimeout(left)
            conn.request(method, server.prefix + path, body=body, headers=headers)
            resp = conn.getresponse()
            length = resp.getheader("Content-Length")
            if length is not None and (not length.isdigit() or int(length) > max_bytes):
                raise ServerError(f"reply of {length[:20]} bytes, over the {max_bytes} it can be")
            raw = bytearray()
            while len(raw) <= max_bytes:
                chunk = resp.read(min(1 << 16, max_bytes + 1 - len(raw)))
                if not chunk:
                    break
                raw += chunk
            status = resp.status
            retry_after = resp.getheader("Retry-After")
        except (OSError, http.client.HTTPException) as exc:
            expired = watchdog is not None and watchdog.expired
            kind = "timed out" if expired or isinstance(exc, TimeoutError) else "failed"
            raise ServerError(f"request {kind} (deadline {timeout:g} s): {exc!r}"[:300]) from None
        finally:
            if watchdog is not None:
                watchdog.cancel()
            conn.close()
        if watchdog is not None and watchdog.expired:
            raise ServerError(f"request timed out (deadline {timeout:g} s)")
        if len(raw) > max_bytes:
            raise ServerError(f"reply over the {max_bytes} bytes it can be")
        if status == 503:
            raise ServerError("busy (503)", dead=False, retry_after=_retry_after(retry_after))
        if status == 401:
            raise ServerError("token refused (401): check --token-file", dead=True)
        try:
            payload = parse_bounded(raw, max_values)
        except ProtocolError as exc:
            if status == 200:
                raise ServerError(f"malformed reply (status {status}): {exc}") from None
            payload = raw[:300].decode("utf-8", "replace")  # an error page (Flask's 404...)
        return status, payload

    def _identity(self, server: Server) -> Identity:
        """What the server is, from its `/api/info` (asked once per stay in rotation), which
        also tells ours from ExecEval's."""
        known = server.identity
        if known is not None:
            return known
        if self.api == "execeval":
            status, payload = 404, None
        else:
            status, payload = self._request(server, "GET", "/api/info")
        if status == 200 and isinstance(payload, dict) and payload.get("protocol") == 1:
            kind = "ours"
        elif status == 404 and self.api != "judge":
            s2, runtimes = self._request(server, "GET", "/api/all_runtimes")
            if s2 != 200 or not isinstance(runtimes, list):
                raise ServerError(f"neither /api/info nor /api/all_runtimes answer ({s2})")
            payload = {"isolation_policy": "its own", "workers": 1, "runtimes": runtimes}
            kind = "execeval"
        else:
            raise ServerError(f"/api/info answered {status}: {str(payload)[:200]}")
        identity = Identity(kind, payload)
        with self._lock:
            server.identity = identity
        return identity

    def _runtime_info(self, server: Server, language: str) -> dict[str, Any]:
        identity = self._identity(server)
        if identity.kind == "execeval":
            runtimes = identity.info.get("runtimes", [])
            return _execeval_runtime_info(runtimes, language, server.url)
        query = urllib.parse.urlencode({"language": language})
        status, payload = self._request(server, "GET", f"/api/info?{query}")
        if status != 200 or not isinstance(payload, dict):
            raise ServerError(f"runtime lookup answered {status}: {str(payload)[:200]}", dead=False)
        try:
            return info_runtime_from_wire(payload.get("runtime"), language)
        except ProtocolError as exc:
            raise ServerError(f"malformed runtime info: {exc}") from None

    def _judge_on(
        self,
        server: Server,
        job: Job,
        timeout: float,
        policy: str,
        input_limits: InputLimits,
        config: EngineConfig | None,
    ) -> Result:
        """The server's result for `job`, sent with the speed-ups of `config` (None: the
        environment's now); `_Refused` when the server may not judge under `policy`, and
        INFRA_ERROR when its result was judged under a weaker one."""
        identity = self._identity(server)
        refusal = self.server_refusal(server.url, identity, policy)
        if refusal:
            raise _Refused(refusal)
        if identity.kind == "execeval":
            result = self._judge_execeval(server, job, timeout)
            return verdict_under_policy(
                result, job, policy, REQUIRED_LAYERS, input_limits, server.url
            )
        request: dict[str, object] = {"job": job_to_wire(job)}
        switches = or_env(config).speedups()
        if switches != EngineConfig().speedups():  # only what differs from a node's defaults
            request["engine"] = switches
        body = json.dumps(request).encode("utf-8", "surrogatepass")
        status, payload = self._request(
            server, "POST", "/api/judge", body, timeout, result_reply_bound(job)
        )
        if status != 200:
            error = payload.get("error") if isinstance(payload, dict) else payload
            raise ServerError(f"answered {status}: {str(error)[:300]}", dead=status >= 500)
        try:
            if not isinstance(payload, dict) or "result" not in payload:
                raise ProtocolError("no 'result' in the reply")
            result = result_from_wire(payload["result"], job)
        except ProtocolError as exc:
            raise ServerError(f"malformed reply: {exc}") from None
        result.isolation = {
            **result.isolation,
            "backend": self.name,
            "judged_by": server.url,
            "server_backend": result.isolation.get("backend"),
        }
        if result.verdict is Verdict.INFRA_ERROR:
            result.detail = f"judge server {server.url}: {result.detail}"
            return result
        promised = _promised_layers(identity.info)
        return verdict_under_policy(result, job, policy, promised, input_limits, server.url)

    def _judge_execeval(self, server: Server, job: Job, timeout: float) -> Result:
        """ExecEval's `/api/execute_code`, its outcomes taken as they are (best-effort)."""
        request = {
            "language": job.language,
            "source_code": job.source_code,
            "unittests": [t.to_dict() for t in job.tests],
            "limits": {"cpu": max(1, math.ceil(job.time_limit_s)), "_as": job.memory_limit_mb * MB},
            "stop_on_first_fail": job.stop_on_first_fail,
            "block_network": True,
        }
        body = json.dumps(request).encode("utf-8", "surrogatepass")
        status, payload = self._request(
            server, "POST", "/api/execute_code", body, timeout, execeval_reply_bound(job)
        )
        if status != 200:
            error = payload.get("error") if isinstance(payload, dict) else payload
            raise ServerError(f"answered {status}: {str(error)[:300]}", dead=status >= 500)
        try:
            result = _result_from_execeval(payload, job)
        except ProtocolError as exc:
            raise ServerError(f"malformed ExecEval reply: {exc}") from None
        result.isolation = {
            "backend": self.name,
            "judged_by": server.url,
            "execeval_server": True,
            "note": "verdicts and isolation are the ExecEval server's own, not this engine's",
        }
        return result


def _promised_layers(info: Mapping[str, Any]) -> tuple[str, ...]:
    """The layers a result of this server must show active under "required": the local
    sandbox's (every backend judges in it) and those the server's backend declares."""
    backend = info.get("backend")
    declared = backend.get("required_layers") if isinstance(backend, dict) else None
    extra = [x for x in declared if isinstance(x, str)] if isinstance(declared, list) else []
    return tuple(dict.fromkeys([*REQUIRED_LAYERS, *extra]))


def _remote_runtime(
    base: Runtime, binary: str | None, version: str, reason: str, fingerprint: str = ""
) -> Runtime:
    """A copy of the registry's runtime carrying what the servers report."""
    rt = dataclasses.replace(
        base,
        _lock=threading.Lock(),
        _binary=(binary or None, reason) if reason else (binary or "remote", ""),
        _version=version or "unknown",
        _fingerprint=fingerprint or f"remote-unavailable|{base.name}",
    )
    return rt


def _job_timeout(job: Job, runtime: Runtime) -> float:
    """How long one job may take on a server: compilation, every test at its wall limit, and
    slack for the server's queue."""
    cpu = job.time_limit_s * runtime.time_factor
    wall = 3 * cpu + 1
    if job.overrides is not None:
        wall = job.overrides.wall_s or 3 * (job.overrides.cpu_s or cpu) + 1
    return min(6 * 3600.0, SLACK_S + 120.0 + len(job.tests) * (wall + 1.0))


def _retry_after(value: str | None) -> float:
    try:
        seconds = float(value) if value is not None else 1.0
    except ValueError:
        seconds = 1.0
    if not math.isfinite(seconds):
        seconds = 1.0
    return min(MAX_RETRY_AFTER_S, max(0.05, seconds))


def _execeval_runtime_info(runtimes: Any, language: str, url: str) -> dict[str, Any]:
    """An ExecEval server's entry for `language` (its own spelling), as a runtime info."""
    for entry in runtimes if isinstance(runtimes, list) else []:
        if isinstance(entry, dict) and entry.get("runtime_name") == language:
            digest = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:16]
            return {
                "name": language,
                "cluster": "",
                "version": f"execeval:{digest}",
                "binary": str(entry.get("execute_cmd", ""))[:200] or None,
                "available": True,
                "reason": "",
                "fingerprint": f"execeval|{url}|{digest}",
                "time_factor": 1.0,
            }
    raise ServerError(f"the ExecEval server does not list {language!r}", dead=False)


def _result_from_execeval(payload: Any, job: Job) -> Result:
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        raise ProtocolError("no 'data' list")
    data = payload["data"]
    if len(data) > max(1, len(job.tests)):
        raise ProtocolError("more entries than tests")
    tests: list[TestResult] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ProtocolError(f"data[{i}] is not an object")
        outcome = entry.get("exec_outcome")
        if outcome is None:
            continue  # not run
        if outcome not in EXECEVAL_OUTCOMES:
            raise ProtocolError(f"data[{i}].exec_outcome: unknown {str(outcome)[:40]!r}")
        if outcome == Verdict.COMPILATION_ERROR.value:
            if len(data) != 1:
                raise ProtocolError("a compilation error with test results")
            shown = entry.get("result")
            return Result(
                verdict=Verdict.COMPILATION_ERROR,
                detail=str(shown)[:4000] if shown is not None else "compilation error",
            )
        spent = entry.get("time_consumed")
        tests.append(
            TestResult(
                verdict=Verdict(outcome),
                time_s=float(spent) if isinstance(spent, int | float) and spent >= 0 else 0.0,
                stdout=str(entry.get("result") or "")[:2000],
            )
        )
    if not tests:
        raise ProtocolError("no test was run")
    failing = [t.verdict for t in tests if t.verdict is not Verdict.PASSED]
    if not failing and len(tests) != len(job.tests):
        raise ProtocolError("fewer results than tests and no failure")
    return Result(verdict=failing[0] if failing else Verdict.PASSED, tests=tests)
