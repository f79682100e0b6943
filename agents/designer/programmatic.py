"""Rule-based allocation: a spread prior at cold start, then budget toward large gaps.

Each (factor, value) slice of the space gets a priority from the latest feedback: the
capability gap ``1 - success`` on diagnostic tasks with the value times how under-covered the
value is in the verified data. Gaps measured on few results are shrunk toward the learner's
overall failure rate (a Beta prior worth ``PRIOR_TASKS`` diagnostic results), which also stands
in for values the learner was not measured on. Budget goes to the highest-priority slices;
mastered, well-covered slices get little; a newly added factor gets budget across its whole
value range, weighted by the gap and coverage its probe measured before it was a factor, most
of it to empty or under-covered values.

The other factors of each targeted direction are not left to chance: the Designer sets their
sampling weights so that, over the round, each measured factor's share moves from its values
with a gap below the factor's mean to those above it, in proportion to the difference. The
weights are fitted on dry runs of the programmatic Planner because the domain couples the
factors (in airline, three or more writes make a task ``hard``), so a pin on one factor moves
the others' shares whatever the weights say. Outside its own directions, a just-added factor
keeps the mix the verified data had.
"""

from __future__ import annotations

from dataclasses import dataclass

from evosyn.agents.designer.base import DESIGNERS, Designer
from evosyn.agents.planner import Feasibility, PlanningError, ProgrammaticPlanner
from evosyn.agents.prompt_context import cardinality
from evosyn.config import CampaignConfig
from evosyn.environments.registry import domain_plugin
from evosyn.records import (
    BudgetLevel,
    Direction,
    Factor,
    Feedback,
    GenerationPlan,
    ObjectiveType,
    Probe,
    SynthesisSpace,
    ValueFeedback,
)
from evosyn.space import allocate_budget

