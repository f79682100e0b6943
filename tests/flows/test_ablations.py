"""The ablations switch off exactly what they name, at the same budget."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evosyn.agents.designer import ProgrammaticDesigner
from evosyn.agents.feedback import compute_feedback, without_learner_signal
from evosyn.config import CampaignConfig, load_config
from evosyn.records import (
    Direction,
    EvalResult,
    Feedback,
    GenerationPlan,
    ReflectorDecision,
    SynthesisSpace,
)
from evosyn.space import seed_space
from evosyn.storage import Lake
from evosyn.tasks.loop import decision_of, design, reflect, roles_for

BUDGET = 30
WRITES = ["0", "1", "2", "3-4", "5+"]
FAMILIES = ["flight_booking", "flight_change", "flight_cancellation"]


def _cfg(root: Path, *switches: str) -> CampaignConfig:
    return load_config(
        Path("deployments/campaigns/airline-offline.yaml"),
        [
            f"lake.root={root}",
            f"campaign.budget_per_round={BUDGET}",
            *(f"ablations.{s}=true" for s in switches),
        ],
        environ={},
    )


def _feedback(space: SynthesisSpace) -> Feedback:
    """Round-1 feedback with a strong write weakness and one weak task family."""
    rng = random.Random(0)
    evals = []
    for i in range(300):
        writes, family = rng.choice(WRITES), rng.choice(FAMILIES)
        weak = writes in ("3-4", "5+") or family == "flight_cancellation"
        evals.append(
            EvalResult(
                campaign_id="c",
                round=1,
                training_id="t",
                task_id=str(i),
                split="diagnostic",
                success=rng.random() >= (0.8 if weak else 0.1),
                reward=0.0,
                realized={"task_family": family, "num_write": writes, "num_read": "1"},
            )
        )
    return compute_feedback(space, evals, [], {}, "c", 1)


def _allocation(plan: GenerationPlan) -> list[tuple[dict[str, list[str]], int]]:
    return [(d.allowed, d.budget) for d in plan.directions]


@pytest.fixture
def space() -> SynthesisSpace:
    return seed_space("airline", "c")


def test_the_full_loop_revises_the_space_and_reallocates(
    tmp_path: Path, space: SynthesisSpace
) -> None:
    cfg = _cfg(tmp_path / "lake")
    fb = _feedback(space)
    nxt = reflect.fn(cfg, space, fb, 2)
    assert "num_write" in {f.name for f in nxt.factors}
    assert decision_of(cfg, "c", 2).startswith("added num_write")
    plan = design.fn(cfg, space, fb, 2)
    cold = ProgrammaticDesigner().design(space, None, "c", 2, BUDGET)
    assert sum(d.budget for d in plan.directions) == BUDGET
    assert _allocation(plan) != _allocation(cold)


def test_no_feedback_hides_the_learner_from_reflector_and_designer(
    tmp_path: Path, space: SynthesisSpace
) -> None:
    cfg = _cfg(tmp_path / "lake", "no_feedback")
    fb = _feedback(space)
    assert reflect.fn(cfg, space, fb, 2) == space  # the write weakness is invisible
    (decision,) = Lake(tmp_path / "lake").read(ReflectorDecision, "c", 1)
    assert decision.action == "reallocate"
    assert decision_of(cfg, "c", 2) == "reallocated budget"
    plan = design.fn(cfg, space, fb, 2)
    blind = ProgrammaticDesigner().design(space, without_learner_signal(fb), "c", 2, BUDGET)
    assert _allocation(plan) == _allocation(blind)
    assert sum(d.budget for d in plan.directions) == BUDGET
    assert not any("learner success" in d.rationale for d in plan.directions)


def test_no_reflector_never_revises_the_space(tmp_path: Path, space: SynthesisSpace) -> None:
    cfg = _cfg(tmp_path / "lake", "no_reflector")
    assert reflect.fn(cfg, space, _feedback(space), 2) == space
    assert Lake(tmp_path / "lake").read(ReflectorDecision, "c") == []
    assert decision_of(cfg, "c", 2) == "space kept (no Reflector)"
    # the Designer still sees the feedback
    plan = design.fn(cfg, space, _feedback(space), 2)
    assert any("learner success" in d.rationale for d in plan.directions)


def test_no_designer_leaves_the_planner_one_unconstrained_direction(
    tmp_path: Path, space: SynthesisSpace
) -> None:
    cfg = _cfg(tmp_path / "lake", "no_designer")
    plan = design.fn(cfg, space, _feedback(space), 2)
    (direction,) = plan.directions
    assert direction.budget == BUDGET and not direction.allowed and not direction.preferred
    assert Lake(tmp_path / "lake").read(Direction, "c", 2) == [direction]


def test_fixed_state_freezes_the_space_and_the_initial_allocation(
    tmp_path: Path, space: SynthesisSpace
) -> None:
    cfg = _cfg(tmp_path / "lake", "fixed_state")
    first = design.fn(cfg, space, None, 1)
    assert reflect.fn(cfg, space, _feedback(space), 2) == space
    assert decision_of(cfg, "c", 2) == "space kept (fixed_state)"
    later = design.fn(cfg, space, _feedback(space), 2)
    assert _allocation(later) == _allocation(first)


def test_single_agent_with_a_model_is_one_synthesizer_for_both_roles(tmp_path: Path) -> None:
    single = load_config(
        None,
        ["llm.default.model=openai/m", "llm.default.api_base=http://127.0.0.1:9/v1"],
        environ={},
        data=_cfg(tmp_path / "lake", "single_agent").model_dump(mode="json"),
    )
    roles = roles_for(single)
    assert roles.generator is roles.teacher and roles.generator.name == "single_agent"


def test_single_agent_without_a_model_is_the_programmatic_stand_in_with_no_repair(
    tmp_path: Path,
) -> None:
    from evosyn.agents.generator.single_agent import ProgrammaticSingleAgent
    from evosyn.agents.planner import ProgrammaticPlanner
    from evosyn.records import Direction, ObjectiveType

    single = _cfg(tmp_path / "lake", "single_agent")
    roles = roles_for(single)
    assert isinstance(roles.generator, ProgrammaticSingleAgent) and roles.generator is roles.teacher
    space = seed_space("airline", "c")
    direction = Direction(
        campaign_id="c",
        round=1,
        direction_id="d",
        space_version=1,
        objective=ObjectiveType.EXPLORATION,
        budget=1,
    )
    [bp] = ProgrammaticPlanner().plan(space, direction, seed=0)
    task = roles.generator.generate(bp, seed=1)
    assert task.generator == "single_agent"
    first, second = roles.teacher.rollout(task, 1, 0), roles.teacher.rollout(task, 1, 1)
    # No Repair: a later attempt is the first rollout again, under its own id.
    assert second.messages == first.messages and second.attempt == 1
    assert second.trajectory_id != first.trajectory_id
