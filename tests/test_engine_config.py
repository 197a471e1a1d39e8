"""The engine's switches: one declaration, one parsing rule, never read at import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.caches import files as cache
from code_eval_taskpack.execution.config import (
    SWITCHES,
    EngineConfig,
    or_env,
    parse,
)
from code_eval_taskpack.execution.judge.engine import Engine
from code_eval_taskpack.execution.languages import registry as languages
from code_eval_taskpack.execution.languages.registry import Runtime
from code_eval_taskpack.execution.speedups import go_direct, pch, warm_compiler
from code_eval_taskpack.execution.speedups import jvm_cds as class_data
from code_eval_taskpack.execution.speedups.zygotes import cpython as cpython_zygote
from code_eval_taskpack.execution.types import Job, Result, TestCase, Verdict

BOOLEANS = [s for s in SWITCHES if s.kind is bool]
#: each boolean switch as the module that uses it reads it (no configuration given: the
#: environment's now)
READERS = {
    "pch": pch.enabled,
    "go_direct": go_direct.enabled,
    "warm_compilers": warm_compiler.enabled,
    "zygote": cpython_zygote.enabled,
    "cpython_zygote": cpython_zygote.cpython_enabled,
    "classic_build": languages.classic_build,
    "jvm_cds": class_data.switched_on,
}
WORDS = [
    ("1", True), ("true", True), ("YES", True), (" On ", True), ("True", True),
    ("0", False), ("false", False), ("No", False), (" OFF", False), ("FALSE ", False),
]  # fmt: skip


def test_every_boolean_switch_has_a_reader() -> None:
    assert sorted(READERS) == sorted(s.field for s in BOOLEANS)


@pytest.mark.parametrize("switch", BOOLEANS, ids=lambda s: s.env)
@pytest.mark.parametrize(("text", "expected"), WORDS)
def test_boolean_rule(
    monkeypatch: pytest.MonkeyPatch, switch: object, text: str, expected: bool
) -> None:
    monkeypatch.setenv(switch.env, text)  # type: ignore[attr-defined]
    assert getattr(or_env(None), switch.field) is expected  # type: ignore[attr-defined]
    assert READERS[switch.field]() is expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("switch", BOOLEANS, ids=lambda s: s.env)
@pytest.mark.parametrize("text", [None, "", "   "])
def test_unset_or_empty_is_the_default(
    monkeypatch: pytest.MonkeyPatch, switch: object, text: str | None
) -> None:
    if text is None:
        monkeypatch.delenv(switch.env, raising=False)  # type: ignore[attr-defined]
    else:
        monkeypatch.setenv(switch.env, text)  # type: ignore[attr-defined]
    assert READERS[switch.field]() is switch.default  # type: ignore[attr-defined]


@pytest.mark.parametrize("switch", BOOLEANS, ids=lambda s: s.env)
@pytest.mark.parametrize("text", ["2", "enabled", "y", "nope"])
def test_bad_boolean_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, switch: object, text: str
) -> None:
    monkeypatch.setenv(switch.env, text)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=switch.env) as raised:  # type: ignore[attr-defined]
        READERS[switch.field]()  # type: ignore[attr-defined]
    assert repr(text) in str(raised.value)


def test_warm_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODE_EVAL_WARM_SERVERS", raising=False)
    assert or_env(None).warm_servers == 1
    assert warm_compiler.WarmPool()._limit() == 1
    monkeypatch.setenv("CODE_EVAL_WARM_SERVERS", " 3 ")
    assert warm_compiler.WarmPool()._limit() == 3
    assert warm_compiler.WarmPool(per_spec=2)._limit() == 2  # the pool's own number wins
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("CODE_EVAL_WARM_SERVERS", bad)
        with pytest.raises(ValueError, match="CODE_EVAL_WARM_SERVERS"):
            warm_compiler.WarmPool()._limit()


def test_cache_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path / "c"))
    assert cache.cache_root() == tmp_path / "c"
    monkeypatch.setenv("CODE_EVAL_CACHE", "")
    assert cache.cache_root() == Path.home() / ".cache" / "code_eval_taskpack"


def test_from_env_reads_a_given_mapping_and_values_in_code_obey_the_rule() -> None:
    config = EngineConfig.from_env({"CODE_EVAL_PCH": "off", "CODE_EVAL_WARM_SERVERS": "4"})
    assert (config.pch, config.warm_servers, config.go_direct) == (False, 4, True)
    assert EngineConfig(warm_servers="2").warm_servers == 2  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CODE_EVAL_WARM_SERVERS"):
        EngineConfig(warm_servers=0)
    assert parse(SWITCHES[0], None) is True


def test_speedups_sent_with_a_job_are_validated() -> None:
    base = EngineConfig()
    sent = EngineConfig(pch=False, classic_build=True, warm_servers=3).speedups()
    assert sent == {
        "pch": False,
        "go_direct": True,
        "warm_compilers": True,
        "zygote": True,
        "cpython_zygote": False,
    }
    assert base.with_speedups(sent) == EngineConfig(pch=False)
    assert base.with_speedups(None) is base
    for hostile in (
        {"cache": "/etc"},
        {"warm_servers": 1000},
        {"classic_build": True},
        {"pch": "no"},
        ["pch"],
        {"x": 1},
    ):
        with pytest.raises(ValueError):
            base.with_speedups(hostile)


def test_import_with_bad_values_does_not_fail() -> None:
    env = {**os.environ, **{s.env: "not-a-value" for s in SWITCHES if s.kind is not Path}}
    code = (
        "import code_eval_taskpack.execution as e, code_eval_taskpack.execution.speedups.warm_compiler, "
        "code_eval_taskpack.execution.speedups.pch, code_eval_taskpack.execution.speedups.go_direct, "
        "code_eval_taskpack.execution.judge.engine\n"
        "from code_eval_taskpack.execution.speedups import pch\n"
        "try:\n    pch.enabled()\nexcept ValueError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "CODE_EVAL_PCH='not-a-value'" in done.stdout


def test_a_benchmark_setting_reads_its_variable_through_the_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(Which modules may read a `CODE_EVAL_*` variable: tests/test_layering.py.)"""
    from code_eval_taskpack.execution.config import setting_text
    from code_eval_taskpack.utils.settings import lookup

    monkeypatch.setenv("CODE_EVAL_EXEC_BACKEND", "ray")
    assert setting_text("CODE_EVAL_EXEC_BACKEND") == "ray"
    assert lookup({}, "exec_backend", "CODE_EVAL_EXEC_BACKEND") == "ray"
    monkeypatch.setenv("CODE_EVAL_EXEC_BACKEND", "")
    assert setting_text("CODE_EVAL_EXEC_BACKEND") is None  # empty reads as unset
    assert lookup({}, "exec_backend", "CODE_EVAL_EXEC_BACKEND", default="local") == "local"
    monkeypatch.delenv("CODE_EVAL_EXEC_BACKEND")
    assert setting_text("CODE_EVAL_EXEC_BACKEND") is None


