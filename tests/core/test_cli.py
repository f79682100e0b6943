"""The evosyn CLI: read-only SQL over the lake and campaign config validation."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import typing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evosyn.cli import app
from evosyn.config import load_config
from evosyn.records import Rejection, Verification
from evosyn.storage import Lake

runner = CliRunner()


@pytest.fixture
def lake_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "lake"
    lake = Lake(root)
    for round_ in (1, 2, 3):
        rows = [
            Verification(
                campaign_id="demo",
                round=round_,
                task_id=f"t{i}",
                trajectory_id=f"tr{i}",
                passed=i < round_,
                reward=1.0 if i < round_ else 0.0,
            )
            for i in range(4)
        ]
        lake.write(rows, batch="verify")
    monkeypatch.setenv("EVOSYN_LAKE__ROOT", str(root))
    return root


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def test_sql_answers_over_several_rounds(lake_dir: Path) -> None:
    q = "SELECT round, count(*) AS n FROM verifications WHERE passed GROUP BY 1 ORDER BY 1"
    result = runner.invoke(app, ["sql", q, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"round": 1, "n": 1},
        {"round": 2, "n": 2},
        {"round": 3, "n": 3},
    ]
    result = runner.invoke(app, ["sql", q, "--format", "csv"])
    assert list(csv.reader(io.StringIO(result.stdout))) == [
        ["round", "n"],
        ["1", "1"],
        ["2", "2"],
        ["3", "3"],
    ]
    result = runner.invoke(app, ["sql", q])
    assert result.exit_code == 0 and "3 rows" in result.stdout


@pytest.mark.parametrize(
    "statement",
    [
        "DROP VIEW verifications",
        "INSERT INTO verifications SELECT * FROM verifications",
        "COPY (SELECT * FROM verifications) TO '{out}'",
        "COPY verifications TO '{out}' (FORMAT parquet)",
        "ATTACH '{out}' AS other",
        "SELECT 1; DROP VIEW verifications",
        "CREATE TABLE x AS SELECT 1",
        "SET threads = 1",
        "INSTALL httpfs",
    ],
)
def test_sql_refuses_statements_that_write(lake_dir: Path, tmp_path: Path, statement: str) -> None:
    out = tmp_path / "exfil.out"
    before = _digest(lake_dir)
    result = runner.invoke(app, ["sql", statement.format(out=out)])
    assert result.exit_code == 2
    assert "read-only" in result.stderr and "nothing was changed" in result.stderr
    assert not out.exists()
    assert _digest(lake_dir) == before
    again = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM verifications", "-f", "json"])
    assert json.loads(again.stdout) == [{"n": 12}]


def test_sql_error_is_one_line(lake_dir: Path) -> None:
    result = runner.invoke(app, ["sql", "SELECT nope FROM verifications"])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("error: query failed:")
    assert "Traceback" not in result.output


def test_campaign_run_refuses_what_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text(
        "campaign: {name: t, id: t1, domain: banking}\nlake: {root: mylake}\n", "utf-8"
    )
    result = runner.invoke(app, ["campaign", "run", str(config)])
    assert result.exit_code == 2
    assert "campaign.domain: unknown domain 'banking'" in result.stderr
    result = runner.invoke(
        app, ["campaign", "run", str(config), "--set", "campaign.domain=airline", "--resume"]
    )
    assert result.exit_code == 2 and "nothing to resume" in result.stderr
    assert f"no lake at {tmp_path / 'mylake'}" in result.stderr  # its absolute path
    assert not (tmp_path / "mylake").exists()
    result = runner.invoke(
        app,
        [
            "campaign",
            "run",
            str(config),
            "--set",
            "campaign.domain=airline",
            "--set",
            "agents.planner.kind=none",
        ],
    )
    assert result.exit_code == 2 and "agents.planner.kind" in result.stderr


def test_bad_config_exits_non_zero_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("campaign: {rounds: three}\nextra_section: {}\n", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "evosyn", "campaign", "run", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "campaign.rounds" in lines[0], proc.stderr


def test_campaign_run_quiets_prefect_unless_the_user_chose() -> None:
    from evosyn.cli_common import quiet_prefect_defaults

    env = {"PREFECT_LOGGING_LEVEL": "DEBUG"}
    quiet_prefect_defaults(env)
    assert env["PREFECT_LOGGING_LEVEL"] == "DEBUG"  # the user's choice stays
    assert env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert int(env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]) > 20


def test_round_table_shows_decisions_and_fixed_set_success_with_n_and_interval() -> None:
    from rich.console import Console

    from evosyn.campaign_cli import round_table
    from evosyn.records import RoundSummary

    summaries = [
        RoundSummary(
            campaign_id="c",
            round=r,
            space_version=r,
            budget=60,
            n_blueprints=60,
            n_verified=50 + r,
            fixed_success=0.8,
            fixed_n=10,
            diagnostic_success=0.5 + r / 10,
            diagnostic_n=100 + r,
            n_repaired=r + 2,
            decision=decision,
            status="succeeded",
            started_at=datetime(2026, 1, 1, 0, 0, 0),
            finished_at=datetime(2026, 1, 1, 0, 1, 5 * r),
        )
        for r, decision in ((1, "cold start (seed space)"), (2, "added num_write (failure-driven)"))
    ]
    console = Console(width=80, record=True)
    console.print(round_table("c", summaries, simulated=True))
    text = console.export_text()
    assert "v2" in text and "52/60" in text
    assert "r1: cold start (seed space)" in text and "r2: added num_write" in text
    # 8 of 10: Wilson's 95% interval is [0.49, 0.94]; the growing set is labelled apart
    assert "0.80 [0.49, 0.94]" in text and "0.70" in text and "102" in text
    assert "fixed set" in text and "all diag" in text and "grows every round" in text
    assert "simulated learner" in text
    # Repairs and wall time per round, in their own columns.
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(("1 ", "2 "))]
    assert " 3 " in lines[0] and "1:05" in lines[0] and " 4 " in lines[1] and "1:10" in lines[1]


def test_planted_line_follows_the_weak_slice_round_by_round() -> None:
    from evosyn.campaign_cli import planted_line
    from evosyn.records import RoundSummary

    cfg = load_config(Path("deployments/campaigns/airline-offline.yaml"), [], environ={})
    summaries = [
        RoundSummary(
            campaign_id="c",
            round=r,
            space_version=1,
            budget=60,
            planted_success=k / 10,
            planted_n=10,
            status="succeeded",
        )
        for r, k in ((1, 2), (2, 8))
    ]
    line = planted_line(cfg, summaries)
    assert line is not None
    assert "num_write in {3-4, 5+}" in line and "its 10 fixed-set episodes" in line
    # Wilson 95%: 2 of 10 is [0.06, 0.51], 8 of 10 is [0.49, 0.94]
    assert "r1 0.20 [0.06, 0.51] -> r2 0.80 [0.49, 0.94]" in line
    empty = [s.model_copy(update={"planted_success": None, "planted_n": 0}) for s in summaries]
    assert "no fixed-set task falls in it" in str(planted_line(cfg, empty))
    sft = load_config(None, ["agents.learner.kind=sft"], environ={})
    assert planted_line(sft, summaries) is None


def test_next_commands_name_the_campaign_and_the_lake() -> None:
    from evosyn.campaign_cli import next_commands

    commands = next_commands("/data/my lake", "demo")
    assert all("--lake '/data/my lake'" in c for c in commands)
    assert any(c.startswith("evosyn report demo --out report/demo") for c in commands)
    assert any("campaign_id = 'demo'" in c for c in commands)
    s3 = next_commands("s3://bucket/lake", "demo", "http://127.0.0.1:9000")
    assert "--lake s3://bucket/lake --set lake.s3_endpoint=http://127.0.0.1:9000" in s3[0]


# ------------------------------------------------------------------ finding campaigns


def _campaign_lake(root: Path) -> Lake:
    """Two campaigns: one finished in three rounds, one stopped inside its second round."""
    from datetime import UTC, datetime

    from evosyn.records import Campaign, Factor, ReflectorDecision, RoundSummary

    lake = Lake(root)
    created = datetime(2026, 12, 4, 14, 24, 13, tzinfo=UTC)
    for cid, done in (
        ("airline-offline-20261204-142413", 3),
        ("retail-offline-20261204-150000", 1),
    ):
        lake.write(
            [
                Campaign(
                    campaign_id=cid,
                    round=0,
                    name=cid.rsplit("-", 2)[0],
                    domain=cid.split("-")[0],
                    seed=0,
                    config={
                        "campaign": {"rounds": 3},
                        "agents": {"learner": {"kind": "simulated"}},
                    },
                    created_at=created,
                )
            ],
            batch="campaign",
        )
        for r in range(1, done + 1):
            lake.write(
                [
                    RoundSummary(
                        campaign_id=cid,
                        round=r,
                        space_version=min(r, 2),
                        budget=60,
                        n_blueprints=60,
                        n_verified=50 + r,
                        n_rejected=10 - r,
                        fixed_success=0.6 + r / 10,
                        fixed_n=90,
                        diagnostic_success=0.5 + r / 10,
                        decision="added num_write" if r == 2 else "reallocate",
                        status="succeeded",
                        started_at=created,
                        finished_at=created,
                    )
                ],
                batch="summary",
            )
    lake.write(
        [
            ReflectorDecision(
                campaign_id="airline-offline-20261204-142413",
                round=1,
                action="add_factor",
                new_factor=Factor(name="num_write", values=["0", "1", "2+"]),
                rationale="the learner fails on many writes",
                next_space_version=2,
            )
        ],
        batch="reflect",
    )
    return lake


@pytest.fixture
def wide80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


def test_campaign_list_shows_every_campaign_uncut_at_80_columns(
    tmp_path: Path, wide80: None
) -> None:
    root = tmp_path / "lake"
    _campaign_lake(root)
    result = runner.invoke(app, ["campaign", "list", "--lake", str(root)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert str(root.resolve()) in result.stdout
    row = next(line for line in lines if "airline-offline-20261204-142413" in line)
    assert row.split()[1:] == ["airline", "3/3", "finished", "156", "2026-12-04"]
    row = next(line for line in lines if "retail-offline-20261204-150000" in line)
    assert row.split()[1:] == ["retail", "1/3", "incomplete", "51", "2026-12-04"]
    listed = runner.invoke(app, ["campaign", "list", "--lake", str(root), "--json"])
    assert [c["status"] for c in json.loads(listed.stdout)] == ["finished", "incomplete"]


def test_campaign_list_marks_the_campaigns_with_failed_requests(
    tmp_path: Path, wide80: None
) -> None:
    from datetime import UTC, datetime

    from evosyn.records import RoundSummary

    root = tmp_path / "lake"
    lake = _campaign_lake(root)
    cid = "retail-offline-20261204-150000"
    moment = datetime(2026, 12, 4, 15, 30, tzinfo=UTC)
    second = RoundSummary(
        campaign_id=cid,
        round=2,
        space_version=2,
        budget=60,
        n_blueprints=60,
        n_verified=40,
        n_failed=3,
        status="succeeded",
        started_at=moment,
        finished_at=moment,
    )
    lake.write([second], batch="summary")
    result = runner.invoke(app, ["campaign", "list", "--lake", str(root)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if cid in line)
    assert row.split()[1:] == ["retail", "2/3", "incomplete*", "91", "2026-12-04"]
    row = next(line for line in lines if "airline-offline-20261204-142413" in line)
    assert "finished " in row  # no marker without failures
    assert f"* failed requests, which a resume retries: {cid} 3" in " ".join(result.stdout.split())
    listed = runner.invoke(app, ["campaign", "list", "--lake", str(root), "--json"])
    assert [c["n_failed"] for c in json.loads(listed.stdout)] == [0, 3]


def test_campaign_show_gives_rounds_counts_decisions_and_times(
    tmp_path: Path, wide80: None
) -> None:
    root = tmp_path / "lake"
    _campaign_lake(root)
    cid = "airline-offline-20261204-142413"
    result = runner.invoke(app, ["campaign", "show", cid, "--lake", str(root)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    for fact in ("finished", "3 of 3", "airline", "simulated", "2026-12-04 14:24", "156"):
        assert fact in text
    assert "after round 1, for round 2: added num_write" in text and "space v2" in text
    # success on the fixed set with its interval and n; the growing set's apart
    assert "0.90 [0.82, 0.95]" in text and "90" in text and "0.80" in text
    assert "fixed set" in text and "--resume" not in text
    other = runner.invoke(
        app, ["campaign", "show", "retail-offline-20261204-150000", "--lake", str(root)]
    )
    assert "incomplete" in other.stdout
    # A real command: the stored config needs no file, only which campaign and where.
    resume = (
        f"resume: evosyn campaign run --campaign-id retail-offline-20261204-150000 "
        f"--lake {root.resolve()} --resume"
    )
    assert resume in other.stdout, other.stdout


def test_converged_follows_the_stop_rule() -> None:
    from evosyn.campaigns import converged
    from evosyn.records import RoundSummary

    def rounds(*versions: int) -> list[RoundSummary]:
        return [
            RoundSummary(campaign_id="c", round=r, space_version=v, budget=1, status="succeeded")
            for r, v in enumerate(versions, start=1)
        ]

    assert not converged(rounds(1, 2, 3))
    assert not converged(rounds(1, 1))  # round 1 never counts as unchanged
    assert converged(rounds(1, 2, 2, 2))
    assert not converged(rounds(1, 2, 2, 2), patience=None)  # campaign.patience: null
    assert converged(rounds(1, 2, 2), patience=1)


def test_unknown_campaign_is_named_with_the_known_ones(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    _campaign_lake(root)
    known = "known: airline-offline-20261204-142413, retail-offline-20261204-150000"
    for args in (
        ["campaign", "show", "nope"],
        ["export", "sft", "nope", "--out", str(tmp_path / "sft")],
        ["report", "nope", "--out", str(tmp_path / "report")],
    ):
        result = runner.invoke(app, [*args, "--lake", str(root)])
        assert result.exit_code != 0, args
        line = result.stderr.strip()
        assert "\n" not in line, args
        assert "unknown campaign 'nope'" in line and known in line, args
    assert not (tmp_path / "sft").exists() and not (tmp_path / "report").exists()


def test_read_commands_never_create_a_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVOSYN_LAKE__ROOT", raising=False)
    missing = tmp_path / "elsewhere"
    for args in (
        ["sql", "SELECT 1"],
        ["campaign", "list"],
        ["campaign", "show", "c"],
        ["export", "sft", "c", "--out", "sft"],
        ["report", "c", "--out", "report"],
        ["audit", "c"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, args  # docs/lake.md: no lake is exit 1
        assert result.stderr.strip() == f"error: no lake at {tmp_path / 'lake'}", args
        result = runner.invoke(app, [*args, "--lake", str(missing)])
        assert result.stderr.strip() == f"error: no lake at {missing}", args
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_version_and_help_without_bool_metavars() -> None:
    from evosyn import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"evosyn {__version__}"
    for args in (["--help"], ["campaign", "run", "--help"], ["campaign", "list", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, args
        assert "<bool>" not in result.stdout and "BOOLEAN" not in result.stdout, args
    sql_help = runner.invoke(app, ["sql", "--help"]).stdout
    assert "SHOW TABLES" in sql_help and "DESCRIBE" in sql_help


def _imported_by(*args: str) -> set[str]:
    """Which heavy packages `evosyn ARGS` imports (in a fresh interpreter)."""
    heavy = ("tau2", "pandas", "prefect", "duckdb", "pyarrow", "pydantic", "rich", "matplotlib")
    code = (
        "import sys\nfrom evosyn.cli import app\n"
        f"try:\n    app({list(args)!r})\nexcept SystemExit:\n    pass\n"
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return set(proc.stdout.splitlines()[-1].split())


def test_help_imports_nothing_heavy() -> None:
    # Start-up time is measured by tests/benchmarks/cli_startup.py; this keeps it from regressing.
    assert _imported_by("--help") == set()
    assert _imported_by("--version") == set()


def test_sql_on_a_current_catalog_imports_no_models(tmp_path: Path) -> None:
    # The record models import τ²-bench and pandas: half a second a query, for nothing.
    root = tmp_path / "lake"
    Lake(root)
    assert _imported_by("sql", "SELECT 1", "--lake", str(root)) <= {"duckdb", "pydantic", "rich"}


def test_sql_table_cuts_long_values_and_json_keeps_them(tmp_path: Path) -> None:
    from evosyn.records import Campaign

    root = tmp_path / "lake"
    config = {"notes": "x" * 5000}
    Lake(root).write(
        [Campaign(campaign_id="c", round=0, name="c", domain="airline", seed=0, config=config)],
        batch="campaign",
    )
    q = ["sql", "SELECT campaign_id, config FROM campaigns", "--lake", str(root)]
    table = runner.invoke(app, q).stdout
    assert "xxx…" in table and "cut (--format json: whole)" in table
    assert len(table.splitlines()) < 20
    value = json.loads(runner.invoke(app, [*q, "--format", "json"]).stdout)[0]["config"]
    assert (json.loads(value) if isinstance(value, str) else value) == config


@pytest.mark.parametrize(
    ("round", "key", "spender"),
    [(None, "budget_usd", "the campaign's"), (2, "round_budget_usd", "round 2's")],
)
def test_campaign_run_stopped_by_the_budget_cap_says_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, round: int | None, key: str, spender: str
) -> None:
    from evosyn.agents.gateway import BudgetExceeded
    from evosyn.flows import campaign as campaign_module

    def over_budget(cfg: object, cid: str, **_: object) -> None:
        raise BudgetExceeded("teacher", 0.5, 0.5012, round)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(campaign_module, "campaign_flow", over_budget)
    config = tmp_path / "c.yaml"
    config.write_text(f"campaign: {{name: t, id: t1}}\nllm: {{{key}: 0.5}}\n", "utf-8")
    result = runner.invoke(app, ["campaign", "run", str(config)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    line = result.stderr.strip().splitlines()[-1]  # after the progress bars
    assert line.startswith(f"error: llm.{key} reached: {spender} model calls cost $0.5012")
    assert "$0.5 cap (teacher call refused)" in line
    assert line.endswith(
        f"raise llm.{key} and resume: `evosyn campaign run {config} --campaign-id t1 --resume "
        f"--set llm.{key}=1`"
    )


def _stored_campaign(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *overrides: str,
    flat: dict[str, dict[str, Any]] | None = None,
) -> tuple[Path, list[Any]]:
    """A lake holding campaign `t1`, started with 2 rounds; runs of campaign_flow recorded.

    ``flat`` adds keys to role sections of the stored config, as a campaign stored them while
    the sections were flat (role -> key -> value).
    """
    from evosyn.flows import campaign as campaign_module
    from evosyn.records import Campaign

    root = tmp_path / "lake"
    cfg = load_config(
        None, ["campaign.id=t1", "campaign.rounds=2", f"lake.root={root}", *overrides]
    )
    config = cfg.model_dump(mode="json")
    for role, keys in (flat or {}).items():
        config["agents"][role] |= keys
    Lake(root).write(
        [Campaign(campaign_id="t1", round=0, name="t", domain="airline", seed=0, config=config)],
        batch="campaign",
    )
    runs: list[Any] = []

    def recorded(cfg: Any, cid: str, reconfigure: bool = False) -> list[Any]:
        runs.append((cfg, cid, reconfigure))
        return []

    monkeypatch.setattr(campaign_module, "campaign_flow", recorded)
    monkeypatch.chdir(tmp_path)  # a default ./lake, if anything made one, would land here
    return root, runs


def test_a_resume_runs_the_stored_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, runs = _stored_campaign(tmp_path, monkeypatch)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)  # a copied lake resumes where it is now
    args = ["campaign", "run", "--campaign-id", "t1", "--lake", str(copy), "--resume"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    [(cfg, cid, reconfigure)] = runs
    assert (cid, cfg.campaign.rounds, reconfigure) == ("t1", 2, False)
    assert cfg.lake.root == str(copy)
    # The file it started from, or a spend cap raised: the same campaign, so it resumes.
    started = tmp_path / "c.yaml"
    started.write_text("campaign: {rounds: 2}\n", "utf-8")
    result = runner.invoke(
        app, ["campaign", "run", str(started), *args[2:], "--set", "llm.budget_usd=5"]
    )
    assert result.exit_code == 0, result.output
    assert runs[-1][0].llm.budget_usd == 5


def test_a_campaign_stored_with_another_kinds_settings_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stored before each kind declared its own settings: the llm teacher beside the programmatic
    # one's slip rate, an SFT learner beside an experiment arm's stream of simulated draws.
    kinds = ["agents.teacher.kind=llm", "llm.default.model=m", "agents.learner.kind=sft"]
    old: dict[str, dict[str, Any]] = {
        "teacher": {"mistake_rate": 0.1},
        "learner": {"draw_stream": "evosyn"},
    }
    root, runs = _stored_campaign(tmp_path, monkeypatch, *kinds, flat=old)
    args = ["campaign", "run", "--campaign-id", "t1", "--lake", str(root), "--resume"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    [(cfg, _, _)] = runs
    assert (cfg.agents.teacher.kind, cfg.agents.learner.kind) == ("llm", "sft")
    assert "mistake_rate" not in cfg.agents.teacher.model_dump()
    assert "draw_stream" not in cfg.agents.learner.model_dump()
    # The file it started from resumes it as written now; as written then, it is refused.
    started = tmp_path / "c.yaml"
    now = "llm: {default: {model: m}}\nagents: {teacher: {kind: llm}, learner: {kind: sft}}\n"
    started.write_text(f"campaign: {{rounds: 2}}\n{now}", "utf-8")
    result = runner.invoke(app, ["campaign", "run", str(started), *args[2:]])
    assert result.exit_code == 0, result.output
    then = now.replace("{kind: llm}", "{kind: llm, mistake_rate: 0.1}")
    started.write_text(f"campaign: {{rounds: 2}}\n{then}", "utf-8")
    result = runner.invoke(app, ["campaign", "run", str(started), *args[2:]])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: config error: agents.teacher: 'mistake_rate' is a setting of kind 'programmatic', "
        "not of kind 'llm' (drop it, or set it to 0.0, its default, where an override switches "
        "the kind)"
    )


def test_a_resume_that_changes_the_config_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = Path("deployments/campaigns/airline-offline.yaml").resolve()
    root, runs = _stored_campaign(tmp_path, monkeypatch)
    args = ["campaign", "run", "--campaign-id", "t1", "--lake", str(root), "--resume"]
    changes = {
        "campaign.rounds: 2 -> 3": [*args, "--set", "campaign.rounds=3"],
        "agents.learner.trials: 1 -> 3 (and 4 more)": [*args[:2], str(default), *args[2:]],
    }
    for change, changed in changes.items():
        result = runner.invoke(app, changed)
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        line = lines[0]
        assert line.startswith("error: campaign 't1' was started with another config: "), line
        assert f"config: {change}; " in line and "--reconfigure" in line
    assert not runs
    result = runner.invoke(app, [*args, "--set", "campaign.rounds=3", "--reconfigure"])
    assert result.exit_code == 0, result.output
    [(cfg, _, reconfigure)] = runs
    assert cfg.campaign.rounds == 3 and reconfigure
    result = runner.invoke(app, ["campaign", "run", str(default), "--reconfigure"])
    assert result.exit_code == 2 and "goes with --resume" in result.stderr
    result = runner.invoke(app, ["campaign", "run", "--resume"])
    assert result.exit_code == 2 and "--campaign-id ID" in result.stderr
    result = runner.invoke(app, ["campaign", "run"])
    assert result.exit_code == 2 and "give the campaign file" in result.stderr


def test_an_unknown_campaign_among_many_stays_one_short_line(tmp_path: Path) -> None:
    from evosyn.records import Campaign

    root = tmp_path / "lake"
    lake = Lake(root)
    for i in range(30):  # an experiment's worth: 6 arms x 5 seeds
        row = Campaign(
            campaign_id=f"airline-simulated-arm{i:02d}-s0",
            round=0,
            name="x",
            domain="airline",
            seed=0,
            config={},
        )
        lake.write([row], batch="campaign")
    result = runner.invoke(app, ["campaign", "show", "nope", "--lake", str(root)])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert len(line) < 200 + len(str(root)), line
    assert "airline-simulated-arm02-s0 and 27 more: evosyn campaign list)" in line, line


def test_the_readme_queries_filter_by_campaign_and_experiments_keep_their_own_lake() -> None:
    readme = Path("README.md").read_text("utf-8")
    queries = [line for line in readme.splitlines() if "evosyn sql" in line and " FROM " in line]
    assert queries and all("campaign_id = " in q for q in queries), queries
    from evosyn.experiment import load_experiment

    for name in ("airline-simulated", "airline-real"):
        experiment = load_experiment(Path(f"deployments/experiments/{name}.yaml"))
        root = experiment.lake_config().lake.root
        assert root == "lake-experiments" and f"/{root}/" in Path(".gitignore").read_text()
        assert f"report --experiment {name} --lake {root}" in Path(
            f"deployments/experiments/{name}.yaml"
        ).read_text("utf-8")


STAGES = typing.get_args(Rejection.model_fields["stage"].annotation)


def test_synth_says_in_one_line_when_it_verified_fewer_than_asked(tmp_path: Path) -> None:
    """Some of 400 mock blueprints fall out: its small database runs out of new tasks."""
    import re

    args = ["synth", "--domain", "mock", "--n", "400", "--lake", str(tmp_path / "lake")]
    result = runner.invoke(app, [*args, "--campaign-id", "loose"])
    assert result.exit_code == 0, result.output
    last = result.stdout.strip().splitlines()[-1]
    match = re.fullmatch(
        r"short: (\d+) of 400 requested tasks verified; (\d+) fell out: (.+) "
        r"\(the rejections table gives each reason\)",
        last,
    )
    assert match, last
    verified, out = int(match[1]), int(match[2])
    assert verified + out == 400 and out > 0
    counts = [int(part.rsplit(" ", 1)[1]) for part in match[3].split(", ")]
    stages = [part.rsplit(" ", 1)[0] for part in match[3].split(", ")]
    assert sum(counts) == out and set(stages) <= set(STAGES), last
    exact = runner.invoke(app, [*args, "--campaign-id", "exact", "--exact"])
    assert exact.exit_code == 1
    assert exact.stderr.strip().splitlines() == [f"error: {last}"]


def test_the_shortfall_counts_blueprints_never_planned() -> None:
    from evosyn.cli import shortfall_line

    line = shortfall_line(100, 90, 80, {"verify": 4, "duplicate": 6})
    assert line == (
        "short: 80 of 100 requested tasks verified; 20 fell out: not planned 10, duplicate 6, "
        "verify 4 (the rejections table gives each reason)"
    )
    # Requests that raised are not rejections: the line says the same command retries them.
    assert shortfall_line(100, 100, 97, {"verify": 1}, failed=2) == (
        "short: 97 of 100 requested tasks verified; 3 fell out: verify 1, failed with an error "
        "2 (the same command retries them) (the rejections table gives each reason)"
    )


# Runs a command through the script's entry point; prints its exit code and the heavy modules
# it imported on the way.
HEAVY = textwrap.dedent(
    """
    import sys
    from evosyn.cli import main

    sys.argv = ["evosyn", *sys.argv[1:]]
    try:
        main()
    except SystemExit as exc:
        heavy = [m for m in ("tau2", "matplotlib", "pandas", "prefect") if m in sys.modules]
        print(exc.code, heavy)
    """
)


@pytest.mark.parametrize(
    "args",
    [
        ["export", "sft", "c", "--out", "sft"],
        ["export", "hf", "c", "--out=hf", "--lake=elsewhere"],
        ["report", "c", "--out", "report"],
        ["audit", "c", "--set", "lake.root=elsewhere"],
    ],
)
def test_a_missing_lake_is_told_before_the_command_loads(tmp_path: Path, args: list[str]) -> None:
    """The reason fits in well under a second: no τ²-bench, pandas or matplotlib import."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOSYN_")}
    proc = subprocess.run(
        [sys.executable, "-c", HEAVY, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert proc.stdout.strip() == "1 []", proc.stdout + proc.stderr
    where = "elsewhere" if "elsewhere" in " ".join(args) else "lake"
    assert proc.stderr.strip() == f"error: no lake at {tmp_path / where}"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_campaign_run_says_when_it_starts_prefects_temporary_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, runs = _stored_campaign(tmp_path, monkeypatch)
    args = ["campaign", "run", "--campaign-id", "t1", "--lake", str(root), "--resume"]
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "starting Prefect's temporary server" in result.stderr
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "temporary server" not in result.stderr
    assert len(runs) == 2
