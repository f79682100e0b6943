"""Lake scale: write N trajectories (and their verdicts) over 10 rounds, then query them with SQL.

A plain script (not a pytest test):

    python tests/benchmarks/lake_scale.py [--n 1000000] [--rounds 10] [--batch 20000]

Writes go through ``Lake.write`` (records validated, one Parquet file per batch); the grouped
query joins verdicts to trajectories over every round through ``evosyn sql`` (a fresh process,
as a user runs it) and in-process through the catalog. Target: the query under 2 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from evosyn.records import Trajectory, Verification
from evosyn.storage import Lake
from evosyn.storage.sql import query as run_query

QUERY = (
    "SELECT v.round, count(*) AS trajectories, avg(v.reward) AS reward, "
    "sum(CASE WHEN v.passed THEN 1 ELSE 0 END) AS verified "
    "FROM verifications v JOIN trajectories t USING (trajectory_id) "
    "GROUP BY v.round ORDER BY v.round"
)


def _batch(round: int, start: int, size: int) -> tuple[list[Trajectory], list[Verification]]:
    # τ²-bench is imported after evosyn, which quiets its import-time logging.
    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage

    trajectories, verdicts = [], []
    for i in range(start, start + size):
        tid = f"r{round}-t{i:07d}"
        call = ToolCall(id="c0", name="get_user_details", arguments={"user_id": f"u{i % 500}"})
        messages = [
            UserMessage(role="user", content=f"Hi, I am user u{i % 500}."),
            AssistantMessage(role="assistant", tool_calls=[call]),
            ToolMessage(role="tool", id="c0", content='{"membership": "gold"}'),
            AssistantMessage(role="assistant", content="You are a gold member."),
        ]
        trajectories.append(
            Trajectory(
                campaign_id="scale", round=round, trajectory_id=tid, task_id=tid, messages=messages
            )
        )
        verdicts.append(
            Verification(
                campaign_id="scale",
                round=round,
                task_id=tid,
                trajectory_id=tid,
                passed=i % 7 != 0,
                reward=0.0 if i % 7 == 0 else 1.0,
            )
        )
    return trajectories, verdicts


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--root", type=Path, default=None, help="Lake folder (default: a tmp dir)")
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="evosyn-scale-")) / "lake"
    lake = Lake(str(root))
    per_round = args.n // args.rounds
    start = time.perf_counter()
    with Progress(console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task("writing", total=per_round * args.rounds)
        for r in range(1, args.rounds + 1):
            for offset in range(0, per_round, args.batch):
                size = min(args.batch, per_round - offset)
                trajectories, verdicts = _batch(r, offset, size)
                lake.write(trajectories, batch=f"b{offset:08d}")
                lake.write(verdicts, batch=f"b{offset:08d}")
                progress.advance(bar, size)
    write_s = time.perf_counter() - start
    n = per_round * args.rounds

    start = time.perf_counter()
    columns, rows = run_query(lake, QUERY)
    query_s = time.perf_counter() - start
    assert sum(row[columns.index("trajectories")] for row in rows) == n, rows

    start = time.perf_counter()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "evosyn",
            "sql",
            QUERY,
            "--format",
            "csv",
            "--set",
            f"lake.root={root}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    cli_s = time.perf_counter() - start
    assert len(cli.stdout.strip().splitlines()) == args.rounds + 1, cli.stdout

    size_mb = sum(p.stat().st_size for p in root.rglob("*.parquet")) / 2**20
    table = Table(title=f"Lake scale: {n:,} trajectories over {args.rounds} rounds")
    for column in ("measure", "seconds", "rows/s"):
        table.add_column(column)
    table.add_row("write (trajectories + verdicts)", f"{write_s:.1f}", f"{n / write_s:,.0f}")
    table.add_row("grouped join query, in-process", f"{query_s:.2f}", f"{n / query_s:,.0f}")
    table.add_row("same query via `evosyn sql`", f"{cli_s:.2f}", f"{n / cli_s:,.0f}")
    table.caption = f"{size_mb:.0f} MiB of Parquet at {root}; target: query under 2 s"
    Console().print(table)


if __name__ == "__main__":
    main()
