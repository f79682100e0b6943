"""Orchestration overhead: the same programmatic rounds inside Prefect and as plain functions.

A plain script (not a pytest test):

    python tests/benchmarks/orchestration_overhead.py [--budget 1500] [--rounds 1] [--repeats 3]

The default is the issue's round: 1,500 blueprints. Prefect's cost per round is mostly fixed
(flow and task runs, states, artifacts: about a second), so smaller rounds show a larger ratio.

"prefect" runs ``round_flow`` (flows/round.py) once per round, on the round's thread-pool task
runner, against a temporary Prefect server (``prefect_test_harness``: its own SQLite database).
"plain" runs the flow's own body (``round_flow.fn``) with each task it calls swapped for its
undecorated function (``.fn``, tasks/loop.py and tasks/learning.py) and ``.submit`` on a thread
pool of the same size; it skips only what exists for Prefect (flow and task runs, states, the
round artifacts). Every repeat starts from an empty lake (tasks reuse stored outputs), the two
modes alternate so machine load hits both alike, and one untimed run of each warms imports and
caches. Both lakes must hold the same rows. Target: prefect / plain <= 1.10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Quiet, offline: the harness's analytics heartbeat otherwise races the flow runs for SQLite.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plain_flows import plain_flows
from rich.console import Console
from rich.table import Table

from evosyn.config import CampaignConfig, load_config
from evosyn.flows.campaign import start_campaign
from evosyn.records import TABLES, Feedback, RoundSummary, SynthesisSpace
from evosyn.storage import Lake

TARGET = 1.10
CONFIG = Path(__file__).resolve().parents[2] / "deployments/campaigns/airline-offline.yaml"
CAMPAIGN = "bench"


def _config(root: Path, budget: int, rounds: int) -> CampaignConfig:
    return load_config(
        CONFIG,
        [
            f"lake.root={root}",
            f"campaign.id={CAMPAIGN}",
            f"campaign.rounds={rounds}",
            f"campaign.budget_per_round={budget}",
        ],
        environ={},
    )


def plain_round(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback | None, round: int
) -> tuple[SynthesisSpace, Feedback, RoundSummary]:
    """``round_flow``'s own body (``.fn``) with every task it calls run as a plain function.

    The tasks the flow module imports are swapped for their ``.fn`` while it runs, so this
    follows flows/round.py as it changes; the round artifacts (a Prefect feature) are skipped.
    """
    from evosyn.flows import round as round_module

    with plain_flows(round_module):
        result: tuple[SynthesisSpace, Feedback, RoundSummary] = round_module.round_flow.fn(
            cfg, space, feedback, round
        )
    return result


def prefect_round(
    cfg: CampaignConfig, space: SynthesisSpace, feedback: Feedback | None, round: int
) -> tuple[SynthesisSpace, Feedback, RoundSummary]:
    """One ``round_flow`` run on the task runner the campaign flow would give it."""
    from evosyn.flows.round import round_flow
    from evosyn.flows.runners import task_runner_for

    result: tuple[SynthesisSpace, Feedback, RoundSummary] = round_flow.with_options(
        task_runner=task_runner_for(cfg)
    )(cfg, space, feedback, round)
    return result


RoundFn = Callable[
    [CampaignConfig, SynthesisSpace, Feedback | None, int],
    tuple[SynthesisSpace, Feedback, RoundSummary],
]


def timed(run_round: RoundFn, root: Path, budget: int, rounds: int) -> tuple[float, list[int]]:
    """Seconds for ``rounds`` rounds from an empty lake at ``root``, and the rows per table."""
    cfg = _config(root, budget, rounds)
    space = start_campaign(cfg, CAMPAIGN)  # untimed
    feedback: Feedback | None = None
    start = time.perf_counter()
    for r in range(1, rounds + 1):
        space, feedback, _ = run_round(cfg, space, feedback, r)
    seconds = time.perf_counter() - start
    lake = Lake(root)
    return seconds, [len(lake.read(cls, CAMPAIGN)) for cls in TABLES.values()]


def main() -> int:
    """Run both modes, print the table; exit 1 when the median ratio misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1500, help="blueprints per round")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per timed run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode")
    args = parser.parse_args()
    from prefect.testing.utilities import prefect_test_harness

    base = Path(tempfile.mkdtemp(prefix="evosyn-orch-"))
    modes: dict[str, RoundFn] = {"plain": plain_round, "prefect": prefect_round}
    seconds: dict[str, list[float]] = {m: [] for m in modes}
    rows: dict[str, list[int]] = {}
    with prefect_test_harness(server_startup_timeout=120):
        for mode, fn in modes.items():
            timed(fn, base / f"warm-{mode}", args.budget, args.rounds)
        for i in range(args.repeats):
            for mode, fn in modes.items():
                s, counts = timed(fn, base / f"{mode}-{i}", args.budget, args.rounds)
                seconds[mode].append(s)
                if rows.setdefault(mode, counts) != counts:
                    raise SystemExit(f"{mode} run {i} stored different rows: {counts}")
    if rows["plain"] != rows["prefect"]:
        raise SystemExit(f"the modes stored different rows: {rows}")

    med = {m: statistics.median(v) for m, v in seconds.items()}
    best = {m: min(v) for m, v in seconds.items()}
    ratio, best_ratio = med["prefect"] / med["plain"], best["prefect"] / best["plain"]
    table = Table(
        title=f"Orchestration overhead: {args.rounds} round(s) of {args.budget} blueprints, "
        f"{args.repeats} runs per mode (cores: {os.cpu_count()})"
    )
    for column in ("mode", "runs (s)", "median s", "best s", "ratio (median)", "ratio (best)"):
        table.add_column(column)
    for mode in modes:
        runs = " ".join(f"{s:.2f}" for s in seconds[mode])
        is_prefect = mode == "prefect"
        table.add_row(
            mode,
            runs,
            f"{med[mode]:.2f}",
            f"{best[mode]:.2f}",
            f"{ratio:.3f}" if is_prefect else "1",
            f"{best_ratio:.3f}" if is_prefect else "1",
        )
    per_round = (med["prefect"] - med["plain"]) / args.rounds
    table.caption = (
        f"target prefect/plain <= {TARGET:.2f}: {'PASS' if ratio <= TARGET else 'MISS'}; "
        f"Prefect adds {per_round:.2f} s per round; rows per table equal in both modes"
    )
    Console().print(table)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
