"""Seeded, constraint-respecting sampling of blueprints (the embedded default Planner)."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence

from evosyn.agents.planner.base import PLANNERS, Feasibility, Planner, PlanningError
from evosyn.config import CampaignConfig
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, Direction, Factor, SynthesisSpace

# How much more likely a preferred value is than any other allowed value.
PREFERENCE_WEIGHT = 4.0
# Resampling attempts per blueprint before a direction is declared infeasible.
MAX_TRIES = 2000
#: Why a direction is infeasible; its error then lists the most frequent rejections.
NO_FEASIBLE = f"no feasible blueprint in {MAX_TRIES} tries"
# Factors whose selected value is also a numeric difficulty control for the Generator.
CONTROL_FACTORS = ("num_write", "num_read", "num_tool_calls")


def _rng(seed: int, *parts: object) -> random.Random:
    # Stable across processes (unlike hash()), so a retried task plans the same blueprints.
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _matches(pattern: str, selections: Mapping[str, Sequence[str]]) -> bool:
    """Whether an avoid pattern ``factor=value & factor=value`` holds for ``selections``."""
    terms = [t.strip() for t in pattern.split("&") if t.strip()]
    if not terms or not all("=" in t for t in terms):
        return False
    return all(
        value.strip() in selections.get(name.strip(), [])
        for name, value in (t.split("=", 1) for t in terms)
    )


class ProgrammaticPlanner:
    """Samples factor values: weighted or preferred values favoured, hard constraints enforced.

    Weights and preferences are soft: a blueprint that finds no feasible selection with them
    in half of its tries draws the rest without them.

    Args:
        feasible: the domain's rule for combinations it cannot realize; never proposed.

    """

    name = "programmatic"

    def __init__(self, feasible: Feasibility | None = None) -> None:
        self._infeasible = feasible

    def _candidates(self, factor: Factor, direction: Direction) -> list[str]:
        values = direction.allowed.get(factor.name, factor.values)
        forbidden = set(direction.forbidden.get(factor.name, []))
        return [v for v in values if v not in forbidden]

    def _choose(
        self, factor: Factor, direction: Direction, rng: random.Random, soft: bool
    ) -> list[str]:
        lo, hi = Blueprint.CARDINALITY.get(factor.name, (factor.min_select, factor.max_select))
        pool = self._candidates(factor, direction)
        if len(pool) < lo:
            raise PlanningError(
                f"direction {direction.direction_id}: {factor.name} needs {lo} value(s) but "
                f"allowed minus forbidden leaves {pool}"
            )
        preferred = set(direction.preferred.get(factor.name, [])) if soft else set()
        mix = direction.weights.get(factor.name) if soft else None
        k = rng.randint(lo, min(hi, len(pool)))
        chosen: list[str] = []
        while len(chosen) < k:
            if mix is None:
                weights = [PREFERENCE_WEIGHT if v in preferred else 1.0 for v in pool]
            else:
                # A value left out of the mix is drawn only once every weighted one is taken.
                weights = [mix.get(v, 0.0) for v in pool]
                weights = weights if any(weights) else [1.0] * len(pool)
            pick = rng.choices(pool, weights=weights)[0]
            pool.remove(pick)
            chosen.append(pick)
        # Keep the factor's value order so equal selections compare equal.
        return sorted(chosen, key=factor.values.index)

    def _rejection(self, selections: dict[str, list[str]], direction: Direction) -> str | None:
        for pattern in direction.avoid_patterns:
            if _matches(pattern, selections):
                return f"matches avoid pattern {pattern!r}"
        return self._infeasible(selections) if self._infeasible else None

    def plan(self, space: SynthesisSpace, direction: Direction, seed: int) -> list[Blueprint]:
        """``direction.budget`` blueprints for ``direction`` in ``space``; deterministic in seed."""
        if direction.space_version != space.version:
            raise PlanningError(
                f"direction {direction.direction_id} refers to space v{direction.space_version}, "
                f"not v{space.version}"
            )
        direction.validate_against(space)
        blueprints = []
        for index in range(direction.budget):
            # The campaign id is a name, not a seed: two ids with one seed plan alike.
            rng = _rng(seed, direction.direction_id, index)
            reasons: Counter[str] = Counter()
            for attempt in range(MAX_TRIES):
                # Preferences and weights are soft: past half the tries, draw without them.
                soft = attempt < MAX_TRIES // 2
                selections = {
                    f.name: self._choose(f, direction, rng, soft) for f in space.active_factors
                }
                reason = self._rejection(selections, direction)
                if reason is None:
                    break
                reasons[reason] += 1
            else:
                raise PlanningError(
                    f"direction {direction.direction_id}: {NO_FEASIBLE} "
                    f"(most often: {'; '.join(r for r, _ in reasons.most_common())})"
                )
            blueprint = Blueprint(
                campaign_id=direction.campaign_id,
                round=direction.round,
                blueprint_id=f"{direction.direction_id}-b{index:04d}",
                direction_id=direction.direction_id,
                space_version=space.version,
                selections=selections,
                intent=_intent(space.domain, selections),
                difficulty_controls={
                    name: selections[name][0] for name in CONTROL_FACTORS if selections.get(name)
                },
                seed=seed,
            )
            blueprint.validate_against(space)
            blueprints.append(blueprint)
        return blueprints


def _intent(domain: str, selections: Mapping[str, Sequence[str]]) -> str:
    family = ", ".join(selections.get("task_family", [])) or "a request"
    outcome = ", ".join(selections.get("expected_outcome", [])) or "any outcome"
    focus = " and ".join(selections.get("policy_or_constraint_focus", [])) or "general policy"
    pattern = ", then ".join(selections.get("tool_use_pattern", [])) or "any tool use"
    challenge = ", ".join(selections.get("interaction_challenge", [])) or "a cooperative user"
    return (
        f"A {domain} {family.replace('_', ' ')} task the agent should {outcome}, hinging on "
        f"{focus.replace('_', ' ')}, solved by {pattern.replace('_', ' ')}, with "
        f"{challenge.replace('_', ' ')}."
    )


@PLANNERS.register("programmatic")
def _programmatic(cfg: CampaignConfig) -> Planner:
    return ProgrammaticPlanner(domain_plugin(cfg.campaign.domain).infeasible)
