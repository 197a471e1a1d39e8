"""Command line: `code-exec {run,batch,doctor,serve}`.

Exit codes: 0 = every program was judged (whatever its verdict); 1 = an engine failure
(INFRA_ERROR) left some program unjudged; 2 = bad usage or bad input (unknown language, malformed
file), reported with the file, line and field.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends.options import BACKEND_OPTIONS
from ..caches.files import absolute
from ..errors import DataError
from ..isolation import ISOLATION_POLICIES
from ..run.compare import MODES
from ..types import Job, Verdict

EXIT_OK, EXIT_INFRA, EXIT_USAGE = 0, 1, 2


def add_backend_options(parser: argparse.ArgumentParser, skip: Sequence[str] = ()) -> None:
    """`--backend` and every option of `BACKEND_OPTIONS` (except the flags in `skip`)."""
    group = parser.add_argument_group("where programs run")
    group.add_argument(
        "--backend",
        default=None,
        help="local (default), remote (judge servers, --servers) or ray (a Ray cluster, "
        "--ray-address); any registered backend name",
    )
    for opt in BACKEND_OPTIONS:
        if opt.flag not in skip:
            group.add_argument(
                opt.flag,
                dest=f"backend_{opt.key}",
                default=None,
                metavar=opt.metavar,
                help=f"{opt.help} [{', '.join(opt.backends)}]",
            )


def backend_options(args: argparse.Namespace) -> dict[str, str]:
    """The options given for the chosen backend; one meant for another backend is a DataError
    (never silently dropped)."""
    name = getattr(args, "backend", None) or "local"
    out: dict[str, str] = {}
    for opt in BACKEND_OPTIONS:
        value = getattr(args, f"backend_{opt.key}", None)
        if value is None:
            continue
        if name not in opt.backends:
            raise DataError(
                opt.flag, f"applies to --backend {' or '.join(opt.backends)}, not {name!r}"
            )
        out[opt.key] = str(value)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="code-exec", description="Sandboxed judge for stdin/stdout programs."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="judge one program, print one JSON object")
    run.add_argument(
        "--language", required=True, help="any accepted name, e.g. 'GNU C++17', 'PyPy 3', 'Java'"
    )
    run.add_argument("--source", required=True, type=Path, help="program source file")
    run.add_argument(
        "--tests",
        required=True,
        type=Path,
        help='JSON list of {"input": str, "output": [str, ...]}',
    )
    run.add_argument(
        "--time-limit",
        type=_time_limit,
        default=2.0,
        metavar="S",
        help="problem time limit in seconds, before the runtime's factor (default 2)",
    )
    run.add_argument(
        "--memory-limit",
        type=_memory_limit,
        default=256,
        metavar="MB",
        help="memory limit in MB (default 256)",
    )
    run.add_argument(
        "--all-tests",
        action="store_true",
        help="run every test instead of stopping at the first failure",
    )
    run.add_argument("--comparator", choices=MODES, default="default")
    _add_isolation(run)
    run.set_defaults(func=cmd_run)

    batch = sub.add_parser("batch", help="judge a JSONL file of jobs (resumable)")
    batch.add_argument(
        "input",
        type=Path,
        help='JSONL: {"id", "language", "source_code", "unittests", "time_limit_s"?, "memory_limit_mb"?}',
    )
    batch.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        help="JSONL results, one line per input line, in input order",
    )
    batch.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="parallel programs (default: one per CPU)",
    )
    where = batch.add_mutually_exclusive_group()
    where.add_argument(
        "--cache",
        type=absolute,  # its paths reach compilers and sandboxes: never cwd-relative
        default=None,
        metavar="DIR",
        help="result cache (default: $CODE_EVAL_CACHE/exec or ~/.cache/code_eval_taskpack/exec)",
    )
    where.add_argument(
        "--no-cache", action="store_true", help="judge everything again, store nothing"
    )
    batch.add_argument(
        "--comparator", choices=MODES, default="default", help="for lines that do not name one"
    )
    batch.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _add_isolation(batch)
    batch.set_defaults(func=cmd_batch)

    doctor = sub.add_parser("doctor", help="runtimes, versions, availability and isolation layers")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.set_defaults(func=cmd_doctor)

    serve = sub.add_parser("serve", help="ExecEval-compatible HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=5000)
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="programs judged at once (default: one per CPU)",
    )
    serve.add_argument(
        "--comparator", choices=MODES, default="default", help="for requests that do not name one"
    )
    serve.add_argument(
        "--mode",
        choices=("default", "execeval"),
        default="default",
        help="execeval: ExecEval's commands, limits, comparator and outcomes (identical numbers)",
    )
    serve.add_argument(
        "--queue-size",
        type=_positive_int,
        default=64,
        help="requests waiting for a worker before the server answers 503 (default 64)",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="clients must send this bearer token (required to listen beyond 127.0.0.1)",
    )
    _add_isolation(serve, skip=("--token-file",))
    serve.set_defaults(func=cmd_serve)
    return parser


def _add_isolation(parser: argparse.ArgumentParser, skip: Sequence[str] = ()) -> None:
    parser.add_argument(
        "--isolation",
        choices=ISOLATION_POLICIES,
        default="required",
        help="required (default): refuse unless every sandbox layer is available; best-effort: "
        "run with what the host offers, each result lists the missing layers",
    )
    add_backend_options(parser, skip=skip)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "isolation", None) is not None:
        from ..judge.engine import isolation_refusal

        try:
            args.backend_opts = backend_options(args)
            refusal = isolation_refusal(args.isolation, args.backend, args.backend_opts)
        except (ValueError, DataError) as exc:  # an unknown backend name, a bad option
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if refusal:
            print(f"error: {refusal}", file=sys.stderr)
            return EXIT_INFRA
    try:
        code: int = args.func(args)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; finished results are in the cache", file=sys.stderr)
        return 130
    return code


# -- run ------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from ..backends import get_backend
    from ..judge.batch import output_record
    from ..judge.engine import Engine
    from ..judge.jobfile import read_tests_file
    from ..languages.registry import UnknownLanguageError, resolve

    try:
        resolve(args.language)
    except UnknownLanguageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        source = args.source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(args.source, f"cannot read the source: {exc}") from None
    job = Job(
        language=args.language,
        source_code=source,
        tests=read_tests_file(args.tests),
        time_limit_s=args.time_limit,
        memory_limit_mb=args.memory_limit,
        stop_on_first_fail=not args.all_tests,
        comparator=args.comparator,
        id=str(args.source),
    )
    backend = get_backend(args.backend, args.backend_opts)
    result = Engine(workers=1, isolation=args.isolation, backend=backend).judge(job)
    print(json.dumps(output_record(result)))
    if result.verdict is Verdict.INFRA_ERROR:
        print(f"error: engine failure: {result.detail}", file=sys.stderr)
        return EXIT_INFRA
    return EXIT_OK


# -- batch ----------------------------------------------------------------------------------


def cmd_batch(args: argparse.Namespace) -> int:
    from ..backends import get_backend
    from ..caches.files import default_cache_dir
    from ..caches.results import ResultCache
    from ..judge.batch import run_batch

    cache = None if args.no_cache else ResultCache(args.cache or default_cache_dir())
    stats = run_batch(
        args.input,
        args.output,
        workers=args.workers,
        cache=cache,
        comparator=args.comparator,
        show_progress=not args.no_progress,
        isolation=args.isolation,
        backend=get_backend(args.backend, args.backend_opts),
    )
    # One parseable line: how many programs were run, served from the cache, or deduplicated.
    print(f"stats: {json.dumps(stats.to_dict())}", file=sys.stderr)
    if stats.infra_errors:
        print(
            f"error: {stats.infra_errors} job(s) hit an engine failure (INFRA_ERROR, see their "
            "'detail'); they were not cached: fix the cause and rerun to judge them",
            file=sys.stderr,
        )
        return EXIT_INFRA
    return EXIT_OK


# -- doctor ---------------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..isolation import LAYERS
    from ..languages.registry import runtimes
    from ..sandbox.command import probe_isolation

    rows: list[dict[str, Any]] = []
    for rt in runtimes():
        rows.append(
            {
                "name": rt.name,
                "cluster": rt.cluster,
                "version": rt.version,
                "binary": rt.binary or "-",
                "available": rt.available,
                "why_not": rt.reason,
            }
        )
    isolation = probe_isolation()
    from ..execeval.runtime_table import host_rows

    against = host_rows(runtimes())
    if args.json:
        versus = [
            dict(zip(("runtime", "version", "execeval", "difference"), r, strict=True))
            for r in against
        ]
        print(
            json.dumps(
                {"runtimes": rows, "against_execeval": versus, "isolation": isolation}, indent=2
            )
        )
        return EXIT_OK
    table = [
        [
            r["name"],
            r["cluster"],
            r["version"],
            r["binary"],
            "yes" if r["available"] else f"NO: {r['why_not']}",
        ]
        for r in rows
    ]
    print(_table(["runtime", "cluster", "version", "binary", "available"], table))
    print()
    print(_table(["runtime", "version here", "ExecEval's toolchain", "what differs"], against))
    print()
    layer_rows = [[name, "active" if isolation.get(name) else "INACTIVE"] for name in LAYERS]
    for key in (
        "backend",
        "cgroup_version",
        "cpu_enforcement",
        "memory_enforcement",
        "unenforced",
        "user_namespace",
    ):
        if key in isolation:
            layer_rows.append([key, str(isolation[key])])
    print(_table(["isolation layer", "status"], layer_rows))
    for note in isolation.get("notes", []):
        print(f"note: {note}")
    from ..judge.engine import isolation_refusal

    print(f"isolation policy 'required': {isolation_refusal('required') or 'satisfied'}")
    available = sum(1 for r in rows if r["available"])
    print(f"\n{available}/{len(rows)} runtimes available")
    return EXIT_OK


def _table(header: list[str], rows: list[list[Any]]) -> str:
    cells = [header, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- serve ----------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from ..auth import TokenError, bind_refusal, read_token
    from ..server.http import serve

    try:
        token = read_token(args.token_file) if args.token_file else None
    except TokenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    refusal = bind_refusal(args.host, token)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return EXIT_USAGE
    serve(
        args.host,
        args.port,
        workers=args.workers,
        comparator=args.comparator,
        mode=args.mode,
        queue_size=args.queue_size,
        isolation=args.isolation,
        backend=args.backend,
        token=token,
        backend_options=args.backend_opts,
    )
    return EXIT_OK


# -- argument types -------------------------------------------------------------------------


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _time_limit(text: str) -> float:
    from ..inputs import InvalidJob, check_time_limit

    try:
        return check_time_limit(_positive_float(text))
    except InvalidJob as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc.message}") from None


def _memory_limit(text: str) -> int:
    from ..inputs import InvalidJob, check_memory_limit

    try:
        return check_memory_limit(_positive_int(text))
    except InvalidJob as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc.message}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value
