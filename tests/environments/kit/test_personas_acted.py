"""The programmatic user acts out its task's persona in every domain, and the detectors see it."""

from __future__ import annotations

import pytest
from synthesis_checks import exploration

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments.dialogue_acts import PERSONA_KINDS, persona_kind, realized_personas
from evosyn.environments.registry import domain_plugin, domains_offering
from evosyn.space import seed_space


@pytest.mark.parametrize(
    "domain", [d for d in domains_offering("generator") if domain_plugin(d).offers("teacher")]
)
def test_every_persona_is_acted_out(domain: str) -> None:
    plugin = domain_plugin(domain)
    space = seed_space(domain, "x", round=1)
    direction = exploration(space, 40, direction_id="r1-uniform")
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed=3)
    batch = synthesize(blueprints, plugin.generator(), plugin.teacher(), ReplayVerifier(domain), 3)
    assert not [r.reason for r in batch.rejections if "persona" in r.reason]
    tasks = {t.task_id: t.task for t in batch.tasks}
    asked = set()
    for trajectory, verdict in zip(batch.trajectories, batch.verifications, strict=True):
        kind = persona_kind(tasks[trajectory.task_id].user_scenario.persona)
        assert kind is not None, "every generated persona names a manner"
        asked.add(kind)
        assert kind in realized_personas(trajectory.messages), trajectory.trajectory_id
        assert kind in verdict.realized["personas"].split(";")
    # The mock domain knows four personas, the τ²-bench domains six.
    assert asked <= {k for k, _ in PERSONA_KINDS} and len(asked) >= 4, asked


def test_persona_kind_reads_the_manner_and_tolerates_none() -> None:
    assert persona_kind("You are in a hurry and want this done quickly.") == "busy"
    assert persona_kind("You are careful and double-check every detail.") == "careful"
    assert persona_kind("You rarely shop online and are unsure how returns work.") == "novice"
    assert persona_kind(None) is None
    assert persona_kind("You are a pirate.") is None
