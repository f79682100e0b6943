"""One contract for both backends: what a Generator's task must realize of its blueprint.

The programmatic Generators meet it by construction; the LLM Generator is held to it by
``LLMGenerator.check`` (``tests/agents/llm/test_llm_roles.py``).
"""

from __future__ import annotations

import pytest
from synthesis_checks import exploration, promoted_space

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.contract import CHECKED, PROBED, gold_features, unmet
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.buckets import BUCKETS
from evosyn.environments.registry import domain_plugin, domains_offering, get_domain
from evosyn.records import Blueprint, SynthTask


def planned(domain: str, count: int, seed: int) -> list[tuple[Blueprint, SynthTask]]:
    """``count`` blueprints of the promoted space and the domain Generator's task for each."""
    plugin = domain_plugin(domain)
    space = promoted_space(domain)
    generator = plugin.generator()
    out = []
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, exploration(space, count), seed)
    for index, blueprint in enumerate(blueprints):
        try:
            out.append((blueprint, generator.generate(blueprint, index)))
        except GeneratorRejection:
            continue
    return out


@pytest.mark.parametrize("domain", domains_offering("generator"))
def test_the_programmatic_generators_meet_the_contract(domain: str) -> None:
    pairs = planned(domain, 40, seed=11)
    assert len(pairs) >= 30
    # Every checked factor the domain's promoted space has is requested somewhere.
    requested = {f for b, _ in pairs for f in b.selections}
    assert set(CHECKED) & {f.name for f in promoted_space(domain).factors} <= requested
    infeasible = domain_plugin(domain).infeasible
    for blueprint, synth in pairs:
        assert unmet(get_domain(domain), blueprint, synth.task, infeasible) == [], (
            blueprint.selections
        )


def test_every_miss_is_named_at_once() -> None:
    domain = get_domain("airline")
    infeasible = domain_plugin("airline").infeasible
    blueprint, synth = next(
        (b, s)
        for b, s in planned("airline", 20, seed=3)
        if b.selections["expected_outcome"] == ["fulfill"]
        and b.selections["task_family"] != ["loyalty_or_membership_service"]
    )
    # A task without its writes fulfils nothing, and has another family and fewer calls.
    criteria = synth.task.evaluation_criteria
    assert criteria is not None and criteria.actions
    reads = [a for a in criteria.actions if domain.symbol(a.name).value == "read"]
    task = synth.task.model_copy(
        update={"evaluation_criteria": criteria.model_copy(update={"actions": reads})}
    )
    selections = {k: v for k, v in blueprint.selections.items() if k != "num_write"}
    selections["computation"] = ["conditional"]
    bare = blueprint.model_copy(update={"selections": selections, "difficulty_controls": {}})
    problems = unmet(domain, bare, task, infeasible)
    family = blueprint.selections["task_family"][0]
    assert any(p.startswith(f"task_family is {family}, but the writes (none)") for p in problems)
    assert any(p.startswith("computation is conditional") for p in problems)
    assert any(f"fulfilling {family} needs a write" in p for p in problems)
    # Difficulty controls win over selections, as for the programmatic Generators.
    controlled = blueprint.model_copy(update={"difficulty_controls": {"num_read": "0"}})
    [miss] = unmet(domain, controlled, synth.task, infeasible)
    assert miss.startswith("num_read is 0, but the gold actions make")
    # A refusal that writes nothing is not held to a family it cannot show.
    refusal = bare.model_copy(
        update={"selections": {**bare.selections, "expected_outcome": ["refuse"]}}
    )
    assert not any(p.startswith("task_family") for p in unmet(domain, refusal, task, infeasible))


@pytest.mark.parametrize("factor", ["num_numeric_args", "num_tool_calls", "num_compute"])
def test_a_count_the_reflector_added_from_a_probe_is_checked(factor: str) -> None:
    domain = get_domain("airline")
    infeasible = domain_plugin("airline").infeasible
    blueprint, synth = planned("airline", 1, seed=3)[0]
    realized = gold_features(domain, synth.task).as_values()[factor]
    other = next(value for value in BUCKETS if value != realized)

    def asking(value: str) -> Blueprint:
        return blueprint.model_copy(
            update={"selections": {**blueprint.selections, factor: [value]}}
        )

    assert unmet(domain, asking(realized), synth.task, infeasible) == []
    [miss] = unmet(domain, asking(other), synth.task, infeasible)
    assert miss.startswith(f"{factor} is {other}, but the gold actions have ")
    assert factor in PROBED
