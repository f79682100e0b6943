"""The Designer as an LLM agent: the round's directions and budgets from one model call.

The prompt (``designer.j2``) carries the paper's runtime inputs: the domain, its tools and
policy, the current synthesis space (an interaction challenge's values with what the simulated
user is told to do, and every rule of the domain) and one steering signal (cold start, learner
feedback, or a newly added factor with the coverage the Reflector's probe measured for it).
The reply is parsed into ``Direction`` records and checked against the space: every key and
value must exist, allowed-minus-forbidden must leave enough values for the factor's
cardinality, avoid patterns must name known values, and the budgets must add up to the round
budget. An invalid reply gets one repair turn quoting the error. A reply still invalid (or
a model call that failed for good) is rejected: the round runs on the fallback Designer's plan,
and every direction's rationale records the rejection and its reason.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.designer.base import DESIGNERS, Designer
from evosyn.agents.designer.programmatic import ProgrammaticDesigner
from evosyn.agents.gateway import Gateway, LLMError
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.planner import Conflicts, Feasibility, PlanningError, ProgrammaticPlanner
from evosyn.agents.planner.programmatic import NO_FEASIBLE
from evosyn.agents.prompt_context import (
    NEARLY_EMPTY,
    cardinality,
    difficulty_ranges,
    domain_rules,
    factor_cards,
    feedback_legend,
    feedback_rows,
    render,
    space_json,
    unselected_factors,
)
from evosyn.agents.prompt_context import tool_lines as _tool_lines
from evosyn.config import CampaignConfig
from evosyn.environments.base import Tau2Domain
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import (
    BudgetLevel,
    Direction,
    Factor,
    Feedback,
    GenerationPlan,
    ObjectiveType,
    SynthesisSpace,
)

logger = logging.getLogger(__name__)

ROLE = "designer"
TEMPLATES = Path(__file__).parent
# Most directions one plan may have (the programmatic Designer's targeted maximum plus one).
MAX_DIRECTIONS = 9
# Factors the cold start asks to sample every value of: its instruction must fit the budget.
COLD_START_FACTORS = ("task_family", "expected_outcome")


class DirectionOutput(BaseModel):
    """One direction as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    objective_type: ObjectiveType = Field(description="Why the direction gets budget.")
    target: str = Field(default="", description="Capability or structure aimed at.")
    preferred: dict[str, list[str]] = Field(default_factory=dict, description="Soft values.")
    allowed: dict[str, list[str]] = Field(default_factory=dict, description="Only values.")
    forbidden: dict[str, list[str]] = Field(default_factory=dict, description="Never values.")
    avoid_patterns: list[str] = Field(default_factory=list, description="Combinations to avoid.")
    budget: int = Field(ge=0, description="Blueprints for the direction.")
    rationale: str = Field(default="", description="Why it helps now.")


class DesignOutput(BaseModel):
    """The whole reply of the Designer."""

    model_config = ConfigDict(extra="forbid")

    directions: list[DirectionOutput] = Field(min_length=1, max_length=MAX_DIRECTIONS)


def check_pattern(pattern: str, space: SynthesisSpace) -> None:
    """Raise ValueError unless ``pattern`` is ``factor=value & ...`` over the space."""
    terms = [t.strip() for t in pattern.split("&")]
    if not terms or not all("=" in t for t in terms):
        raise ValueError(f"avoid pattern {pattern!r} is not 'factor=value & factor=value'")
    for term in terms:
        name, value = (s.strip() for s in term.split("=", 1))
        factor = _factor(space, name, f"avoid pattern {pattern!r}")
        if value not in factor.values:
            raise ValueError(f"avoid pattern {pattern!r}: {value!r} is not a value of {name}")


def _factor(space: SynthesisSpace, name: str, where: str) -> Any:
    active = {f.name: f for f in space.active_factors}
    if name not in active:
        raise ValueError(
            f"{where} names {name!r}, which is not a factor of the space {sorted(active)}"
        )
    return active[name]