class _SwitchRecorder(LocalBackend):
    """The local backend, noting the switches it is handed with each program."""

    def __init__(self) -> None:
        self.seen: list[tuple[bool, bool]] = []

    def judge(self, job: Job, runtime: Runtime, **kwargs: Any) -> Result:
        config = kwargs["config"]
        self.seen.append((pch.enabled(config), warm_compiler.enabled(config)))
        return super().judge(job, runtime, **kwargs)


def test_engine_config_reaches_the_local_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODE_EVAL_PCH", "1")
    monkeypatch.setenv("CODE_EVAL_WARM_COMPILERS", "1")
    job = Job(language="Python 3", source_code="print(input())", tests=(TestCase("7\n", ("7",)),))
    backend = _SwitchRecorder()
    chosen = Engine(workers=1, backend=backend, config=EngineConfig(pch=False))
    assert chosen.judge(job).verdict is Verdict.PASSED
    following = Engine(workers=1, backend=backend)  # None: the environment, when judging
    monkeypatch.setenv("CODE_EVAL_WARM_COMPILERS", "off")
    assert following.judge(job).verdict is Verdict.PASSED
    one_job = EngineConfig(warm_compilers=False)  # one program's switches, the engine's kept
    assert chosen.judge(job, config=one_job).verdict is Verdict.PASSED
    assert backend.seen == [(False, True), (True, False), (True, False)]
    assert chosen.config == EngineConfig(pch=False)
    assert pch.enabled()  # the engine's switches never reach the environment


