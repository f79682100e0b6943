"""Start-up time of everyday commands: wall and CPU seconds of a fresh ``evosyn`` process.

A plain script (not a pytest test):

    python tests/benchmarks/cli_startup.py [--runs 10]

Each command runs ``--runs`` times in a fresh process against a small lake made first in a
temporary folder. Wall time is what a user waits; CPU time (user + system of the child) is
less disturbed by other load on the machine, which the load average beside the table shows.
Targets (issue 19, on a quiet machine): ``evosyn --help`` <= 0.3 s, ``evosyn sql "select 1"``
<= 0.4 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

EVOSYN = Path(sys.executable).with_name("evosyn")
COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
    ("evosyn --version", [str(EVOSYN), "--version"]),
    ("evosyn --help", [str(EVOSYN), "--help"]),
    ('evosyn sql "select 1"', [str(EVOSYN), "sql", "select 1"]),
    ('evosyn sql "SHOW TABLES"', [str(EVOSYN), "sql", "SHOW TABLES"]),
    ("evosyn campaign list", [str(EVOSYN), "campaign", "list"]),
    # What every Prefect flow-run process (a round, a training, an evaluation) imports first.
    ("import evosyn.flows.campaign", [sys.executable, "-c", "import evosyn.flows.campaign"]),
]


def _time(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    from evosyn.records import Campaign
    from evosyn.storage import Lake

    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        Lake(cwd / "lake").write(
            [Campaign(campaign_id="c", round=0, name="c", domain="airline", seed=0, config={})],
            batch="campaign",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVOSYN_")}
        table = Table(title=f"evosyn start-up, {args.runs} runs each (seconds)")
        for column in ("command", "wall min", "wall median", "cpu median"):
            table.add_column(column, justify="right" if column != "command" else "left")
        for name, command in COMMANDS:
            _time(command, cwd, env)  # warm the file cache
            runs = [_time(command, cwd, env) for _ in range(args.runs)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            table.add_row(
                name,
                f"{min(walls):.3f}",
                f"{statistics.median(walls):.3f}",
                f"{statistics.median(cpus):.3f}",
            )
    console = Console()
    console.print(table)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    console.print(f"load average {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
