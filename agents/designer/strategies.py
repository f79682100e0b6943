"""Synthesis strategies: EvoSyn and the paper's baselines, registered by name.

A strategy decides two things for a campaign: which Designer allocates each round's budget,
and whether the synthesis space may be revised (the Reflector runs). Everything else (the
environment, Planner, Generator, teacher, Verifier, learner and budget) is the campaign's own,
so the arms of an experiment differ only in what their strategy names.

``campaign.strategy`` selects one:

- ``evosyn``: the configured Designer and Reflector (the ablation switches apply as usual).
- ``r_zero`` (R-Zero style): learner failures as unstructured synthesis guidance. Every failed
  diagnostic episode of the last evaluation is a request for "more tasks like this one": its
  coordinates in the (never revised) space become a soft preference, budget in proportion to
  how many failures share them. No per-factor gap statistics, no probes, no factor promotion.
- ``autoplay`` (AutoPlay style): environment-grounded exploration. Budget goes to the values
  the verified data has covered least (novelty), part of it to unconstrained sampling; no
  learner signal is read and the space never changes.

A new strategy is a function decorated with :func:`register_strategy`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evosyn.agents.designer.base import Designer
from evosyn.agents.designer.programmatic import (
    EXPLORATION_SHARE,
    MAX_DIRECTIONS,
    ProgrammaticDesigner,
    plannable,
    round_half_up,
)
from evosyn.agents.planner import Feasibility
from evosyn.agents.prompt_context import cardinality
from evosyn.config import ConfigError
from evosyn.environments.features import factor_values
from evosyn.records import (
    BudgetLevel,
    Direction,
    EvalResult,
    Factor,
    Feedback,
    GenerationPlan,
    ObjectiveType,
    SynthesisSpace,
)
from evosyn.space import allocate_budget

FailureSource = Callable[[str, int], Sequence[EvalResult]]
"""(campaign id, round) -> the round's evaluation results (the lake's ``evaluations``)."""


@dataclass(frozen=True)
class StrategyInputs:
    """What a strategy builds its roles from."""

    designer: Designer
    """The Designer the config asks for (``agents.designer.kind``)."""
    feasible: Feasibility | None
    """The domain's feasibility rule (the Planner's), when the domain has one."""
    failures: FailureSource | None
    """Reads a round's evaluation results (None where no lake is wired in)."""


@dataclass(frozen=True)
class Strategy:
    """A named way of steering synthesis across rounds."""

    name: str
    summary: str
    revises_space: bool
    """Whether the Reflector may revise the space (add, promote, deprecate factors)."""
    designer: Callable[[StrategyInputs], Designer]
    """Builds the Designer of a campaign."""


STRATEGIES: dict[str, Strategy] = {}
"""Strategy name -> strategy."""


def register_strategy(
    name: str, summary: str, revises_space: bool
) -> Callable[[Callable[[StrategyInputs], Designer]], Callable[..., Designer]]:
    """Register the decorated Designer builder as strategy ``name``."""

    def register(
        build: Callable[[StrategyInputs], Designer],
    ) -> Callable[[StrategyInputs], Designer]:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} is registered twice")
        STRATEGIES[name] = Strategy(name, summary, revises_space, build)
        return build

    return register


