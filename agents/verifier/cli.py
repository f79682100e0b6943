"""``evosyn env``: list the benchmark domains and verify trajectories against their tasks.

It lives with the Verifier it runs: ``environments/`` imports only the core.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from tau2.data_model.message import Message
from tau2.data_model.tasks import Task

from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.cli_common import console, fail, progress_bars
from evosyn.environments.base import DIAGNOSTIC_SPLIT, TEST_SPLIT, Tau2Domain
from evosyn.environments.registry import get_domain, list_domains
from evosyn.environments.tau2_data import known_bad
from evosyn.environments.trajectories import gold_trajectory, read_tasks, read_trajectories
from evosyn.records import Verification

env_app = typer.Typer(
    help="Benchmark domains: list them, verify trajectories by replay.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

_PROGRESS_FROM = 20


def _domain(name: str) -> Tau2Domain:
    try:
        return get_domain(name)
    except ValueError as exc:
        fail(str(exc), 2)


@env_app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the domains with their tools, tasks and splits."""
    rows: list[dict[str, Any]] = []
    for name in list_domains():
        domain = get_domain(name)
        rows.append(
            {
                "domain": name,
                "agent_tools": len(domain.tool_specs("assistant")),
                "user_tools": len(domain.tool_specs("user")),
                "tasks": len(domain.tasks()),
                "splits": {k: len(v) for k, v in domain.splits().items()},
            }
        )
    if as_json:
        typer.echo(json.dumps({"domains": rows}, indent=2))
        return
    table = Table(title="Domains")
    for column in ("domain", "agent tools", "user tools", "tasks", "splits"):
        table.add_column(column)
    for row in rows:
        splits = ", ".join(f"{k}={v}" for k, v in row["splits"].items())
        table.add_row(
            row["domain"],
            str(row["agent_tools"]),
            str(row["user_tools"]),
            str(row["tasks"]),
            splits,
        )
    out = console()
    out.print(table)
    out.print(
        f"'{DIAGNOSTIC_SPLIT}' is the held-out diagnostic set, '{TEST_SPLIT}' the final test "
        "set; neither is ever training data."
    )


def _jobs_from_split(
    domain: Tau2Domain, split: str
) -> tuple[list[tuple[Task, list[Message], str]], dict[str, str]]:
    """Gold jobs of the split's tasks, and the known-bad ones left out (id: reason)."""
    try:
        tasks = domain.tasks(split)
    except ValueError as exc:
        fail(str(exc), 2)
    bad = known_bad(domain.name)
    left_out = {task.id: bad[task.id] for task in tasks if task.id in bad}
    jobs = [
        (task, gold_trajectory(domain, task), f"gold-{task.id}")
        for task in tasks
        if task.id not in left_out
    ]
    return jobs, left_out


def _jobs_from_files(
    domain: Tau2Domain, tasks_path: Path | None, trajectories_path: Path
) -> list[tuple[Task, list[Message], str]]:
    for path in (tasks_path, trajectories_path):
        if path is not None and not path.is_file():
            fail(f"no such file: {path}", 2)
    known: dict[str, Task] = {t.id: t for t in domain.tasks()}
    if tasks_path is not None:
        try:
            known.update({t.id: t for t in read_tasks(tasks_path)})
        except ValueError as exc:
            fail(str(exc), 2)
    jobs: list[tuple[Task, list[Message], str]] = []
    try:
        for number, line, messages in read_trajectories(trajectories_path):
            task = known.get(line.task_id)
            if task is None:
                fail(f"{trajectories_path}:{number}: unknown task_id {line.task_id!r}", 2)
            jobs.append((task, messages, line.trajectory_id or f"line-{number}"))
    except ValueError as exc:
        fail(str(exc), 2)
    return jobs


