"""Synthesis throughput per domain: verified tasks per second on one core.

A plain script (not a pytest test):

    python tests/benchmarks/synth_speed.py [--count 1000] [--seed 7] [--promoted]
        [--domain airline --domain retail ...]

For each domain (default: every registered one, side by side in one run), plans ``--count``
exploration blueprints from the seed space (with ``--promoted``: plus the Reflector's realizable
factors num_write, num_read and computation) under the domain's feasibility rule, as ``evosyn
synth`` does, then runs synthesis as a campaign does (``agents.synthesis.synthesize``):
programmatic Generator, decontamination, programmatic Teacher, replay verifier with its policy
model, Repair, and the realize gate (challenges acted out, answers in context). The one-time
set-up (database parse, official-task index) is reported apart.
"""

from __future__ import annotations

import argparse
import collections
import os
import time

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.reflector import REALIZABLE
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.registry import domain_plugin, list_domains
from evosyn.records import Direction
from evosyn.space import add_factor, seed_space


def run(domain: str, count: int, seed: int, promoted: bool) -> dict[str, float]:
    """Synthesize ``count`` blueprints of ``domain``; its throughput and outcome counts."""
    plugin = domain_plugin(domain)
    infeasible = plugin.infeasible
    start = time.perf_counter()
    generator, teacher, verifier = plugin.generator(), plugin.teacher(), ReplayVerifier(domain)
    official = generator.domain.tasks()[0]
    generator.contamination_reason(official)  # parses the DB, indexes the official tasks
    verifier.verify(official, [])  # builds the verifier's official-task index
    setup = time.perf_counter() - start

    space = seed_space(domain, "bench")
    if promoted:
        for name in ("num_write", "num_read", "computation"):
            space = add_factor(space, REALIZABLE[name], round=1)
    direction = Direction(
        campaign_id="bench",
        round=1,
        direction_id="explore",
        space_version=space.version,
        objective="exploration",
        budget=count,
    )
    blueprints = ProgrammaticPlanner(infeasible).plan(space, direction, seed)
    start = time.perf_counter()
    # synthesis as campaigns run it: decontamination, Repair, and the realize gate included
    batch = synthesize(blueprints, generator, teacher, verifier, seed)
    seconds = time.perf_counter() - start
    rejected = collections.Counter(r.stage for r in batch.rejections)
    for stage, n in rejected.most_common():
        print(f"  {domain}: rejected {n}x at {stage}")
    verified = len(batch.verified)
    failed = rejected["verify"]  # still failing after Repair; realize and the rest apart
    return {
        "setup_s": setup,
        "blueprints": len(blueprints),
        "verified": verified,
        "failed": failed,
        "rejected": sum(n for stage, n in rejected.items() if stage != "verify"),
        "skipped": generator.skips,
        "seconds": seconds,
    }


def main() -> None:
    """Run the benchmark and print one row per domain."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--promoted", action="store_true", help="add the promotable factors")
    parser.add_argument("--domain", action="append", choices=list_domains())
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    # Without --domain: every domain with a programmatic Generator and Teacher (not library).
    scripted = [d for d in list_domains() if domain_plugin(d).offers("generator")]
    rows = {d: run(d, args.count, args.seed, args.promoted) for d in args.domain or scripted}
    print(
        f"{'domain':<9}{'set-up s':>9}{'blueprints':>11}{'verified':>9}{'failed':>7}"
        f"{'rejected':>9}{'skipped*':>9}{'seconds':>9}{'verified/s':>11}"
    )
    for domain, r in rows.items():
        print(
            f"{domain:<9}{r['setup_s']:>9.2f}{r['blueprints']:>11}{r['verified']:>9}"
            f"{r['failed']:>7}{r['rejected']:>9}{r['skipped']:>9}{r['seconds']:>9.2f}"
            f"{r['verified'] / r['seconds']:>11.1f}"
        )
    print("* candidates skipped: they repeated an official or a kept task; one core, one process")


if __name__ == "__main__":
    main()
