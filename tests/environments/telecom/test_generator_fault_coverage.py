"""Every fault kind of τ²-bench's official telecom tasks is made at n=200, whatever the seed.

A locked SIM card comes only with refusals, which the Planner draws seldom: it is composed
with the phone faults of no service the caller fixes first (so ``diagnose_then_resolve``
fits it) and with a line whose contract ended, as τ²-bench composes it.
"""

from __future__ import annotations

import pytest
from synthesis_checks import exploration

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import domain_plugin
from evosyn.environments.shapes import official_shapes
from evosyn.environments.telecom.faults import fault_kinds
from evosyn.space import seed_space


@pytest.mark.parametrize("seed", [5, 17, 31337, 2024])
def test_every_official_fault_kind_is_made_in_200_blueprints(seed: int) -> None:
    plugin = domain_plugin("telecom")
    space = seed_space("telecom", "kinds", round=1)
    # The blueprints `evosyn synth --n 200 --seed SEED` plans (its direction id).
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(
        space, exploration(space, 200, direction_id="r1-uniform"), seed
    )
    generator = plugin.generator()
    made: set[str] = set()
    for blueprint in blueprints:
        try:
            made.update(fault_kinds(generator.generate(blueprint, seed).task))
        except GeneratorRejection:
            continue
    assert set(official_shapes("telecom").fault_kinds) - made == set()
