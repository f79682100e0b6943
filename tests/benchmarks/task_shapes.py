"""The shapes of synthesized gold beside τ²-bench's official tasks, per domain.

A plain script (not a pytest test):

    python tests/benchmarks/task_shapes.py [--n 200] [--seed 31337] [--domain airline ...]
        [--telecom-repeats 1000]

For each domain, synthesizes ``--n`` exploration blueprints of the seed space as ``evosyn
synth`` does (programmatic Generator, Teacher, Verifier, Repair and every gate) and compares
the verified tasks' gold with the official ``base`` split's:

* the tools official gold uses that synthesized gold never does;
* distinct write-tool combinations (the set of write tools a task's gold calls) and their
  ratio to the official count (target ≥ 0.8);
* the share of tasks whose gold has two or more kinds of write, and its ratio to the official
  share (target ≥ 0.5);
* telecom: the share of troubleshooting tasks (a fault on the caller's phone or line), the
  user-device actions per verified dialogue, and the official fault kinds never made; with
  ``--telecom-repeats N``, the share of N blueprints rejected as repeats (target < 10%).
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Sequence

from tau2.data_model.tasks import Task

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.registry import domain_plugin
from evosyn.records import Direction
from evosyn.space import seed_space

DOMAINS = ("airline", "retail", "telecom")


def _gold(task: Task) -> list[tuple[str, str]]:
    """(requestor, tool) of every gold action."""
    actions = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
    return [(str(a.requestor), a.name) for a in actions]


def _writes(domain: str, task: Task) -> frozenset[str]:
    plugin = domain_plugin(domain)
    env = plugin.generator().domain
    out = set()
    for requestor, name in _gold(task):
        if requestor == "assistant" and env.symbol(name) == FunctionalSymbol.WRITE:
            out.add(name)
    return frozenset(out)


def synthesized(domain: str, n: int, seed: int) -> tuple[list[Task], SynthesisBatch]:
    """``n`` exploration blueprints of ``domain`` synthesized; the verified tasks and the batch."""
    plugin = domain_plugin(domain)
    generator, teacher, verifier = plugin.generator(), plugin.teacher(), ReplayVerifier(domain)
    space = seed_space(domain, "shapes")
    direction = Direction(
        campaign_id="shapes",
        round=1,
        direction_id="explore",
        space_version=space.version,
        objective="exploration",
        budget=n,
    )
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed)
    batch = synthesize(blueprints, generator, teacher, verifier, seed)
    passed = {v.task_id for v in batch.verified}
    return [t.task for t in batch.tasks if t.task_id in passed], batch


def shapes(domain: str, tasks: Sequence[Task]) -> dict[str, object]:
    """Tools, write combinations and the multi-write share of ``tasks``' gold."""
    combos = collections.Counter(_writes(domain, t) for t in tasks)
    tools = {name for t in tasks for _, name in _gold(t)}
    multi = sum(1 for t in tasks if len(_writes(domain, t)) >= 2)
    return {
        "n": len(tasks),
        "tools": tools,
        "combos": combos,
        "multi_share": multi / max(1, len(tasks)),
    }


def _telecom(tasks: Sequence[Task], batch: SynthesisBatch | None) -> dict[str, object]:
    from evosyn.environments.telecom.faults import ACCOUNT_FAULTS, FAULTS, fault_kinds

    phone, account = set(FAULTS), set(ACCOUNT_FAULTS)
    kinds = collections.Counter(k for t in tasks for k in fault_kinds(t))
    trouble = sum(1 for t in tasks if set(fault_kinds(t)) & (phone | account))
    out: dict[str, object] = {
        "kinds": kinds,
        "troubleshooting": trouble / max(1, len(tasks)),
    }
    out["gold_device_actions"] = sum(1 for t in tasks for r, _ in _gold(t) if r == "user") / max(
        1, len(tasks)
    )
    if batch is not None:
        passed = {v.task_id for v in batch.verified}
        calls = [
            sum(len(m.tool_calls or []) for m in tr.messages if getattr(m, "role", "") == "user")
            for tr in batch.trajectories
            if tr.task_id in passed
        ]
        out["device_calls"] = sum(calls) / max(1, len(calls))
    return out


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
        env = domain_plugin(domain).generator().domain
        official = shapes(domain, env.tasks("base"))
        tasks, batch = synthesized(domain, args.n, args.seed)
        made = shapes(domain, tasks)
        missing = sorted(official["tools"] - made["tools"])  # type: ignore[operator]
        n_off = len(official["combos"])  # type: ignore[arg-type]
        n_made = len(made["combos"])  # type: ignore[arg-type]
        share_ratio = made["multi_share"] / max(1e-9, official["multi_share"])  # type: ignore[operator]
        print(
            f"== {domain}: official {official['n']} tasks, synthesized {made['n']} verified "
            f"of {args.n} blueprints"
        )
        print(f"  gold tools never synthesized: {', '.join(missing) or 'none'}")
        print(
            f"  write combinations: official {n_off}, synthesized {n_made} "
            f"(ratio {n_made / max(1, n_off):.2f}, target >= 0.80)"
        )
        print(
            f"  >= 2 kinds of write: official {official['multi_share']:.1%}, synthesized "
            f"{made['multi_share']:.1%} (ratio {share_ratio:.2f}, target >= 0.50)"
        )
        unmade = sorted(
            (", ".join(sorted(c)) or "(no write)")
            for c in official["combos"]  # type: ignore[attr-defined]
            if c not in made["combos"]  # type: ignore[operator]
        )
        print(f"  official combinations never made ({len(unmade)}): {'; '.join(unmade)}")
        if domain == "telecom":
            off = _telecom(env.tasks("base"), None)
            syn = _telecom(tasks, batch)
            never = sorted(set(off["kinds"]) - set(syn["kinds"]))  # type: ignore[call-overload]
            print(
                f"  troubleshooting: official {off['troubleshooting']:.1%}, synthesized "
                f"{syn['troubleshooting']:.1%} (target >= 60%)"
            )
            print(
                f"  user-device actions per task's gold: official {off['gold_device_actions']:.2f},"
                f" synthesized {syn['gold_device_actions']:.2f} (target >= 2.5); device calls "
                f"per synthesized dialogue, checks included: {syn['device_calls']:.2f}"
            )
            print(f"  official fault kinds never made: {', '.join(never) or 'none'}")
    if args.telecom_repeats:
        share = repeats(args.telecom_repeats, args.seed)
        print(
            f"== telecom repeats: {share:.1%} of {args.telecom_repeats} blueprints (target < 10%)"
        )


if __name__ == "__main__":
    main()
