"""Synthesis throughput on airline: verified tasks per second on one core.

A plain script (not a pytest test):

    python tests/benchmarks/synth_speed.py [--count 1000] [--seed 7]

Plans ``--count`` exploration blueprints from the seed space, then for each one generates a
task (programmatic Generator), rolls it out (programmatic Teacher) and verifies it (replay
verifier). The one-time set-up (database parse, official-task index) is reported apart.
"""

from __future__ import annotations

import argparse
import collections
import os
import time

from evosyn.agents.generator.airline import AirlineGenerator
from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.teacher.airline import AirlineTeacher
from evosyn.agents.verifier import ReplayVerifier
from evosyn.records import Direction
from evosyn.space import seed_space


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    start = time.perf_counter()
    generator, teacher, verifier = AirlineGenerator(), AirlineTeacher(), ReplayVerifier("airline")
    _ = generator.db, generator.contamination_reason  # parse the DB once
    generator.contamination_reason(generator.domain.tasks()[0])
    setup = time.perf_counter() - start

    space = seed_space("airline", "bench")
    direction = Direction(
        campaign_id="bench",
        round=1,
        direction_id="explore",
        space_version=space.version,
        objective="exploration",
        budget=args.count,
    )
    blueprints = ProgrammaticPlanner().plan(space, direction, args.seed)
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
