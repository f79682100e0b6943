"""Security: secrets stay out of the lake, the logs and Prefect; SQL only reads the lake; ids and
keys cannot walk out of the lake root.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import boto3
import duckdb
import pytest
from openai_server import OpenAIServer, Reply
from typer.testing import CliRunner

from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.records import Rejection, SynthTask, Verification
from evosyn.space import seed_space
from evosyn.storage import Lake, LakeError, ReadOnlyQueryError
from evosyn.storage.backends import BackendError, LocalBackend, check_key
from evosyn.storage.sql import query
from evosyn.tasks.lake_step import Calls, flush_calls

OFFLINE = Path("deployments/campaigns/airline-offline.yaml")
SECRET = "sk-secret-7f3a9c1e5b2d4f6a8c0e"


def _files_with(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle`` (Parquet pages included)."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


# ------------------------------------------------------------------ secrets


def _llm_config(server: OpenAIServer, root: Path, **extra: str) -> CampaignConfig:
    overrides = [
        f"lake.root={root}",
        "campaign.id=sec",
        "campaign.rounds=1",
        "campaign.budget_per_round=2",
        "agents.teacher.kind=llm",
        # The base file's programmatic teacher seeds mistakes; the llm teacher has no such key.
        "agents.teacher.mistake_rate=0.0",
        "llm.default.model=openai/test-model",
        f"llm.default.api_base={server.url}",
        "llm.default.backoff_base_s=0.01",
        "llm.default.max_attempts=2",
        *(f"{k}={v}" for k, v in extra.items()),
    ]
    return load_config(OFFLINE, overrides, environ={})


@pytest.fixture
def leaky_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """The test server, with the key in the environment; its first reply quotes the key back."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with OpenAIServer() as server:
        # A 401 that echoes the Authorization header, as some providers do.
        server.script(Reply.unauthorized(leak_key=True))
        yield server


def test_gateway_failure_and_accounting_keep_the_key_out_of_the_lake(
    leaky_server: OpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The quick version: a refused call, its error as a rejection and its llm_calls rows."""
    from evosyn.agents.gateway import FatalLLMError, Gateway

    caplog.set_level(logging.INFO)
    cfg = _llm_config(leaky_server, tmp_path / "lake")
    gateway = Gateway.from_config(cfg.llm, "teacher")
    with pytest.raises(FatalLLMError) as caught:
        gateway.complete([{"role": "user", "content": "hi"}])
    assert leaky_server.requests[0].authorization == f"Bearer {SECRET}"
    lake = Lake(tmp_path / "lake")
    reason = str(caught.value)
    lake.write(
        [Rejection(campaign_id="sec", round=1, blueprint_id="b0", stage="rollout", reason=reason)],
        batch="b0",
    )
    assert flush_calls(lake, Calls([gateway], "sec", 1, "calls"))
    assert "Incorrect API key" in reason and SECRET not in reason
    assert _files_with(tmp_path / "lake", SECRET[:12].encode()) == []
    assert SECRET not in caplog.text


@pytest.mark.slow
def test_llm_teacher_round_keeps_the_key_out_of_lake_and_logs(
    leaky_server: OpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from evosyn.tasks.loop import (
        design,
        generate_tasks,
        is_failure,
        plan_blueprints,
        synthesize_batch,
    )

    caplog.set_level(logging.INFO)
    root = tmp_path / "lake"
    cfg = _llm_config(leaky_server, root)
    space = seed_space("airline", "sec")
    plan = design.fn(cfg, space, None, 1)
    blueprints = plan_blueprints.fn(cfg, space, plan)
    generated = generate_tasks.fn(cfg, blueprints)
    synthesized = synthesize_batch.fn(cfg, generated.tasks, "chunk-000")

    # The server really got the key and really sent it back.
    assert leaky_server.requests[0].authorization == f"Bearer {SECRET}"
    assert leaky_server.request_count > 1
    lake = Lake(root)
    # The 401 is an error, not data: the rollout was tried again (the server answers the
    # second try), and no rejection row holds it.
    assert not [r for r in synthesized.rejections if is_failure(r)]
    assert not [r for r in lake.read(Rejection, "sec") if r.stage == "rollout"]
    assert lake.read(SynthTask, "sec") and lake.read(Verification, "sec")
    assert _files_with(root, SECRET.encode()) == []
    assert _files_with(root, SECRET[:12].encode()) == []  # not even a prefix of it
    out, err = capfd.readouterr()
    assert SECRET not in out + err
    assert SECRET not in caplog.text
    assert all(SECRET not in str(r.args) for r in caplog.records)


@pytest.mark.slow
def test_campaign_flow_keeps_the_key_out_of_prefect(
    leaky_server: OpenAIServer, tmp_path: Path
) -> None:
    """Prefect's stored parameters and logs of a whole LLM-teacher campaign hold no key."""
    from prefect.client.orchestration import get_client
    from prefect.testing.utilities import prefect_test_harness

    from evosyn.flows.campaign import campaign_flow

    root = tmp_path / "lake"
    cfg = _llm_config(leaky_server, root)
    with prefect_test_harness(server_startup_timeout=120):
        summaries = campaign_flow(cfg, "sec")
        assert [s.round for s in summaries] == [1]

        async def stored() -> str:
            async with get_client() as client:
                runs = await client.read_flow_runs()
                tasks = await client.read_task_runs()
                logs = await client.read_logs()
            return json.dumps(
                {
                    "flow_parameters": [r.parameters for r in runs],
                    "task_inputs": [t.task_inputs for t in tasks],
                    "logs": [entry.message for entry in logs],
                },
                default=str,
            )

        text = asyncio.run(stored())
    assert "evosyn-campaign" in text or "sec" in text
    assert SECRET not in text
    assert _files_with(root, SECRET.encode()) == []


def test_no_config_field_can_hold_a_key() -> None:
    # Keys come only from the environment: a key in the config file is an unknown key.
    with pytest.raises(ConfigError, match="api_key"):
        load_config(overrides=[f"llm.default.api_key={SECRET}"], environ={})
    with pytest.raises(ConfigError, match="api_key"):
        load_config(environ={"EVOSYN_LLM__DEFAULT__API_KEY": SECRET})
    dumped = load_config(environ={"OPENAI_API_KEY": SECRET}).model_dump_json()
    assert SECRET not in dumped


# ------------------------------------------------------------------ read-only SQL


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Lake, Path]:
    """A lake with a few rows, a secret file beside it and a sibling lake sharing its prefix."""
    base = tmp_path_factory.mktemp("sql")
    lake = Lake(base / "lake")
    rows = [
        Verification(
            campaign_id="c",
            round=1,
            task_id=f"t{i}",
            trajectory_id=f"tr{i}",
            passed=True,
            reward=1.0,
        )
        for i in range(3)
    ]
    lake.write(rows, batch="b0")
    (base / "secret.txt").write_text("top secret\n", "utf-8")
    Lake(base / "lake2").write(rows, batch="b0")
    return lake, base