# Share of each round kept for unconstrained exploration, so no region is starved for good.
EXPLORATION_SHARE = 0.1
# Capability gap assumed when the learner has not been measured at all.
PRIOR_GAP = 0.5
# Weight, in diagnostic results, of the overall failure rate a slice's measured gap is shrunk to.
PRIOR_TASKS = 5.0
# Success at or above this, with coverage at or above fair share, counts as mastered.
MASTERED = 0.95
# At most this many targeted directions per round.
MAX_DIRECTIONS = 8
# Share of a round given to a factor the Reflector has just added.
NEW_FACTOR_SHARE = 0.6
# How far a value's next share moves per unit of priority above its factor's mean.
STEP = 3.0
# Rounds of iterative proportional fitting of the sampling weights.
FIT_ITERATIONS = 8
# Blueprints dry-run per direction and fitting round.
DRY_RUN = 30
# Largest ratio between two fitted sampling weights of one factor.
MAX_WEIGHT_RATIO = 10.0
# The factor the domain couples to the counts: whether a pin reaches a value takes a dry run.
DIFFICULTY = "difficulty_profile"


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

    def __init__(self, feasible: Feasibility | None = None) -> None:
        """A Designer that gives no budget to a value no feasible blueprint can have.

        ``feasible`` is the domain's rule (the Planner's). It rules out ``num_read=0`` on its
        own in airline, where every task reads, and ``num_read=1`` in every combination; a dry
        run of the Planner on the pinned value finds both. Without it every value of the space
        may get budget, and its fitted weights assume any combination can be realized.
        """
        self._feasible = feasible
        # Whether a pin plus one more value is plannable, per space (dry runs are not free).
        self._reach: dict[tuple[str, int, tuple[tuple[str, str], ...]], bool] = {}

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """A plan for ``round``: cold-start spread, or allocation by gap and coverage."""
        slices = (
            self._cold_start(space)
            if feedback is None
            else self._from_feedback(space, feedback, round)
        )
        explore = max(1, round_half_up(budget * EXPLORATION_SHARE)) if budget > len(slices) else 0
        if self._feasible is not None:
            slices = [s for s in slices if self._plannable(space, s.factor, s.value)] or slices
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
        if feedback is not None:
            # The other factors of each targeted direction follow the mix that moves every
            # measured factor's share toward its gaps.
            targets = self._targets(space, feedback, round, budget)
            mixes = self._fit(space, directions, targets, _kept_mix(space, feedback, round))
            directions = [
                d.model_copy(update={"weights": self._weights_for(space, d, mixes)})
                if d.allowed
                else d
                for d in directions
            ]
        return GenerationPlan(
            campaign_id=campaign_id, round=round, total_budget=budget, directions=directions
        )

    def _plannable(self, space: SynthesisSpace, factor: str, value: str) -> bool:
        """Whether the Planner finds any blueprint with ``factor=value`` under the domain's rule."""
        return plannable(self._feasible, space, factor, value)

    def _weights_for(
        self, space: SynthesisSpace, direction: Direction, weights: dict[str, dict[str, float]]
    ) -> dict[str, dict[str, float]]:
        """``weights`` for the factors ``direction`` does not pin, less what its pin rules out.

        A value the domain never combines with the pin (``difficulty_profile=easy`` next to
        ``num_write=3-4``) weighs nothing, so the Planner does not spend its tries on it and
        an LLM Planner is not asked for it. The difficulty is decided by a dry run of the
        Planner on the pin and the value: it follows from the whole combination (family,
        outcome, counts, computation), which the rule cannot judge from the pair alone while
        the family is open (``num_write=3-4`` with ``easy`` is no family's).
        """
        rule = self._feasible or _anything
        out = {}
        for name, w in weights.items():
            if name in direction.allowed:
                continue
            fits = {
                v: x
                for v, x in w.items()
                if rule({**direction.allowed, name: [v]}) is None
                and (name != DIFFICULTY or self._reaches(space, {**direction.allowed, name: [v]}))
            }
            if fits:
                out[name] = fits
        return out

    def _reaches(self, space: SynthesisSpace, allowed: dict[str, list[str]]) -> bool:
        """Whether the Planner finds a blueprint within ``allowed`` (cached per space)."""
        if self._feasible is None:
            return True
        key = (
            space.campaign_id,
            space.version,
            tuple(sorted((f, ",".join(v)) for f, v in allowed.items())),
        )
        if key not in self._reach:
            self._reach[key] = reachable(self._feasible, space, allowed)
        return self._reach[key]

    def _targets(
        self, space: SynthesisSpace, feedback: Feedback, round: int, budget: int
    ) -> dict[str, dict[str, float]]:
        """Blueprints each value of a measured, single-valued old factor should get next round.

        A value's target share is its share of the latest round moved by ``STEP`` times how
        far its priority lies above the mean of its factor's values: budget moves from
        below-average gaps to above-average ones in proportion to the difference.
        """
        by_slice = {(v.factor, v.value): v for v in feedback.values}
        measured = {v.factor for v in feedback.values if v.success is not None and v.n_diagnostic}
        prior = _overall_gap(feedback)
        out: dict[str, dict[str, float]] = {}
        for factor in space.active_factors:
            if factor.round_introduced == round or factor.name not in measured:
                continue
            if cardinality(factor) != (1, 1):
                # A blueprint selects several; their realized shares also count patterns a
                # task shows without asking, so a shift in what is asked is not one in share.
                continue
            values = [v for v in factor.values if self._plannable(space, factor.name, v)]
            if not values:
                continue
            fbs = {v: by_slice.get((factor.name, v)) for v in values}
            score = {v: self._score(factor, v, fb, prior).priority for v, fb in fbs.items()}
            mean = sum(score.values()) / len(score)
            target = {v: max(0.0, _current(fb) + STEP * (score[v] - mean)) for v, fb in fbs.items()}
            mass = sum(target.values())
            if mass > 0:
                out[factor.name] = {v: budget * t / mass for v, t in target.items()}
        return out

    def _fit(
        self,
        space: SynthesisSpace,
        directions: list[Direction],
        targets: dict[str, dict[str, float]],
        kept: dict[str, dict[str, float]],
    ) -> dict[str, dict[str, float]]:
        """Sampling weights whose draws, with the pinned values, meet ``targets``; plus ``kept``.

        Iterative proportional fitting on dry runs of the programmatic Planner (the domain's
        rule decides which values can go with a pin, e.g. ``num_write=3-4`` only with
        ``difficulty_profile=hard``), damped and bounded so that no value is starved.
        """
        weights = {f: dict.fromkeys(t, 1.0) for f, t in targets.items()}
        planner = ProgrammaticPlanner(self._feasible)
        for iteration in range(FIT_ITERATIONS):
            got = {f: dict.fromkeys(t, 0.0) for f, t in targets.items()}
            for d in directions:
                trial = d.model_copy(
                    update={
                        "budget": DRY_RUN,
                        "weights": self._weights_for(space, d, weights | kept) if d.allowed else {},
                    }
                )
                try:
                    drawn = planner.plan(space, trial, seed=iteration)
                except PlanningError:
                    continue  # the real planning names the reason
                for b in drawn:
                    for f, counts in got.items():
                        for v in b.selections.get(f, []):
                            if v in counts:
                                counts[v] += d.budget / len(drawn)
            for f, w in weights.items():
                fitted = {
                    v: x * ((targets[f][v] + 0.5) / (got[f][v] + 0.5)) ** 0.5 for v, x in w.items()
                }
                top = max(fitted.values())
                weights[f] = {v: max(x / top, 1.0 / MAX_WEIGHT_RATIO) for v, x in fitted.items()}
        return {f: {v: round(x, 4) for v, x in w.items()} for f, w in (weights | kept).items()}

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
        prior = _overall_gap(feedback)
        new = [f for f in space.active_factors if f.round_introduced == round > 0]
        old = [f for f in space.active_factors if f not in new]
        targeted = self._targeted(old, by_slice, prior)
        if not new:
            return targeted
        # The whole value range of the new factor, weighted by gap and under-coverage (from its
        # probe when it was measured as one); the rest of the round keeps targeting the old
        # space's largest gaps.
        factor = new[-1]
        probe = next((p for p in feedback.probes if p.name == factor.name), None)
        scored = [
            self._score(factor, v, by_slice.get((factor.name, v)) or _from_probe(probe, v), prior)
            for v in factor.values
        ]
        mass = sum(s.priority for s in scored)
        slices = [
            _Slice(
                s.factor,
                s.value,
                NEW_FACTOR_SHARE * s.priority / mass,
                ObjectiveType.UNDER_COVERED,
                f"new factor {s.rationale}",
            )
            for s in scored
        ]
        kept = targeted[:3]
        scale = (1.0 - NEW_FACTOR_SHARE) / max(1e-9, sum(s.priority for s in kept))
        return slices + [
            _Slice(s.factor, s.value, s.priority * scale, s.objective, s.rationale) for s in kept
        ]

    def _targeted(
        self,
        factors: list[Factor],
        by_slice: dict[tuple[str, str], ValueFeedback],
        prior: float,
    ) -> list[_Slice]:
        scored = [
            self._score(f, v, by_slice.get((f.name, v)), prior) for f in factors for v in f.values
        ]
        scored.sort(key=lambda s: (-s.priority, s.factor, s.value))
        return scored[:MAX_DIRECTIONS]

    @staticmethod
    def _score(factor: Factor, value: str, fb: ValueFeedback | None, prior: float) -> _Slice:
        fair = 1.0 / len(factor.values)
        coverage = fb.coverage if fb else 0.0
        measured = fb is not None and fb.success is not None and fb.n_diagnostic > 0
        if measured and fb is not None and fb.success is not None:
            n = fb.n_diagnostic
            gap = _shrunk_gap(fb.success, n, prior)
            success = f"learner success {fb.success:.2f} on {n}"
        else:
            gap, success = prior, "not measured"
        # Under-coverage in [0, 1]: 1 for an empty value, 0 at or above its fair share.
        under = max(0.0, 1.0 - coverage / fair)
        priority = gap * (1.0 + under) + 1e-3
        if measured and gap >= 0.3:
            objective, why = ObjectiveType.FAILURE_TARGETED, success
        elif under >= 0.5:
            objective, why = (
                ObjectiveType.UNDER_COVERED,
                f"coverage {coverage:.3f} below fair share {fair:.3f} ({success})",
            )
        elif measured and gap <= 1 - MASTERED and coverage >= fair:
            objective, why = ObjectiveType.OVER_MASTERED, f"mastered ({success})"
            priority *= 0.1
        else:
            objective, why = (
                ObjectiveType.EXPLORATION,
                f"gap {gap:.2f} ({success}), coverage {coverage:.3f}",
            )
        return _Slice(factor.name, value, priority, objective, f"{factor.name}={value}: {why}")


