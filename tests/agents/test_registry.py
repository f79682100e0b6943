"""Every role's implementations are registered by name and selected by ``agents.<role>.kind``."""

from __future__ import annotations

import re

import pytest

from evosyn import kinds
from evosyn.agents.generator import realizable
from evosyn.agents.registry import Registry
from evosyn.agents.roles import REGISTRIES, implementation, on_model
from evosyn.agents.verifier import NL_JUDGES
from evosyn.agents.verifier.realize_judge import REALIZE_JUDGES
from evosyn.config import AgentsSection, CampaignConfig, ConfigError, load_config
from evosyn.kinds import Kind

REGISTERED = {
    "designer": ["llm", "none", "programmatic"],
    "planner": ["llm", "programmatic"],
    "generator": ["llm", "programmatic"],
    "teacher": ["llm", "programmatic"],
    "verifier": ["programmatic"],
    "reflector": ["llm", "none", "programmatic"],
    "learner": ["icl", "rl", "sft", "simulated"],
}


def test_every_role_of_the_config_has_a_registry() -> None:
    assert set(REGISTRIES) == set(AgentsSection.model_fields) == set(REGISTERED)
    assert {role: r.names() for role, r in REGISTRIES.items()} == REGISTERED


@pytest.mark.parametrize("role", sorted(REGISTERED))
def test_an_unknown_name_fails_where_the_config_is_loaded(role: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, [f"agents.{role}.kind=nope"], environ={})
    message = str(caught.value)
    assert message.startswith(f"config error: agents.{role}.kind: unknown {role} implementation")
    assert str(REGISTERED[role]) in message and "\n" not in message


@pytest.mark.parametrize("role", sorted(REGISTERED))
def test_the_config_reference_names_every_registered_implementation(role: str) -> None:
    section = getattr(AgentsSection(), role)
    described = type(section).model_fields["kind"].description
    assert described is not None
    # "Implementation: a, b or c." (a note in brackets after the names is not a name)
    names = described.split(":", 1)[1].split("(")[0].replace(" or ", ", ")
    assert sorted(re.findall(r"[a-z_]+", names)) == REGISTERED[role]


def test_every_declared_kind_is_registered_and_every_registered_one_declared() -> None:
    for registry in [*REGISTRIES.values(), NL_JUDGES, REALIZE_JUDGES]:
        assert sorted(registry._entries) == kinds.names(registry.role), registry.key
        for name, registered in registry._entries.items():
            # The registration's facts are the catalog's: one place declares them.
            declared = kinds.get(registry.role, name)
            assert vars(registered) == vars(declared) | {"build": registered.build}


def test_a_registry_refuses_a_name_twice_and_names_its_key_for_an_unknown_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(kinds._KINDS, "thing", {})
    registry: Registry[int] = Registry("agents.thing.kind")
    with pytest.raises(ValueError, match="'one' is not a declared kind"):
        registry.register("one")
    kinds.declare("thing", Kind("one"))
    with pytest.raises(ValueError, match="declared twice"):
        kinds.declare("thing", Kind("one"))
    registry.register("one")(lambda cfg: 1)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("one")(lambda cfg: 2)
    assert registry.build("one", CampaignConfig()) == 1
    with pytest.raises(ConfigError, match=r"agents\.thing\.kind: unknown implementation 'two'"):
        registry.get("two")


def test_registrations_say_what_runs_on_a_model_or_a_gpu() -> None:
    cfg = CampaignConfig()
    assert on_model(cfg) == frozenset()
    llm = CampaignConfig.model_validate(
        {"agents": {"generator": {"kind": "llm"}, "learner": {"kind": "sft"}}}
    )
    assert on_model(llm) == {"generator"}
    assert implementation(llm, "teacher").models == ()
    assert implementation(llm, "learner").gpu and not implementation(cfg, "learner").gpu
    # The single agent is scheduled as a model, whichever of its two forms runs.
    single = CampaignConfig.model_validate({"ablations": {"single_agent": True}})
    assert on_model(single) == {"generator", "teacher"}


def test_the_generator_registration_says_which_factors_the_reflector_may_add() -> None:
    # The domain's own builders honour only what the domain registered (mock: two factors).
    mock = CampaignConfig.model_validate({"campaign": {"domain": "mock"}})
    assert implementation(mock, "generator").grounded
    assert sorted(realizable(mock) or {}) == ["num_read", "num_write"]
    # A model proposes tasks freely: it may be asked for any factor.
    llm = CampaignConfig.model_validate(
        {"campaign": {"domain": "mock"}, "agents": {"generator": {"kind": "llm"}}}
    )
    assert not implementation(llm, "generator").grounded and realizable(llm) is None
    # The single agent without a model is the domain's own Generator and teacher.
    single = CampaignConfig.model_validate(
        {"campaign": {"domain": "mock"}, "ablations": {"single_agent": True}}
    )
    assert realizable(single) == realizable(mock)
