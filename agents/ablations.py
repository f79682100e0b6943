"""The paper's ablations as role implementations, applied where roles are built.

Each switch of ``cfg.ablations`` that changes a role is a Designer or Reflector here, wrapped
around (or standing in for) the configured one, so a round's tasks call the roles they are
given and never branch on an ablation:

- ``no_designer`` (or ``agents.designer.kind: none``): :class:`PlannerAlone`, one
  unconstrained direction with the whole budget;
- ``fixed_state``: :class:`ColdStart`, the cold-start allocation every round, and no Reflector;
- ``no_feedback``: :class:`WithoutLearnerSignal` around the Designer and the Reflector;
- ``no_reflector`` (or ``agents.reflector.kind: none``): no Reflector.

``single_agent`` replaces the Generator and the teacher
(:func:`evosyn.agents.generator.single_agent.single_agent`).
"""

from __future__ import annotations

from dataclasses import dataclass

from evosyn.agents.designer.base import DESIGNERS, Designer
from evosyn.agents.feedback import without_learner_signal
from evosyn.agents.reflector.base import REFLECTORS, Reflector
from evosyn.config import AblationsSection, CampaignConfig
from evosyn.records import (
    BudgetLevel,
    Direction,
    Feedback,
    GenerationPlan,
    ObjectiveType,
    ReflectorDecision,
    SynthesisSpace,
)


class PlannerAlone:
    """No Designer: one unconstrained direction, the Planner samples the space alone."""

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """The whole budget in one direction without constraints."""
        direction = Direction(
            campaign_id=campaign_id,
            round=round,
            direction_id=f"r{round}-planner",
            space_version=space.version,
            objective=ObjectiveType.EXPLORATION,
            budget=budget,
            budget_level=BudgetLevel.HIGH,
            rationale="no Designer: the Planner samples the space alone",
        )
        return GenerationPlan(
            campaign_id=campaign_id, round=round, total_budget=budget, directions=[direction]
        )


@dataclass(frozen=True)
class ColdStart:
    """``fixed_state``: the Designer's cold-start allocation (no feedback), every round."""

    inner: Designer

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """The inner Designer's plan as if no round had been evaluated yet."""
        return self.inner.design(space, None, campaign_id, round, budget)


@dataclass(frozen=True)
class WithoutLearnerSignal:
    """``no_feedback``: the Designer sees feedback with nothing measured on the learner."""

    inner: Designer

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """The inner Designer's plan from the data's coverage alone."""
        seen = None if feedback is None else without_learner_signal(feedback)
        return self.inner.design(space, seen, campaign_id, round, budget)


@dataclass(frozen=True)
class ReflectorWithoutLearnerSignal:
    """``no_feedback``: the Reflector sees feedback with nothing measured on the learner."""

    inner: Reflector

    def reflect(
        self, space: SynthesisSpace, feedback: Feedback, round: int
    ) -> tuple[ReflectorDecision, SynthesisSpace]:
        """The inner Reflector's decision from the data's coverage alone."""
        return self.inner.reflect(space, without_learner_signal(feedback), round)


@DESIGNERS.register("none")
def _no_designer(cfg: CampaignConfig) -> Designer:
    return PlannerAlone()


@REFLECTORS.register("none")
def _no_reflector(cfg: CampaignConfig) -> Reflector | None:
    return None


def ablated(
    designer: Designer,
    reflector: Reflector | None,
    ablations: AblationsSection,
) -> tuple[Designer, Reflector | None, str | None]:
    """The Designer and Reflector the ablations leave, and why the space stays put (or None)."""
    out: Designer
    if ablations.no_designer:
        out = PlannerAlone()
    elif ablations.fixed_state:
        out = ColdStart(designer)
    elif ablations.no_feedback:
        out = WithoutLearnerSignal(designer)
    else:
        out = designer
    if ablations.fixed_state:
        return out, None, "fixed_state"
    if ablations.no_reflector or reflector is None:
        return out, None, "no Reflector"
    if ablations.no_feedback:
        return out, ReflectorWithoutLearnerSignal(reflector), None
    return out, reflector, None