def plannable(feasible: Feasibility | None, space: SynthesisSpace, factor: str, value: str) -> bool:
    """Whether the programmatic Planner finds any blueprint with ``factor=value``."""
    return reachable(feasible, space, {factor: [value]})


def reachable(
    feasible: Feasibility | None, space: SynthesisSpace, allowed: dict[str, list[str]]
) -> bool:
    """Whether the programmatic Planner finds any blueprint within ``allowed``."""
    trial = Direction(
        campaign_id="dry-run",
        round=1,
        direction_id="dry-run",
        space_version=space.version,
        objective=ObjectiveType.EXPLORATION,
        allowed=allowed,
        budget=1,
    )
    try:
        ProgrammaticPlanner(feasible).plan(space, trial, seed=0)
    except PlanningError:
        return False
    return True


def _shrunk_gap(success: float, n: int, prior: float) -> float:
    # Posterior mean of the gap under a Beta prior at ``prior`` worth PRIOR_TASKS results.
    return ((1.0 - success) * n + prior * PRIOR_TASKS) / (n + PRIOR_TASKS)


def _anything(_: object) -> None:
    return None


def _kept_mix(space: SynthesisSpace, feedback: Feedback, round: int) -> dict[str, dict[str, float]]:
    """Weights that keep a just-added factor's measured mix outside its own directions.

    The budget given to the new factor is what redistributes it; elsewhere it keeps the shares
    its probe measured in the verified data (the Planner would otherwise draw it uniformly).
    """
    out = {}
    for factor in space.active_factors:
        probe = next((p for p in feedback.probes if p.name == factor.name), None)
        if factor.round_introduced != round or probe is None or not any(probe.coverage.values()):
            continue
        top = max(probe.coverage.values())
        out[factor.name] = {
            v: max(probe.coverage.get(v, 0.0) / top, 1.0 / MAX_WEIGHT_RATIO) for v in factor.values
        }
    return out


