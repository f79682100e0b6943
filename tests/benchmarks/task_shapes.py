"""The shapes of synthesized gold beside τ²-bench's official tasks, per domain.

A plain script (not a pytest test):

    python tests/benchmarks/task_shapes.py [--n 200] [--seed 31337] [--domain airline ...]
        [--telecom-repeats 1000]

For each domain, synthesizes the ``--n`` blueprints ``evosyn synth --n N --seed S`` plans
(its direction, so the same blueprints) with the programmatic Generator, Teacher, Verifier,
Repair and every gate, and compares
the verified tasks' gold with the official ``base`` split's, as
:func:`evosyn.environments.shapes.coverage` reads them (what ``evosyn audit`` prints too):

* the tools official gold uses that synthesized gold never does;
* distinct write-tool combinations (the set of write tools a task's gold calls) and their
  ratio to the official count (target ≥ 0.8);
* the share of tasks whose gold has two or more kinds of write, and its ratio to the official
  share (target ≥ 0.5);
* telecom: the share of troubleshooting tasks (a fault on the caller's phone or line), the
  user-device actions per verified dialogue, the user-device tool sets and fault kinds against
  the official ones, and the official fault kinds never made; with
  ``--telecom-repeats N``, the share of N blueprints rejected as repeats (target < 10%).
"""

from __future__ import annotations

import argparse
import collections

from tau2.data_model.tasks import Task

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.registry import domain_plugin
from evosyn.environments.shapes import ShapeCoverage, coverage
from evosyn.records import Direction
from evosyn.space import seed_space

DOMAINS = ("airline", "retail", "telecom")


def synthesized(domain: str, n: int, seed: int) -> tuple[list[Task], SynthesisBatch]:
    """``n`` exploration blueprints of ``domain`` synthesized; the verified tasks and the batch."""
    plugin = domain_plugin(domain)
    generator, teacher, verifier = plugin.generator(), plugin.teacher(), ReplayVerifier(domain)
    space = seed_space(domain, "shapes", round=1)
    direction = Direction(
        campaign_id="shapes",
        round=1,
        # evosyn synth's direction: the Planner draws the blueprints `evosyn synth` makes.
        direction_id="r1-uniform",
        space_version=space.version,
        objective="exploration",
        budget=n,
    )
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed)
    batch = synthesize(blueprints, generator, teacher, verifier, seed)
    passed = {v.task_id for v in batch.verified}
    return [t.task for t in batch.tasks if t.task_id in passed], batch


def device_calls(batch: SynthesisBatch) -> float:
    """User tool calls per verified dialogue of ``batch``, checks included."""
    passed = {v.task_id for v in batch.verified}
    calls = [
        sum(len(m.tool_calls or []) for m in tr.messages if getattr(m, "role", "") == "user")
        for tr in batch.trajectories
        if tr.task_id in passed
    ]
    return sum(calls) / max(1, len(calls))


def report(domain: str, n: int, shapes: ShapeCoverage, batch: SynthesisBatch) -> list[str]:
    """The lines of one domain's block: official beside synthesized, and the targets' ratios."""
    combos = shapes.write_combinations
    share = shapes.multi_write / max(1, shapes.tasks)
    official_share = shapes.official_multi_write / max(1, shapes.official_tasks)
    lines = [
        f"== {domain}: official {shapes.official_tasks} tasks, synthesized {shapes.tasks} "
        f"verified of {n} blueprints",
        f"  gold tools never synthesized: {', '.join(shapes.tools_never_made) or 'none'}",
        f"  write combinations: official {combos.official}, synthesized {combos.synthesized}, "
        f"{combos.made} of the official made "
        f"(ratio {combos.synthesized / max(1, combos.official):.2f}, target >= 0.80)",
        f"  >= 2 kinds of write: official {official_share:.1%}, synthesized {share:.1%} "
        f"(ratio {share / max(1e-9, official_share):.2f}, target >= 0.50)",
        f"  official combinations never made ({len(combos.never_made)}): "
        + "; ".join(combos.never_made),
    ]
    if shapes.device_tool_sets is not None:
        lines.append(f"  user-device tool sets: {shapes.device_tool_sets}")
    if shapes.fault_kinds is not None:
        lines += [
            f"  troubleshooting: official "
            f"{shapes.official_troubleshooting / max(1, shapes.official_tasks):.1%}, synthesized "
            f"{shapes.troubleshooting / max(1, shapes.tasks):.1%} (target >= 60%)",
            f"  user-device actions per task's gold: official "
            f"{shapes.official_device_actions / max(1, shapes.official_tasks):.2f}, synthesized "
            f"{shapes.device_actions / max(1, shapes.tasks):.2f} (target >= 2.5); device calls "
            f"per synthesized dialogue, checks included: {device_calls(batch):.2f}",
            f"  fault kinds: {shapes.fault_kinds}",
            "  official fault kinds never made: "
            + (", ".join(shapes.fault_kinds.never_made) or "none"),
        ]
    return lines


def repeats(n: int, seed: int) -> float:
    """The share of ``n`` telecom blueprints the Generator skips or rejects as repeats."""
    _, batch = synthesized("telecom", n, seed)
    stages = collections.Counter(r.stage for r in batch.rejections)
    dupes = sum(
        1
        for r in batch.rejections
        if r.stage == "duplicate" or (r.stage == "generate" and "repeat" in r.reason)
    )
    print(f"  telecom x{n}: rejected by stage {dict(stages)}")
    return dupes / max(1, n)


def main() -> None:
    """Print one block per domain: official beside synthesized, and the targets' ratios."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31337)
    parser.add_argument("--domain", action="append", choices=DOMAINS)
    parser.add_argument("--telecom-repeats", type=int, default=0)
    args = parser.parse_args()
    for domain in args.domain or DOMAINS:
        tasks, batch = synthesized(domain, args.n, args.seed)
        print("\n".join(report(domain, args.n, coverage(domain, tasks), batch)))
    if args.telecom_repeats:
        share = repeats(args.telecom_repeats, args.seed)
        print(
            f"== telecom repeats: {share:.1%} of {args.telecom_repeats} blueprints (target < 10%)"
        )


if __name__ == "__main__":
    main()
