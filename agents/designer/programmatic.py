"""Rule-based allocation: a spread prior at cold start, then budget toward large gaps.

Each (factor, value) slice of the space gets a priority from the latest feedback: the
capability gap ``1 - success`` on diagnostic tasks with the value (a neutral prior where the
learner was not measured) times how under-covered the value is in the verified data. Budget
goes to the highest-priority slices; mastered, well-covered slices get little; a newly added
factor gets budget across its whole value range, most of it to empty values.
"""

from __future__ import annotations

from dataclasses import dataclass

from evosyn.records import (
    BudgetLevel,
    Direction,
    Factor,
    Feedback,
    GenerationPlan,
    ObjectiveType,
    SynthesisSpace,
    ValueFeedback,
)
from evosyn.space import allocate_budget

# Share of each round kept for unconstrained exploration, so no region is starved for good.
EXPLORATION_SHARE = 0.1
# Capability gap assumed for a value the learner has not been measured on.
PRIOR_GAP = 0.5
# Success at or above this, with coverage at or above fair share, counts as mastered.
MASTERED = 0.95
# At most this many targeted directions per round.
MAX_DIRECTIONS = 8
# Share of a round given to a factor the Reflector has just added.
NEW_FACTOR_SHARE = 0.6


@dataclass(frozen=True)
class _Slice:
    factor: str
    value: str
    priority: float
    objective: ObjectiveType
    rationale: str


class ProgrammaticDesigner:
    """The embedded default Designer."""

    name = "programmatic"

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """A plan for ``round``: cold-start spread, or allocation by gap and coverage."""
        if feedback is None:
            slices = self._cold_start(space)
        else:
            slices = self._from_feedback(space, feedback, round)
        explore = max(1, round_half_up(budget * EXPLORATION_SHARE)) if budget > len(slices) else 0
        parts = allocate_budget([s.priority for s in slices], budget - explore)
        directions = [
            Direction(
                campaign_id=campaign_id,
                round=round,
                direction_id=f"r{round}-d{i:02d}",
                space_version=space.version,
                objective=s.objective,
                allowed={s.factor: [s.value]},
                budget=n,
                budget_level=_level(n, budget),
                rationale=s.rationale,
            )
            for i, (s, n) in enumerate(zip(slices, parts, strict=True))
            if n > 0
        ]
        if explore:
            directions.append(
                Direction(
                    campaign_id=campaign_id,
                    round=round,
                    direction_id=f"r{round}-explore",
                    space_version=space.version,
                    objective=ObjectiveType.EXPLORATION,
                    budget=explore,
                    budget_level=BudgetLevel.LOW,
                    rationale="keep sampling the whole space so no region is starved",
                )
            )
        return GenerationPlan(
            campaign_id=campaign_id, round=round, total_budget=budget, directions=directions
        )

    @staticmethod
    def _cold_start(space: SynthesisSpace) -> list[_Slice]:
        # Spread prior: every task family gets an equal share; the Planner spreads the rest.
        family = space.active_factors[0]
        return [
            _Slice(
                family.name,
                v,
                1.0,
                ObjectiveType.EXPLORATION,
                f"cold start: spread over {family.name}",
            )
            for v in family.values
        ]

    def _from_feedback(self, space: SynthesisSpace, feedback: Feedback, round: int) -> list[_Slice]:
        by_slice = {(v.factor, v.value): v for v in feedback.values}
        new = [f for f in space.active_factors if f.round_introduced == round > 0]
        old = [f for f in space.active_factors if f not in new]
        targeted = self._targeted(old, by_slice)
        if not new:
            return targeted
        # The whole value range of the new factor, weighted toward empty values; the rest of the
        # round keeps targeting the old space's largest gaps.
        factor = new[-1]
        slices = []
        for value in factor.values:
            fb = by_slice.get((factor.name, value))
            empty = fb is None or fb.n_verified == 0
            slices.append(
                _Slice(
                    factor.name,
                    value,
                    NEW_FACTOR_SHARE / len(factor.values) * (2.0 if empty else 1.0),
                    ObjectiveType.UNDER_COVERED,
                    f"new factor {factor.name}: cover {value}" + (" (empty)" if empty else ""),
                )
            )
        kept = targeted[:3]
        scale = (1.0 - NEW_FACTOR_SHARE) / max(1e-9, sum(s.priority for s in kept))
        return slices + [
            _Slice(s.factor, s.value, s.priority * scale, s.objective, s.rationale) for s in kept
        ]

    def _targeted(
        self, factors: list[Factor], by_slice: dict[tuple[str, str], ValueFeedback]
    ) -> list[_Slice]:
        scored = [self._score(f, v, by_slice.get((f.name, v))) for f in factors for v in f.values]
        scored.sort(key=lambda s: (-s.priority, s.factor, s.value))
        return scored[:MAX_DIRECTIONS]

    @staticmethod
    def _score(factor: Factor, value: str, fb: ValueFeedback | None) -> _Slice:
        fair = 1.0 / len(factor.values)
        coverage = fb.coverage if fb else 0.0
        measured = fb is not None and fb.success is not None and fb.n_diagnostic > 0
        gap = 1.0 - fb.success if measured and fb and fb.success is not None else PRIOR_GAP
        # Under-coverage in [0, 1]: 1 for an empty value, 0 at or above its fair share.
        under = max(0.0, 1.0 - coverage / fair)
        priority = gap * (0.5 + under) + 1e-3
        if measured and gap >= 0.3:
            objective, why = ObjectiveType.FAILURE_TARGETED, f"learner success {1 - gap:.2f}"
        elif under >= 0.5:
            objective, why = (
                ObjectiveType.UNDER_COVERED,
                f"coverage {coverage:.3f} below fair share {fair:.3f}",
            )
        elif measured and gap <= 1 - MASTERED and coverage >= fair:
            objective, why = ObjectiveType.OVER_MASTERED, f"mastered (success {1 - gap:.2f})"
            priority *= 0.1
        else:
            objective, why = ObjectiveType.EXPLORATION, f"gap {gap:.2f}, coverage {coverage:.3f}"
        return _Slice(factor.name, value, priority, objective, f"{factor.name}={value}: {why}")


def round_half_up(x: float) -> int:
    """``x`` rounded to the nearest integer, halves up."""
    return int(x + 0.5)


def _level(n: int, total: int) -> BudgetLevel:
    share = n / total if total else 0.0
    return (
        BudgetLevel.HIGH
        if share >= 0.2
        else BudgetLevel.MEDIUM
        if share >= 0.08
        else BudgetLevel.LOW
    )
