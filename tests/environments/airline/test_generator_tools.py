"""Every tool of τ²-bench's official airline gold is called by the gold of 200 blueprints.

The transfer to a human agent comes only with the shapes of a partly flown trip, which few
requested patterns fit (so it is weighted up); it must still be made in 200 blueprints,
whatever the seed.
"""

from __future__ import annotations

import pytest
from synthesis_checks import exploration

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import domain_plugin
from evosyn.environments.shapes import gold_actions, official_shapes
from evosyn.space import seed_space


@pytest.mark.parametrize("seed", [7, 17, 777, 2024])
def test_every_official_gold_tool_is_called_in_200_blueprints(seed: int) -> None:
    plugin = domain_plugin("airline")
    space = seed_space("airline", "tools", round=1)
    # The blueprints `evosyn synth --n 200 --seed SEED` plans (its direction id).
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(
        space, exploration(space, 200, direction_id="r1-uniform"), seed
    )
    generator = plugin.generator()
    called: set[str] = set()
    for blueprint in blueprints:
        try:
            called.update(
                name for _, name in gold_actions(generator.generate(blueprint, seed).task)
            )
        except GeneratorRejection:
            continue
    assert official_shapes("airline").tools - called == set()