@env_app.command("verify")
def verify_command(
    domain_name: Annotated[str, typer.Option("--domain", "-d", help="Domain name.")],
    split: Annotated[
        str | None, typer.Option("--split", help="Replay the gold actions of a split's tasks.")
    ] = None,
    tasks_path: Annotated[
        Path | None,
        typer.Option("--tasks", help="Tasks JSON (a list of τ²-bench tasks); default: official."),
    ] = None,
    trajectories_path: Annotated[
        Path | None,
        typer.Option("--trajectories", help="JSONL: one {task_id, messages} object per line."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Also fail on tool-call schema issues and errors.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Verify trajectories by replay; exit status 1 when any fails.

    Either --split (gold trajectories of a split's official tasks, less the known-bad ones,
    which are listed with the reason) or --trajectories (with optional --tasks for tasks that
    are not official).
    """
    if (split is None) == (trajectories_path is None):
        fail("give exactly one of --split or --trajectories", 2)
    if split is not None and tasks_path is not None:
        fail("--tasks goes with --trajectories, not with --split", 2)
    err = console(stderr=True)
    if not as_json and err.is_terminal and domain_name in list_domains():
        # τ²-bench's domain and its evaluator take seconds to load: say so before the wait
        # (to a person at a terminal; a script reading stderr gets only errors).
        err.print(f"verify {domain_name}: loading the domain and its tasks ...", highlight=False)
    domain = _domain(domain_name)
    left_out: dict[str, str] = {}
    if split is not None:
        jobs, left_out = _jobs_from_split(domain, split)
        source = f"split {split} (gold actions)"
    else:
        assert trajectories_path is not None
        jobs = _jobs_from_files(domain, tasks_path, trajectories_path)
        source = str(trajectories_path)

    verifier = ReplayVerifier(domain, strict=strict)
    results: list[Verification] = []
    start = time.perf_counter()
    with progress_bars(transient=True, disable=as_json or len(jobs) < _PROGRESS_FROM) as progress:
        bar = progress.add_task("verifying", total=len(jobs))
        for task, messages, trajectory_id in jobs:
            results.append(verifier.verify(task, messages, trajectory_id=trajectory_id))
            progress.advance(bar)
    seconds = time.perf_counter() - start
    passed = sum(r.passed for r in results)

    if as_json:
        summary = {
            "domain": domain.name,
            "source": source,
            "total": len(results),
            "passed": passed,
            "failed": len(results) - passed,
            "seconds": round(seconds, 4),
            "left_out": [{"task_id": k, "reason": v} for k, v in left_out.items()],
            "results": [
                {
                    "task_id": r.task_id,
                    "trajectory_id": r.trajectory_id,
                    "passed": r.passed,
                    "reward": r.reward,
                    "reasons": r.reasons,
                    "warnings": r.warnings,
                }
                for r in results
            ],
        }
        typer.echo(json.dumps(summary, indent=2))
    else:
        _print_table(domain.name, source, results, seconds)
        _print_left_out(domain.name, left_out)
    if passed != len(results):
        raise typer.Exit(1)


def _print_table(domain: str, source: str, results: list[Verification], seconds: float) -> None:
    out = console()
    failed = [r for r in results if not r.passed]
    if failed:
        table = Table(title=f"{domain}: failed trajectories")
        table.add_column("task")
        table.add_column("trajectory")
        table.add_column("reasons")
        for r in failed:
            table.add_row(r.task_id, r.trajectory_id, "\n".join(r.reasons) or "-")
        out.print(table)
    passed = len(results) - len(failed)
    warned = sum(1 for r in results if r.passed and r.warnings)
    colour = "green" if not failed else "red"
    note = f"; {warned} passed with tool-call warnings (see --json)" if warned else ""
    out.print(
        f"[{colour}]{domain}: {passed}/{len(results)} passed[/{colour}] ({source}, "
        f"{seconds:.2f} s{note})",
        highlight=False,
    )


def _print_left_out(domain: str, left_out: dict[str, str]) -> None:
    if not left_out:
        return
    out = console()
    out.print(
        f"{domain}: left out {len(left_out)} known-bad official task(s), whose gold fails:",
        highlight=False,
    )
    for task_id, reason in left_out.items():
        out.print(f"  {task_id}: {reason}", highlight=False, soft_wrap=True)