def get_strategy(name: str) -> Strategy:
    """The strategy ``name``; ConfigError naming ``campaign.strategy`` if there is none."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(
            f"config error: campaign.strategy: unknown strategy {name!r}; "
            f"choose one of {sorted(STRATEGIES)}"
        ) from None


@register_strategy(
    "evosyn", "feedback-driven allocation and a revisable synthesis space", revises_space=True
)
def _evosyn(inputs: StrategyInputs) -> Designer:
    return inputs.designer


@register_strategy(
    "r_zero", "learner failures as unstructured guidance, fixed space", revises_space=False
)
def _r_zero(inputs: StrategyInputs) -> Designer:
    if inputs.failures is None:
        # A wiring error, not a config one: tasks.loop.roles_for always passes the lake's.
        raise ValueError("the r_zero strategy reads the learner's evaluations: none were given")
    return FailureGuidedDesigner(inputs.failures, inputs.feasible)


@register_strategy(
    "autoplay", "novelty-driven exploration of the space, no learner signal", revises_space=False
)
def _autoplay(inputs: StrategyInputs) -> Designer:
    return NoveltyDesigner(inputs.feasible)


# --------------------------------------------------------------------------- designers


def cold_start(
    feasible: Feasibility | None,
    space: SynthesisSpace,
    campaign_id: str,
    round: int,
    budget: int,
) -> GenerationPlan:
    """EvoSyn's cold-start plan.

    Every arm's first round is the same, so arms differ only in how they steer later rounds.
    """
    return ProgrammaticDesigner(feasible).design(space, None, campaign_id, round, budget)


def _single_valued(space: SynthesisSpace) -> list[Factor]:
    return [f for f in space.active_factors if cardinality(f) == (1, 1)]


def _direction(
    space: SynthesisSpace,
    campaign_id: str,
    round: int,
    name: str,
    objective: ObjectiveType,
    budget: int,
    total: int,
    rationale: str,
    preferred: dict[str, list[str]] | None = None,
    allowed: dict[str, list[str]] | None = None,
) -> Direction:
    share = budget / total if total else 0.0
    level = (
        BudgetLevel.HIGH
        if share >= 0.2
        else BudgetLevel.MEDIUM
        if share >= 0.08
        else BudgetLevel.LOW
    )
    return Direction(
        campaign_id=campaign_id,
        round=round,
        direction_id=f"r{round}-{name}",
        space_version=space.version,
        objective=objective,
        preferred=preferred or {},
        allowed=allowed or {},
        budget=budget,
        budget_level=level,
        rationale=rationale,
    )


def _plan(
    space: SynthesisSpace,
    campaign_id: str,
    round: int,
    budget: int,
    targeted: list[tuple[str, ObjectiveType, float, str, dict[str, list[str]], bool]],
) -> GenerationPlan:
    """Targeted parts (name, objective, weight, rationale, values, hard) plus exploration."""
    explore = max(1, round_half_up(budget * EXPLORATION_SHARE)) if targeted else budget
    parts = allocate_budget([t[2] for t in targeted], budget - explore) if targeted else []
    directions = [
        _direction(
            space,
            campaign_id,
            round,
            name,
            objective,
            n,
            budget,
            why,
            preferred=None if hard else values,
            allowed=values if hard else None,
        )
        for (name, objective, _, why, values, hard), n in zip(targeted, parts, strict=True)
        if n > 0
    ]
    if explore:
        directions.append(
            _direction(
                space,
                campaign_id,
                round,
                "explore",
                ObjectiveType.EXPLORATION,
                explore,
                budget,
                "sample the whole space",
            )
        )
    return GenerationPlan(
        campaign_id=campaign_id, round=round, total_budget=budget, directions=directions
    )


class FailureGuidedDesigner:
    """R-Zero style: more tasks like the ones the learner just failed, in a fixed space.

    Each failed diagnostic episode counts as one request for tasks with its coordinates in
    the space (its realized values of the single-valued factors); the most requested
    coordinates get budget in proportion to their failures, as soft preferences. Nothing is
    aggregated per factor and nothing the space cannot name is ever asked for.
    """

    name = "r_zero"

    def __init__(self, failures: FailureSource, feasible: Feasibility | None = None) -> None:
        self._failures = failures
        self._feasible = feasible

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """Cold start as EvoSyn's; then budget toward the failures' coordinates."""
        if feedback is None:
            return cold_start(self._feasible, space, campaign_id, round, budget)
        factors = _single_valued(space)
        requests: Counter[tuple[tuple[str, str], ...]] = Counter()
        for result in self._failures(campaign_id, feedback.round):
            if result.success or result.split != "diagnostic":
                continue
            coords = []
            for factor in factors:
                shown = [
                    v for v in factor_values(result.realized, factor.name) if v in factor.values
                ]
                if len(shown) == 1:
                    coords.append((factor.name, shown[0]))
            if coords:
                requests[tuple(coords)] += 1
        ranked = sorted(requests.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_DIRECTIONS]
        targeted = [
            (
                f"fail{i:02d}",
                ObjectiveType.FAILURE_TARGETED,
                float(n),
                f"{n} failed episode(s) like {', '.join(f'{k}={v}' for k, v in coords)}",
                {k: [v] for k, v in coords},
                False,
            )
            for i, (coords, n) in enumerate(ranked)
        ]
        return _plan(space, campaign_id, round, budget, targeted)


class NoveltyDesigner:
    """AutoPlay style: explore the space toward what the verified data has least of.

    Each plannable value of a single-valued factor gets weight ``1 / (1 + n)``, ``n`` its
    verified samples so far (structural coverage, read from the feedback's counts; the
    learner's success is never read); the top values get pinned directions in proportion.
    """

    name = "autoplay"

    def __init__(self, feasible: Feasibility | None = None) -> None:
        self._feasible = feasible

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """Cold start as EvoSyn's; then budget toward the least-covered values."""
        if feedback is None:
            return cold_start(self._feasible, space, campaign_id, round, budget)
        counts = {(v.factor, v.value): v.n_verified for v in feedback.values}
        scored = []
        for factor in _single_valued(space):
            for value in factor.values:
                if self._feasible is not None and not plannable(
                    self._feasible, space, factor.name, value
                ):
                    continue
                n = counts.get((factor.name, value), 0)
                scored.append((1.0 / (1 + n), factor.name, value, n))
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        targeted = [
            (
                f"novel{i:02d}",
                ObjectiveType.UNDER_COVERED,
                weight,
                f"{name}={value}: {n} verified sample(s) so far",
                {name: [value]},
                True,
            )
            for i, (weight, name, value, n) in enumerate(scored[:MAX_DIRECTIONS])
        ]
        return _plan(space, campaign_id, round, budget, targeted)