def parse_plan(
    data: dict[str, Any],
    space: SynthesisSpace,
    campaign_id: str,
    round: int,
    budget: int,
    conflicts: Conflicts | None = None,
) -> GenerationPlan:
    """The generation plan in ``data``, validated against ``space`` and ``budget``.

    With the domain's rule ``conflicts``, a direction no blueprint can satisfy is invalid too
    (see :func:`unplannable`), so it never reaches the Planner; every such direction is named
    with every rule its draws break.

    Raises:
        ValueError: naming the first direction, key or value that is wrong, or every direction
            that cannot be planned.
    """
    output = DesignOutput.model_validate(data)
    spent = sum(d.budget for d in output.directions)
    if spent != budget:
        raise ValueError(f"direction budgets sum to {spent}, but they must sum to {budget}")
    directions = []
    dead: list[str] = []
    for i, d in enumerate(output.directions):
        where = f"direction {i}"
        maps = {
            "preferred": {k: v for k, v in d.preferred.items() if v},
            "allowed": {k: v for k, v in d.allowed.items() if v},
            "forbidden": {k: v for k, v in d.forbidden.items() if v},
        }
        for kind, mapping in maps.items():
            for name, values in mapping.items():
                factor = _factor(space, name, f"{where} {kind}")
                unknown = [v for v in values if v not in factor.values]
                if unknown:
                    raise ValueError(
                        f"{where} {kind}.{name}: {unknown} are not values of {name} "
                        f"(its values: {factor.values})"
                    )
        for name in set(maps["allowed"]) | set(maps["forbidden"]):
            factor = _factor(space, name, where)
            banned = set(maps["forbidden"].get(name, []))
            pool = [v for v in maps["allowed"].get(name, factor.values) if v not in banned]
            lo = cardinality(factor)[0]
            # An explicit allowed list that leaves nothing is a contradiction even at lo = 0.
            need = max(lo, 1) if name in maps["allowed"] else lo
            if len(pool) < need:
                raise ValueError(
                    f"{where}: allowed minus forbidden leaves {pool} for {name}, which needs "
                    f"at least {need} value(s)"
                )
        for pattern in d.avoid_patterns:
            check_pattern(pattern, space)
        if d.budget == 0:
            continue
        direction = Direction(
            campaign_id=campaign_id,
            round=round,
            direction_id=f"r{round}-d{i:02d}",
            space_version=space.version,
            objective=d.objective_type,
            preferred=maps["preferred"],
            allowed=maps["allowed"],
            forbidden=maps["forbidden"],
            avoid_patterns=d.avoid_patterns,
            budget=d.budget,
            budget_level=budget_level(d.budget, budget),
            target=d.target.strip(),
            rationale=d.rationale.strip(),
        )
        why = unplannable(conflicts, space, direction) if conflicts is not None else None
        if why is not None:
            dead.append(f"{where}: {why}")
        directions.append(direction)
    if dead:
        raise ValueError(
            "no blueprint can satisfy these directions; loosen or drop them: " + "; ".join(dead)
        )
    return GenerationPlan(
        campaign_id=campaign_id, round=round, total_budget=budget, directions=directions
    )


def unplannable(conflicts: Conflicts, space: SynthesisSpace, direction: Direction) -> str | None:
    """Why no blueprint can satisfy ``direction``, or None.

    Decided as the Planner would plan it: the programmatic Planner draws selections within the
    direction's allowed, forbidden and avoid constraints (preferences and weights are soft)
    until the domain's rule passes one; none in its tries means none the rule permits. The
    reason names every rule the draws break, with the share of draws that break it, most often
    first: a rule every draw breaks is one the direction itself forces, even where an earlier
    rule is the first reason of each draw.
    """
    asked = 0
    broken: Counter[str] = Counter()
    reasons: dict[str, str] = {}

    def first(selections: Mapping[str, Sequence[str]]) -> str | None:
        nonlocal asked
        asked += 1
        found = conflicts(selections)
        for conflict in found:
            broken[conflict.rule] += 1
            reasons.setdefault(conflict.rule, conflict.reason)
        return found[0].reason if found else None

    try:
        ProgrammaticPlanner(first).plan(space, direction.model_copy(update={"budget": 1}), 0)
    except PlanningError as exc:
        why = str(exc).removeprefix(f"direction {direction.direction_id}: ")
        if broken:
            # The Planner's own list counts first reasons only; name every broken rule instead.
            # (Only running out of tries raises once a draw was checked.)
            shares = (f"{reasons[r]} ({n / asked:.0%} of draws)" for r, n in broken.most_common())
            why = f"{NO_FEASIBLE}; the draws break: {'; '.join(shares)}"
        return why[:400]
    return None


def new_factor(factor: Factor, feedback: Feedback) -> dict[str, Any]:
    """A factor the Reflector has just added, with what the data shows of it so far.

    The round's feedback was made on the space before the factor, so it rarely has rows for
    it; the Reflector's probe of the same name measured it on the verified data (its
    coverage) and the diagnostic tasks (its failure rate), and the Designer sees those
    numbers too. A value is empty or nearly empty below ``NEARLY_EMPTY`` of the data; an
    unmeasured factor has every value empty.
    """
    rows = [v for v in feedback.values if v.factor == factor.name]
    probe = next((p for p in feedback.probes if p.name == factor.name), None)
    coverage: dict[str, float] = {}
    failure: dict[str, float] = {}
    source = ""
    if rows:
        coverage = {v.value: v.coverage for v in rows}
        source = "from the feedback"
    elif probe is not None:
        coverage = dict(probe.coverage)
        failure = {v: probe.failure_rate[v] for v in factor.values if v in probe.failure_rate}
        source = "measured by the Reflector's probe"
    return {
        "name": factor.name,
        "values": factor.values,
        "definition": factor.definition,
        "measured": bool(coverage),
        "source": source,
        "coverage": {v: f"{coverage.get(v, 0.0):.0%}" for v in factor.values},
        "failure": {v: f"{rate:.0%}" for v, rate in failure.items()},
        "empty": [v for v in factor.values if coverage.get(v, 0.0) < NEARLY_EMPTY],
    }


