"""The ablations as role implementations: which Designer and Reflector each switch leaves."""

from __future__ import annotations

import pytest

from evosyn.agents.ablations import (
    ColdStart,
    PlannerAlone,
    ReflectorWithoutLearnerSignal,
    WithoutLearnerSignal,
    ablated,
)
from evosyn.agents.designer import ProgrammaticDesigner
from evosyn.agents.reflector import ProgrammaticReflector
from evosyn.agents.roles import build_roles
from evosyn.config import AblationsSection, CampaignConfig
from evosyn.space import seed_space


@pytest.mark.parametrize(
    ("switch", "designer", "reflector", "kept"),
    [
        (None, ProgrammaticDesigner, ProgrammaticReflector, None),
        ("no_designer", PlannerAlone, ProgrammaticReflector, None),
        ("fixed_state", ColdStart, None, "fixed_state"),
        ("no_feedback", WithoutLearnerSignal, ReflectorWithoutLearnerSignal, None),
        ("no_reflector", ProgrammaticDesigner, None, "no Reflector"),
    ],
)
def test_each_switch_leaves_its_roles(
    switch: str | None, designer: type, reflector: type | None, kept: str | None
) -> None:
    ablations = AblationsSection.model_validate({switch: True} if switch else {})
    out, reflects, why = ablated(ProgrammaticDesigner(), ProgrammaticReflector(), ablations)
    assert type(out) is designer and why == kept
    assert reflects is None if reflector is None else type(reflects) is reflector


def test_the_planner_alone_spends_the_budget_in_one_open_direction() -> None:
    space = seed_space("airline", "c")
    plan = PlannerAlone().design(space, None, "c", 2, 40)
    (direction,) = plan.directions
    assert (direction.budget, direction.allowed, direction.preferred) == (40, {}, {})
    assert direction.space_version == space.version and plan.total_budget == 40


def test_kind_none_is_the_planner_alone_and_no_reflector() -> None:
    cfg = CampaignConfig.model_validate(
        {"agents": {"designer": {"kind": "none"}, "reflector": {"kind": "none"}}}
    )
    roles = build_roles(cfg)
    assert isinstance(roles.designer, PlannerAlone)
    assert roles.reflector is None and roles.space_kept == "no Reflector"
