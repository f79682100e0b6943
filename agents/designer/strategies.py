"""Synthesis strategies: EvoSyn and the paper's baselines, registered by name.

A strategy decides two things for a campaign: which Designer allocates each round's budget,
and whether the synthesis space may be revised (the Reflector runs). Everything else (the
environment, Planner, Generator, teacher, Verifier, learner and budget) is the campaign's own,
so the arms of an experiment differ only in what their strategy names.

``campaign.strategy`` selects one:

- ``evosyn``: the configured Designer and Reflector (the ablation switches apply as usual).
- ``r_zero`` (R-Zero style): a challenger that proposes tasks at the solver's uncertainty
  frontier. From the last evaluation it estimates the learner's success on each value of each
  single-valued factor and gives budget to the values whose success is nearest one half
  (R-Zero's challenger reward ``1 - 2|p - 1/2|``), as hard requests. No probes, no factor is
  ever added or promoted.
- ``autoplay`` (AutoPlay style): exploration of the environment's tools and states. Budget goes
  to the requestable values the verified data has realized least (novelty), part of it to
  unconstrained sampling; no learner signal is read.

Both baselines plan in the Generator's whole request space, fixed from round 1: the seed
space plus every factor the Generator honours (``realizable``; in airline ``num_write``,
``num_read`` and ``computation``), so they can ask for every task the Generator can make,
including those the seed space cannot name (three or more writes). They cannot add, promote
or deprecate a factor. EvoSyn starts from the seed space and must discover such factors.

A new strategy is a function decorated with :func:`register_strategy`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    FactorOrigin,
    FactorStatus,
    Feedback,
    GenerationPlan,
    ObjectiveType,
    SynthesisSpace,
)
from evosyn.space import allocate_budget

MIN_EPISODES = 3
"""Fewest diagnostic episodes of a value for R-Zero's challenger to estimate its success."""

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
    request_space: bool
    """Whether it plans in the Generator's whole request space from round 1 (else the seed's)."""
    designer: Callable[[StrategyInputs], Designer]
    """Builds the Designer of a campaign."""


STRATEGIES: dict[str, Strategy] = {}
"""Strategy name -> strategy."""


def register_strategy(
    name: str, summary: str, revises_space: bool, request_space: bool = False
) -> Callable[[Callable[[StrategyInputs], Designer]], Callable[..., Designer]]:
    """Register the decorated Designer builder as strategy ``name``."""

    def register(
        build: Callable[[StrategyInputs], Designer],
    ) -> Callable[[StrategyInputs], Designer]:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} is registered twice")
        STRATEGIES[name] = Strategy(name, summary, revises_space, request_space, build)
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
    "r_zero",
    "challenger at the learner's uncertainty frontier, whole request space, never revised",
    revises_space=False,
    request_space=True,
)
def _r_zero(inputs: StrategyInputs) -> Designer:
    if inputs.failures is None:
        # A wiring error, not a config one: tasks.loop.roles_for always passes the lake's.
        raise ValueError("the r_zero strategy reads the learner's evaluations: none were given")
    return FrontierDesigner(inputs.failures, inputs.feasible)


@register_strategy(
    "autoplay",
    "novelty-driven exploration of the whole request space, no learner signal",
    revises_space=False,
    request_space=True,
)
def _autoplay(inputs: StrategyInputs) -> Designer:
    return NoveltyDesigner(inputs.feasible)


def initial_space(
    strategy: Strategy, seed: SynthesisSpace, requestable: Mapping[str, Factor]
) -> SynthesisSpace:
    """The space a campaign of ``strategy`` starts in: the seed space, or the request space.

    ``requestable``: the factors the Generator honours beyond the seed ontology. They enter
    version 1 as seed factors (``round_introduced`` 0), fixed like the others.
    """
    if not strategy.request_space:
        return seed
    have = {f.name for f in seed.factors}
    extra = [
        f.model_copy(update={"status": FactorStatus.SEED, "origin": FactorOrigin.SEED})
        for name, f in requestable.items()
        if name not in have
    ]
    return seed.model_copy(update={"factors": [*seed.factors, *extra]})


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


class FrontierDesigner:
    """R-Zero style: a challenger proposing tasks where the solver is least certain.

    The solver's success on each value of each single-valued factor is estimated from the last
    evaluation's diagnostic episodes (a value with fewer than ``MIN_EPISODES`` is skipped);
    each value is scored with R-Zero's challenger reward ``1 - 2|p - 1/2|`` (1 at p = 1/2, 0 at
    p = 0 or 1) and the best-scored values get hard-pinned directions in proportion to it.
    Nothing is aggregated beyond one value at a time, and the space never changes.
    """

    name = "r_zero"

    def __init__(self, failures: FailureSource, feasible: Feasibility | None = None) -> None:
        self._results = failures
        self._feasible = feasible

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """Cold start as EvoSyn's; then budget toward the uncertainty frontier."""
        if feedback is None:
            return cold_start(self._feasible, space, campaign_id, round, budget)
        tally: dict[tuple[str, str], list[int]] = {}
        factors = _single_valued(space)
        for result in self._results(campaign_id, feedback.round):
            if result.split != "diagnostic":
                continue
            for factor in factors:
                for value in factor_values(result.realized, factor.name):
                    if value in factor.values:
                        seen = tally.setdefault((factor.name, value), [0, 0])
                        seen[0] += int(result.success)
                        seen[1] += 1
        scored = []
        for (name, value), (wins, n) in tally.items():
            if n < MIN_EPISODES:
                continue
            if self._feasible is not None and not plannable(self._feasible, space, name, value):
                continue
            p = wins / n
            reward = 1.0 - 2.0 * abs(p - 0.5)
            if reward > 0:
                scored.append((reward, name, value, p, n))
        scored.sort(key=lambda s: (-s[0], s[1], s[2]))
        targeted = [
            (
                f"frontier{i:02d}",
                ObjectiveType.FAILURE_TARGETED,
                reward,
                f"{name}={value}: solver success {p:.2f} on {n} episodes, uncertainty {reward:.2f}",
                {name: [value]},
                True,
            )
            for i, (reward, name, value, p, n) in enumerate(scored[:MAX_DIRECTIONS])
        ]
        return _plan(space, campaign_id, round, budget, targeted)


class NoveltyDesigner:
    """AutoPlay style: explore the environment toward what the verified data has least of.

    In the request space the single-valued factors name the environment's tools and states a
    task exercises (task family, write and read counts, computation). Each plannable value
    gets weight ``1 / (1 + n)``, ``n`` its verified samples so far (structural coverage, read
    from the feedback's counts; the learner's success is never read); the top values get
    pinned directions in proportion.
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
