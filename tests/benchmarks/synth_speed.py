"""Synthesis throughput on airline: verified tasks per second on one core.

A plain script (not a pytest test):

    python tests/benchmarks/synth_speed.py [--count 1000] [--seed 7] [--promoted]

Plans ``--count`` exploration blueprints from the seed space (with ``--promoted``: plus the
Reflector's realizable factors num_write, num_read and computation) under the Generator's
feasibility rule, as ``evosyn synth`` does, then for each one generates a task (programmatic
Generator), rolls it out (programmatic Teacher) and verifies it (replay verifier, policy
model included). The one-time set-up (database parse, official-task index) is reported apart.
"""

from __future__ import annotations

import argparse
import collections
import os
import time

from evosyn.agents.generator.airline import AirlineGenerator, infeasible
from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.reflector import REALIZABLE
from evosyn.agents.teacher.airline import AirlineTeacher
from evosyn.agents.verifier import ReplayVerifier
from evosyn.records import Direction
from evosyn.space import add_factor, seed_space


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--promoted", action="store_true", help="add the promotable factors")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    start = time.perf_counter()
    generator, teacher, verifier = AirlineGenerator(), AirlineTeacher(), ReplayVerifier("airline")
    _ = generator.db, generator.contamination_reason  # parse the DB once
    generator.contamination_reason(generator.domain.tasks()[0])
    verifier.verify(generator.domain.tasks()[0], [])  # builds the official-task index
    setup = time.perf_counter() - start

    space = seed_space("airline", "bench")
    if args.promoted:
        for name in ("num_write", "num_read", "computation"):
            space = add_factor(space, REALIZABLE[name], round=1)
    direction = Direction(
        campaign_id="bench",
        round=1,
        direction_id="explore",
        space_version=space.version,
        objective="exploration",
        budget=args.count,
    )
    blueprints = ProgrammaticPlanner(infeasible).plan(space, direction, args.seed)
    rejected: collections.Counter[str] = collections.Counter()
    verified = failed = 0
    start = time.perf_counter()
    for blueprint in blueprints:
        try:
            task = generator.generate(blueprint, args.seed)
        except GeneratorRejection as exc:
            rejected[str(exc)] += 1
            continue
        trajectory = teacher.rollout(task, args.seed)
        if verifier.verify(task.task, trajectory.messages).passed:
            verified += 1
        else:
            failed += 1
    seconds = time.perf_counter() - start
    print(f"set-up: {setup:.2f} s")
    print(
        f"{len(blueprints)} blueprints: {verified} verified, {failed} failed, "
        f"{sum(rejected.values())} rejected in {seconds:.2f} s "
        f"-> {verified / seconds:.1f} verified tasks/s on one core"
    )
    print(f"candidates skipped as duplicates of official tasks: {generator.contamination_skips}")
    for reason, count in rejected.most_common():
        print(f"  rejected {count}x: {reason}")


if __name__ == "__main__":
    main()