def _current(fb: ValueFeedback | None) -> float:
    """The value's share of the latest round's verified data; of all of it in older feedback."""
    if fb is None:
        return 0.0
    return fb.coverage if fb.round_coverage is None else fb.round_coverage


def _overall_gap(feedback: Feedback) -> float:
    """The learner's failure rate over the diagnostic set, from the best-measured factor."""
    by_factor: dict[str, list[ValueFeedback]] = {}
    for v in feedback.values:
        if v.success is not None and v.n_diagnostic > 0:
            by_factor.setdefault(v.factor, []).append(v)
    if not by_factor:
        return PRIOR_GAP
    rows = max(by_factor.values(), key=lambda vs: sum(v.n_diagnostic for v in vs))
    n = sum(v.n_diagnostic for v in rows)
    return sum((1.0 - (v.success or 0.0)) * v.n_diagnostic for v in rows) / n


def _from_probe(probe: Probe | None, value: str) -> ValueFeedback | None:
    # A probe's bucket, as the value feedback the factor would have had.
    if probe is None:
        return None
    n = probe.distribution.get(value, 0)
    fail = probe.failure_rate.get(value)
    return ValueFeedback(
        campaign_id=probe.campaign_id,
        round=probe.round,
        factor=probe.name,
        value=value,
        coverage=probe.coverage.get(value, 0.0),
        n_verified=0,
        success=None if fail is None or n == 0 else 1.0 - fail,
        n_diagnostic=n,
    )


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


@DESIGNERS.register("programmatic")
def _programmatic(cfg: CampaignConfig) -> Designer:
    return ProgrammaticDesigner(domain_plugin(cfg.campaign.domain).infeasible)
