"""Controllability of the candidate shape factors: each value requested N times, realized how often.

A plain script (not a pytest test):

    python tests/benchmarks/shape_control.py [--n 20] [--seed 777] [--domain airline ...]
        [--factor trip_shape ...]

For each domain and each candidate factor its ontology declares (``write_mix``,
``trip_shape``, ``payment_split``, ``fault_kind``), the factor is added to the seed space as
the Reflector would add it, and for each of its values a direction allows only that value:
the programmatic Planner draws ``--n`` blueprints (every other factor drawn as ``evosyn
synth`` draws it, infeasible combinations never planned), and the programmatic Generator,
Teacher and Verifier (every gate) synthesize them. One line per value:

* ``asked``: blueprints planned; ``made``: tasks the Generator made (the rest rejected, the
  most frequent reason shown); ``verified``: tasks that passed;
* ``realized``: verified tasks whose gold shows the value, read by
  :func:`evosyn.environments.shapes.shape_values` (a ``fault_kind`` is realized where it is
  among the faults the task sets up), and its share of the verified.
"""

from __future__ import annotations

import argparse
import collections

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.registry import domain_plugin, ontology_candidates
from evosyn.environments.shapes import shape_match, shape_values
from evosyn.records import Direction
from evosyn.space import add_factor, seed_space

DOMAINS = ("airline", "retail", "telecom")


def control(domain: str, factor: str, n: int, seed: int) -> list[str]:
    """One line per value of ``factor`` in ``domain``: asked, made, verified, realized."""
    plugin = domain_plugin(domain)
    generator, teacher, verifier = plugin.generator(), plugin.teacher(), ReplayVerifier(domain)
    space = add_factor(seed_space(domain, "control", round=1), plugin.realizable[factor], 1)
    lines = []
    for value in space.factor(factor).values:
        direction = Direction(
            campaign_id="control",
            round=1,
            direction_id=f"r1-{factor}-{value}",
            space_version=space.version,
            objective="exploration",
            allowed={factor: [value]},
            budget=n,
        )
        blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed)
        batch = synthesize(blueprints, generator, teacher, verifier, seed)
        passed = {v.task_id for v in batch.verified}
        verified = [t for t in batch.tasks if t.task_id in passed]
        realized = sum(
            bool(shape_match(factor, value, shape_values(domain, t.task))) for t in verified
        )
        reasons = collections.Counter(r.reason for r in batch.rejections if r.stage == "generate")
        why = f"; most rejected: {reasons.most_common(1)[0][0]}" if reasons else ""
        lines.append(
            f"  {factor}={value}: asked {len(blueprints)}, made {len(batch.tasks)}, verified "
            f"{len(verified)}, realized {realized} ({realized / max(1, len(verified)):.0%}){why}"
        )
    return lines


def main() -> None:
    """Print one block per domain, a line per candidate factor value."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=777)
    parser.add_argument("--domain", action="append", choices=DOMAINS)
    parser.add_argument("--factor", action="append")
    args = parser.parse_args()
    for domain in args.domain or DOMAINS:
        text = domain_plugin(domain).ontology.read_text("utf-8")
        factors = [c.name for c in ontology_candidates(text)]
        print(f"== {domain}: {args.n} blueprints per value, seed {args.seed}")
        for factor in factors:
            if args.factor is None or factor in args.factor:
                print("\n".join(control(domain, factor, args.n, args.seed)), flush=True)


if __name__ == "__main__":
    main()
