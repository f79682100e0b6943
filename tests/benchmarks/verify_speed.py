"""Replay verifier vs τ²-bench's stock evaluator: time per task on the same trajectories.

A plain script (not a pytest test):

    python tests/benchmarks/verify_speed.py [--domains airline retail] [--stock-limit 20]

Both verify the gold trajectories of the official ``base`` tasks; the stock evaluator (which
rebuilds the domain from JSON twice per task) runs on the first ``--stock-limit`` of them.
Our verifier starts cold (new instance, empty gold cache) and verifies each task once; the
one-time database parse is reported apart. Verdicts are compared task by task.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import get_domain
from evosyn.environments.trajectories import gold_trajectory


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", nargs="+", default=["airline", "retail"])
    parser.add_argument("--stock-limit", type=int, default=20)
    args = parser.parse_args()

    table = Table(title="Verification time per task (gold trajectories, base split)")
    for column in (
        "domain",
        "setup s",
        "ours n",
        "ours ms/task",
        "stock n",
        "stock ms/task",
        "ratio",
        "agree",
    ):
        table.add_column(column, justify="right")
    for name in args.domains:
        start = time.perf_counter()
        domain = get_domain(name)
        tasks = domain.tasks("base")
        trajectories = [gold_trajectory(domain, t) for t in tasks]  # also parses the DBs
        setup = time.perf_counter() - start

        verifier = ReplayVerifier(domain)
        start = time.perf_counter()
        ours = [verifier.verify(t, m).passed for t, m in zip(tasks, trajectories, strict=True)]
        ours_per_task = (time.perf_counter() - start) / len(tasks)

        subset = list(zip(tasks, trajectories, strict=True))[: args.stock_limit]
        start = time.perf_counter()
        stock = [stock_reward(name, t, m) == 1.0 for t, m in subset]
        stock_per_task = (time.perf_counter() - start) / len(subset)

        agree = sum(a == b for a, b in zip(ours, stock, strict=False))
        table.add_row(
            name,
            f"{setup:.2f}",
            str(len(tasks)),
            f"{ours_per_task * 1000:.2f}",
            str(len(subset)),
            f"{stock_per_task * 1000:.1f}",
            f"{stock_per_task / ours_per_task:.0f}x",
            f"{agree}/{len(subset)}",
        )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