def budget_level(n: int, total: int) -> BudgetLevel:
    """The coarse level of ``n`` blueprints out of ``total`` (the programmatic thresholds)."""
    share = n / total if total else 0.0
    if share >= 0.2:
        return BudgetLevel.HIGH
    return BudgetLevel.MEDIUM if share >= 0.08 else BudgetLevel.LOW


class LLMDesigner:
    """The Designer as one model call per round, with a fallback Designer for rejected output.

    Args:
        gateway: Gateway of role ``designer``.
        domain: Domain name or instance (tools and policy in the prompt).
        fallback: Designer whose plan a rejected round runs on (default: the programmatic one).
        conflicts: The domain's rule (every conflict of a selection); a direction no
            blueprint can satisfy is invalid output.
    """

    name = "llm"

    def __init__(
        self,
        gateway: Gateway,
        domain: str | Tau2Domain = "airline",
        fallback: Designer | None = None,
        conflicts: Conflicts | None = None,
    ) -> None:
        self.gateway = gateway
        self._conflicts = conflicts
        self.gateways: list[Gateway] = [gateway]
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self.fallback = fallback or ProgrammaticDesigner()
        #: Why the last rejected reply was rejected, per (campaign, round).
        self.rejections: dict[tuple[str, int], str] = {}

    @classmethod
    def from_config(
        cls,
        cfg: CampaignConfig,
        feasible: Feasibility | None = None,
        conflicts: Conflicts | None = None,
    ) -> LLMDesigner:
        """The Designer of a campaign: role ``designer`` of its ``llm`` section.

        ``feasible``, the domain's rule, goes to the programmatic fallback; ``conflicts``, the
        same rule giving every conflict, checks the model's directions.
        """
        gateway = Gateway.from_config(cfg.llm, ROLE, seed=cfg.campaign.seed)
        return cls(gateway, cfg.campaign.domain, ProgrammaticDesigner(feasible), conflicts)

    def prompt(
        self, space: SynthesisSpace, feedback: Feedback | None, round: int, budget: int
    ) -> str:
        """The Designer prompt for ``round`` (cold start without feedback)."""
        rows = feedback_rows(feedback) if feedback is not None else []
        new_factors = [
            new_factor(factor, feedback)
            for factor in space.active_factors
            if feedback is not None and factor.round_introduced == round > 0
        ]
        rules = domain_rules(self.domain.name)
        return render(
            TEMPLATES,
            "designer.j2",
            domain=self.domain.name,
            tools=_tool_lines(self.domain),
            policy=self.domain.policy(),
            space=space_json(space),
            cards=factor_cards(space),
            difficulty=difficulty_ranges(),
            rules=rules,
            unselected=unselected_factors(rules, space),
            signal="cold_start" if feedback is None else "feedback",
            new_factors=new_factors,
            feedback=rows,
            feedback_round=feedback.round if feedback is not None else 0,
            legend=feedback_legend(rows),
            budget=budget,
            cold_cover=max(
                (len(f.values) for f in space.active_factors if f.name in COLD_START_FACTORS),
                default=0,
            ),
            max_directions=MAX_DIRECTIONS,
        )

    def design(
        self,
        space: SynthesisSpace,
        feedback: Feedback | None,
        campaign_id: str,
        round: int,
        budget: int,
    ) -> GenerationPlan:
        """The model's plan for ``round``; the fallback's, marked as such, if it is rejected."""
        prompt = self.prompt(space, feedback, round, budget)
        try:
            return ask_json(
                self.gateway,
                prompt,
                lambda data: parse_plan(data, space, campaign_id, round, budget, self._conflicts),
                seed=round,
            )
        except OutputRejected as exc:
            reason = exc.reason
        except LLMError as exc:
            reason = f"model call failed: {exc.error_class} after {exc.attempts} attempt(s)"
        self.rejections[(campaign_id, round)] = reason
        logger.warning("designer output rejected for round %d: %s", round, reason)
        plan = self.fallback.design(space, feedback, campaign_id, round, budget)
        note = f"llm designer output rejected ({reason}); fallback plan"
        directions = [
            d.model_copy(update={"rationale": f"{note}: {d.rationale}"[:2000]})
            for d in plan.directions
        ]
        return plan.model_copy(update={"directions": directions})


@DESIGNERS.register("llm")
def _llm(cfg: CampaignConfig) -> Designer:
    plugin = domain_plugin(cfg.campaign.domain)
    return LLMDesigner.from_config(cfg, plugin.infeasible, plugin.checks.conflicts)