def test_engine_rejects_a_bad_environment_when_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODE_EVAL_GO_DIRECT", "maybe")
    with pytest.raises(ValueError, match="CODE_EVAL_GO_DIRECT='maybe'"):
        Engine(workers=1)
    assert Engine(workers=1, config=EngineConfig()).config == EngineConfig()


def test_readme_switch_table_is_rendered_from_the_declarations() -> None:
    from code_eval_taskpack.execution import config

    text = config.README.read_text(encoding="utf-8")
    assert config.rendered_readme(text) == text, "run python -m code_eval_taskpack.execution.config"
    assert config.main(["--check"]) == 0
    for switch in SWITCHES:
        assert f"`{switch.env}`" in config.render_table()
    with pytest.raises(ValueError, match="markers"):
        config.rendered_readme("no table here")


def test_a_given_config_wins_and_none_is_the_environment_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODE_EVAL_PCH", "1")
    assert not pch.enabled(EngineConfig(pch=False))
    assert pch.enabled(None)
    monkeypatch.setenv("CODE_EVAL_PCH", "0")
    assert not pch.enabled(None)  # read at the call, not when anything was made
    assert pch.enabled(EngineConfig(pch=True))


def test_a_judge_server_takes_the_drivers_speedups_and_only_those(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import http.client
    import json
    import threading

    from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
    from code_eval_taskpack.execution.backends.remote.protocol import job_to_wire
    from code_eval_taskpack.execution.server.http import make_server

    monkeypatch.setenv("CODE_EVAL_PCH", "1")
    monkeypatch.setenv("CODE_EVAL_WARM_COMPILERS", "1")
    srv = make_server("127.0.0.1", 0, workers=1)
    recorder = _SwitchRecorder()
    srv.engine.backend = recorder
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    job = Job(language="Python 3", source_code="print(input())", tests=(TestCase("5\n", ("5",)),))
    try:
        url = f"http://127.0.0.1:{port}"
        for config in (EngineConfig(pch=False), EngineConfig()):
            driver = Engine(workers=1, backend=RemoteBackend(servers=url), config=config)
            assert driver.judge(job).verdict is Verdict.PASSED
        assert recorder.seen == [(False, True), (True, True)]
        for hostile in ({"cache": "/etc"}, {"pch": "off"}, {"classic_build": True}, [1]):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            body = json.dumps({"job": job_to_wire(job), "engine": hostile})
            conn.request(
                "POST", "/api/judge", body=body, headers={"Content-Type": "application/json"}
            )
            reply = conn.getresponse()
            assert reply.status == 400, hostile
            assert "engine switch" in json.loads(reply.read())["error"]
            conn.close()
        assert len(recorder.seen) == 2  # nothing judged for a hostile body
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_ray_node_takes_the_drivers_speedups_and_only_those(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from code_eval_taskpack.execution.backends.ray import node as ray_node
    from code_eval_taskpack.execution.backends.ray.node import NodeJudge
    from code_eval_taskpack.execution.inputs import DEFAULT_INPUT_LIMITS

    # the node's name comes from Ray (seconds to import); the judging under test does not
    monkeypatch.setattr(ray_node, "node_identity", lambda: {"node": "here"})

    node = NodeJudge(1)
    job = Job(language="Python 3", source_code="print(input())", tests=(TestCase("3\n", ("3",)),))
    _, results = node.judge([job], "required", DEFAULT_INPUT_LIMITS, {"pch": False})
    assert results[0]["verdict"] == "PASSED"
    [(key, engine)] = node._engines.items()
    assert engine.config is not None and engine.config.pch is False and key[2] == engine.config
    for hostile in ({"cache": "/etc"}, {"warm_servers": 64}, {"go_direct": "0"}):
        with pytest.raises(ValueError, match="engine switch"):
            node.judge([job], "required", DEFAULT_INPUT_LIMITS, hostile)
    assert len(node._engines) == 1