def test_sql_reads_the_lake(sandbox: tuple[Lake, Path]) -> None:
    lake, base = sandbox
    assert query(lake, "SELECT count(*) FROM verifications") == (["count_star()"], [(3,)])
    # Reading the lake's own files directly is still allowed.
    pattern = (base / "lake" / "verifications" / "*" / "*" / "*.parquet").as_posix()
    _, rows = query(lake, f"SELECT count(*) AS n FROM read_parquet('{pattern}')")
    assert rows == [(3,)]
    assert query(lake, "DESCRIBE verifications")[1]
    assert query(lake, "SHOW TABLES")[1]
    assert query(lake, "EXPLAIN SELECT * FROM verifications")[1]


WRITES = [
    "INSERT INTO verifications SELECT * FROM verifications",
    "UPDATE verifications SET passed = false",
    "DELETE FROM verifications",
    "DROP VIEW verifications",
    "CREATE TABLE stolen AS SELECT * FROM verifications",
    "CREATE TEMP TABLE t (a INT)",
    "CREATE MACRO m() AS 1",
    "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 'v')",
    "COPY verifications TO '{base}/out.csv'",
    "COPY verifications TO '{base}/lake/out.csv'",
    "EXPORT DATABASE '{base}/export'",
    "ATTACH '{base}/other.duckdb' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA enable_profiling",
    "CHECKPOINT",
    "VACUUM",
    "BEGIN TRANSACTION",
    "SELECT 1; DELETE FROM verifications",
]


@pytest.mark.parametrize("sql", WRITES)
def test_sql_refuses_every_write_before_running_it(sandbox: tuple[Lake, Path], sql: str) -> None:
    lake, base = sandbox
    before = _files(base)
    with pytest.raises(ReadOnlyQueryError, match=r"read-only|cannot parse"):
        query(lake, sql.format(base=base.as_posix()))
    assert _files(base) == before
    assert query(lake, "SELECT count(*) FROM verifications")[1] == [(3,)]


OUTSIDE = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_text('/proc/self/environ')",
    "SELECT * FROM read_text('{base}/secret.txt')",
    "SELECT * FROM read_text('{base}/lake/../secret.txt')",
    "SELECT count(*) FROM read_parquet('{base}/lake2/verifications/*/*/*.parquet')",
    "SELECT * FROM read_json('https://example.com/x.json')",
    "SELECT getenv('OPENAI_API_KEY')",
    "SELECT * FROM query('COPY verifications TO ''{base}/q.csv''')",
    "SELECT * FROM duckdb_extensions()",
]


@pytest.mark.parametrize("sql", OUTSIDE)
def test_sql_cannot_reach_outside_the_lake(
    sandbox: tuple[Lake, Path], sql: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, base = sandbox
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    before = _files(base)
    with pytest.raises(duckdb.Error) as caught:
        query(lake, sql.format(base=base.as_posix()))
    assert "top secret" not in str(caught.value) and SECRET not in str(caught.value)
    assert _files(base) == before


def test_sql_command_refuses_with_a_one_line_error(sandbox: tuple[Lake, Path]) -> None:
    from evosyn.cli import app

    lake, _ = sandbox
    runner = CliRunner()
    cases = {
        "COPY verifications TO '/tmp/x.csv'": "read-only",
        "SELECT * FROM read_csv('/etc/passwd')": "disabled",
    }
    for sql, needle in cases.items():
        result = runner.invoke(app, ["sql", sql, "--set", f"lake.root={lake.root}"])
        assert result.exit_code != 0, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert needle in result.output and "root:x:0" not in result.output


# ------------------------------------------------------------------ paths


@pytest.mark.parametrize("name", ["../evil", "a/b", "/abs", "..", ".hidden", "a\\b", "a b"])
def test_campaign_ids_and_names_that_would_escape_are_config_errors(name: str) -> None:
    with pytest.raises(ConfigError, match=r"campaign\.id"):
        load_config(overrides=[f"campaign.id={name}"], environ={})
    with pytest.raises(ConfigError, match=r"campaign\.name"):
        load_config(overrides=[f"campaign.name={name}"], environ={})


def test_a_name_too_long_for_its_default_id_is_a_config_error() -> None:
    # NAME-YYYYMMDD-HHMMSS must still be a valid id (at most 128 characters).
    assert load_config(overrides=["campaign.name=" + "x" * 112], environ={}).campaign.resolved_id()
    with pytest.raises(ConfigError, match=r"campaign\.name"):
        load_config(overrides=["campaign.name=" + "x" * 113], environ={})


def test_campaign_run_with_an_escaping_name_is_a_one_line_error(tmp_path: Path) -> None:
    from evosyn.cli import app

    root = tmp_path / "lake"
    args = ["campaign", "run", str(OFFLINE), "--set", f"lake.root={root}"]
    result = CliRunner().invoke(app, [*args, "--set", "campaign.name=../../escape"])
    assert result.exit_code == 2, result.output
    assert "campaign.name" in result.output
    assert not (tmp_path / "escape").exists() and not root.exists()


@pytest.mark.parametrize(
    "key",
    [
        "../x.parquet",
        "tasks/../../x.parquet",
        "/etc/x.parquet",
        "tasks//x.parquet",
        "tasks/./x.parquet",
        "tasks\\..\\x.parquet",
        "tasks/x\x00.parquet",
        "",
    ],
)
def test_backend_keys_stay_under_the_root(tmp_path: Path, key: str) -> None:
    backend = LocalBackend(tmp_path / "lake")
    with pytest.raises(BackendError, match="not a plain relative path"):
        backend.put(key, b"x")
    with pytest.raises(BackendError):
        check_key(key)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_lake_refuses_escaping_campaign_ids_and_batches(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "lake"
    lake = Lake(root)
    before = _files(tmp_path)
    # model_construct skips the record's own id check; the lake checks the path again.
    forged = Verification.model_construct(
        campaign_id="../../../escape", round=1, task_id="t", trajectory_id="tr", passed=True
    )
    with pytest.raises(LakeError, match="campaign_id"):
        lake.write([forged], batch="b0")
    ok = Verification(
        campaign_id="c", round=1, task_id="t", trajectory_id="tr", passed=True, reward=1.0
    )
    with pytest.raises(LakeError, match="batch"):
        lake.write([ok], batch="../../escape")
    with pytest.raises(LakeError, match="campaign_id"):
        lake.read(Verification, "../..")
    assert _files(tmp_path) == before


def test_task_ids_from_task_files_never_become_paths(tmp_path: Path) -> None:
    # Task and trajectory ids come from task files and models; they are columns, not paths.
    root = tmp_path / "lake"
    lake = Lake(root)
    hostile = "../../../escape/" + "x" * 8
    rows = [
        Verification(
            campaign_id="c",
            round=1,
            task_id=hostile,
            trajectory_id=hostile + "-t0",
            passed=True,
            reward=1.0,
        )
    ]
    lake.write(rows, batch="b0")
    assert [v.task_id for v in lake.read(Verification, "c")] == [hostile]
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents]
    assert outside == []
    assert not any("escape" in p.as_posix() for p in root.rglob("*"))


def test_s3_objects_named_with_dotdot_are_not_mirrored_outside_the_cache(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    lake = Lake(f"s3://{s3_bucket}/lake", s3_endpoint=s3_server, cache_dir=cache)
    client = boto3.client("s3", endpoint_url=s3_server)
    key = "lake/verifications/c/1/../../../../../../escape.parquet"
    client.put_object(Bucket=s3_bucket, Key=key, Body=b"PAR1")
    with pytest.raises(LakeError, match="not a plain relative path"):
        lake.read(Verification, "c")
    assert not any(p.name == "escape.parquet" for p in tmp_path.rglob("*"))
    assert not (tmp_path / "escape.parquet").exists()
