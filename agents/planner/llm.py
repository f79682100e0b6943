"""The Planner as an LLM agent: one model call grounds a direction into one blueprint.

The prompt (``planner.j2``) carries the domain, tools, policy, every active factor with its
values and cardinality (an interaction challenge's values with what the simulated user is told
to do), how difficulty counts tool calls, the Designer's direction and the blueprints already
planned for it (so the next one differs), and the combinations the domain cannot realize (its
feasibility rule in sentences, every one, with the factors they name that the space does not
hold defined). The reply is parsed into a ``Blueprint`` and checked: every active factor
selected with its cardinality and only its own values, no other keys, the direction's allowed,
forbidden and avoid constraints obeyed, the domain's feasibility rule satisfied, and the
difficulty controls consistent with the selection (:func:`control_problems`). An
invalid reply gets one repair turn quoting every problem found, every rule of the domain the
selection breaks included; a reply still invalid is a rejection of that blueprint. ``plan``
raises ``PartialPlanningError`` naming every rejected blueprint, with the blueprints that did
plan attached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.gateway import Gateway, LLMError
from evosyn.agents.generator.contract import CONTROLS, expected_calls, state_change
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.planner.base import (
    PLANNERS,
    Conflicts,
    PartialPlanningError,
    Planner,
    PlanningError,
)
from evosyn.agents.planner.programmatic import CONTROL_FACTORS
from evosyn.agents.prompt_context import (
    cardinality,
    difficulty_ranges,
    direction_json,
    domain_rules,
    factor_cards,
    render,
    tool_lines,
    unselected_factors,
)
from evosyn.buckets import BUCKET_RANGES, BUCKETS, DIFFICULTY_CALLS, OPEN_END
from evosyn.config import CampaignConfig
from evosyn.environments.base import Tau2Domain
from evosyn.environments.feasibility import first
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Blueprint, Direction, SynthesisSpace

ROLE = "planner"
TEMPLATES = Path(__file__).parent
# Blueprints of the same direction shown to the model so the next one differs.
PREVIOUS_SHOWN = 5


class BlueprintOutput(BaseModel):
    """One blueprint as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    selections: dict[str, list[str] | str] = Field(description="Factor -> chosen values.")
    intent: str = Field(min_length=1, description="What the task is about.")
    difficulty_controls: dict[str, int | float | bool | str | None] = Field(
        default_factory=dict, description="Expected difficulty controls."
    )


def _matches(pattern: str, selections: Mapping[str, Sequence[str]]) -> bool:
    terms = [t.strip() for t in pattern.split("&") if t.strip()]
    if not terms or not all("=" in t for t in terms):
        return False
    return all(
        value.strip() in selections.get(name.strip(), [])
        for name, value in (t.split("=", 1) for t in terms)
    )


def control_problems(
    controls: Mapping[str, int | float | bool | str | None],
    selections: Mapping[str, Sequence[str]],
    conflicts: Conflicts | None = None,
) -> list[str]:
    """Every way the model's ``difficulty_controls`` contradict themselves or ``selections``.

    Only the controls of ``CONTROLS`` are known (copies of ``CONTROL_FACTORS`` are replaced by
    the selections anyway). ``expected_tool_calls`` is a whole number inside the selected
    difficulty_profile's range and at least the reads and writes selected;
    ``requires_state_change`` is true or false, false for a refusal or ``num_write=0``, true
    for any other ``num_write``, and, with the domain's rule ``conflicts``, true exactly when
    the selection needs a write (a fulfilled cancellation) and false when it allows none (a
    read-only family).
    """
    problems = []
    unknown = sorted(set(controls) - set(CONTROLS) - set(CONTROL_FACTORS))
    if unknown:
        problems.append(
            f"difficulty_controls name {unknown}; only {sorted(CONTROLS)} are difficulty controls"
        )
    if "expected_tool_calls" in controls:
        raw = controls["expected_tool_calls"]
        count = None if isinstance(raw, float) else expected_calls(raw)
        difficulty = first(selections, "difficulty_profile")
        lo, hi = DIFFICULTY_CALLS.get(difficulty or "", (0, OPEN_END))
        least = sum(
            BUCKET_RANGES[selections[name][0]][0]
            for name in ("num_read", "num_write")
            if selections.get(name) and selections[name][0] in BUCKET_RANGES
        )
        if count is None:
            problems.append(f"expected_tool_calls is {raw!r}, not a whole number of tool calls")
        elif not lo <= count <= hi:
            problems.append(
                f"expected_tool_calls is {count}, outside difficulty_profile={difficulty}'s "
                f"range ({difficulty_ranges()} tool calls)"
            )
        elif count < least:
            problems.append(
                f"expected_tool_calls is {count}, fewer than the {least} reads and writes that "
                "num_read and num_write select"
            )
    if "requires_state_change" in controls:
        raw = controls["requires_state_change"]
        change = state_change(raw)
        outcome = list(selections.get("expected_outcome") or [])
        writes = first(selections, "num_write")
        if change is None:
            problems.append(f"requires_state_change is {raw!r}, not true or false")
        elif change and outcome == ["refuse"]:
            problems.append("requires_state_change is true, but a refusal changes nothing")
        elif writes is not None and change != (writes != "0"):
            problems.append(
                f"requires_state_change is {str(change).lower()}, but num_write={writes}"
            )
        elif writes is None and conflicts is not None:
            problems += _state_change_conflicts(change, selections, conflicts)
    return problems


def _state_change_conflicts(
    change: bool, selections: Mapping[str, Sequence[str]], conflicts: Conflicts
) -> list[str]:
    """Why the domain's rule allows no task of ``selections`` that writes (or not) as asked."""
    before = {c.rule for c in conflicts(selections)}
    buckets = [b for b in BUCKETS if (b != "0") == change]
    reasons: list[str] = []
    for value in buckets:
        added = [
            c.reason
            for c in conflicts({**selections, "num_write": [value]})
            if c.rule not in before
        ]
        if not added:
            return []
        reasons = reasons or added
    return [f"requires_state_change is {str(change).lower()}, but {reasons[0]}"]


def _control(value: int | float | bool | str | None) -> int | str:
    # Booleans and floats would be coerced silently by the record; say what they were.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return value
    return "" if value is None else str(value)


def parse_blueprint(
    data: dict[str, Any],
    space: SynthesisSpace,
    direction: Direction,
    index: int,
    seed: int,
    conflicts: Conflicts | None = None,
) -> Blueprint:
    """The blueprint in ``data`` for ``direction``'s ``index``-th slot, validated.

    Every problem is reported at once, so that one repair turn can fix them all: unknown and
    missing factors, unknown values, wrong value counts, the direction's constraints, and
    every rule of the domain (``conflicts``) the selection breaks. The domain's rule is asked
    only of a sound selection (known factors, each with known values and its cardinality),
    whether or not it obeys the direction.

    Raises:
        ValueError: naming every factor, value or constraint that is wrong ("; "-separated).
    """
    output = BlueprintOutput.model_validate(data)
    active = {f.name: f for f in space.active_factors}
    problems: list[str] = []
    extra = sorted(set(output.selections) - set(active))
    if extra:
        problems.append(f"selections name {extra}, which are not factors of the space")
    missing = [name for name in active if name not in output.selections]
    if missing:
        problems.append(f"selections leave out the factors {missing}")
    selections: dict[str, list[str]] = {}
    sound = not problems
    for name, factor in active.items():
        raw = output.selections.get(name, [])
        values = [raw] if isinstance(raw, str) else list(raw)
        unknown = [v for v in values if v not in factor.values]
        if unknown:
            problems.append(
                f"{name}: {unknown} are not values of {name} (its values: {factor.values})"
            )
            sound = False
            continue
        lo, hi = cardinality(factor)
        if name in output.selections and not lo <= len(values) <= hi:
            problems.append(f"{name} takes {lo}..{hi} values, not {len(values)}")
            sound = False
        selections[name] = sorted(values, key=factor.values.index)
    for name, allowed in direction.allowed.items():
        outside = [v for v in selections.get(name, []) if v not in allowed]
        if outside:
            problems.append(f"{name}: {outside} are outside the direction's allowed {allowed}")
    for name, forbidden in direction.forbidden.items():
        banned = [v for v in selections.get(name, []) if v in forbidden]
        if banned:
            problems.append(f"{name}: {banned} are forbidden by the direction")
    for pattern in direction.avoid_patterns:
        if _matches(pattern, selections):
            problems.append(f"the selection matches the direction's avoid pattern {pattern!r}")
    if sound and conflicts is not None:
        problems += [
            f"the selection cannot be realized in this domain: {c.reason}"
            for c in conflicts(selections)
        ]
    problems += control_problems(
        output.difficulty_controls, selections, conflicts if sound else None
    )
    if problems:
        raise ValueError("; ".join(problems))
    blueprint = Blueprint(
        campaign_id=direction.campaign_id,
        round=direction.round,
        blueprint_id=f"{direction.direction_id}-b{index:04d}",
        direction_id=direction.direction_id,
        space_version=space.version,
        selections=selections,
        intent=output.intent.strip(),
        difficulty_controls={
            **{
                k: _control(v)
                for k, v in output.difficulty_controls.items()
                if k not in CONTROL_FACTORS
            },
            **{name: selections[name][0] for name in CONTROL_FACTORS if selections.get(name)},
        },
        seed=seed,
    )
    blueprint.validate_against(space)
    return blueprint


class LLMPlanner:
    """The Planner as one model call per blueprint, up to the model's concurrency at once.

    Args:
        gateway: Gateway of role ``planner``.
        domain: Domain name or instance (tools and policy in the prompt).
        conflicts: The domain's rule for combinations it cannot realize (the same rule the
            programmatic Planner uses, every conflict of a selection); a selection it flags
            is invalid output, and the repair turn names every conflict.
    """

    name = "llm"

    def __init__(
        self,
        gateway: Gateway,
        domain: str | Tau2Domain = "airline",
        conflicts: Conflicts | None = None,
    ) -> None:
        self.gateway = gateway
        self.gateways: list[Gateway] = [gateway]
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self._conflicts = conflicts

    @classmethod
    def from_config(cls, cfg: CampaignConfig, conflicts: Conflicts | None = None) -> LLMPlanner:
        """The Planner of a campaign: role ``planner`` of its ``llm`` section."""
        gateway = Gateway.from_config(cfg.llm, ROLE, seed=cfg.campaign.seed)
        return cls(gateway, cfg.campaign.domain, conflicts)

    def prompt(
        self,
        space: SynthesisSpace,
        direction: Direction,
        previous: Sequence[Blueprint] = (),
        slot: int = 0,
    ) -> str:
        """The Planner prompt for blueprint ``slot`` of ``direction``.

        Blueprints planned at the same time do not see each other, so each slot is asked to
        differ above all in its own factor (the factors the direction leaves open, in turn).
        """
        shown = [
            {"selections": b.selections, "intent": b.intent} for b in previous[-PREVIOUS_SHOWN:]
        ]
        active = {f.name for f in space.active_factors}
        # Only a direction with other blueprints has a mix to vary; a factor with weights is
        # already mixed by them, and telling one blueprint to leave them would contradict them.
        open_ = [
            f.name
            for f in space.active_factors
            if len(direction.allowed.get(f.name, f.values)) > 1 and f.name not in direction.weights
        ]
        if direction.budget < 2:
            open_ = []
        rules = domain_rules(self.domain.name)
        return render(
            TEMPLATES,
            "planner.j2",
            domain=self.domain.name,
            tools=tool_lines(self.domain),
            policy=self.domain.policy(),
            cards=[c for c in factor_cards(space) if c["name"] in active],
            difficulty=difficulty_ranges(),
            controls=CONTROLS,
            counted=[n for n in ("num_read", "num_write") if n in active],
            rules=rules,
            unselected=unselected_factors(rules, space),
            direction=direction_json(direction),
            previous=shown,
            vary=open_[slot % len(open_)] if open_ else None,
        )

    def plan(self, space: SynthesisSpace, direction: Direction, seed: int) -> list[Blueprint]:
        """``direction.budget`` blueprints, one model call (plus a repair turn) each.

        Raises:
            PlanningError: the direction does not fit the space.
            PartialPlanningError: some blueprints were rejected (the rest are attached).
        """
        if direction.space_version != space.version:
            raise PlanningError(
                f"direction {direction.direction_id} refers to space v{direction.space_version}, "
                f"not v{space.version}"
            )
        direction.validate_against(space)
        blueprints: list[Blueprint] = []
        rejected: dict[str, str] = {}
        # Waves of as many calls as the model takes at once; each prompt shows the blueprints
        # planned in earlier waves, so a wave's prompts (and a resumed run's) are fixed.
        wave = self.gateway.settings.concurrency
        with ThreadPoolExecutor(wave, thread_name_prefix="planner") as pool:
            for start in range(0, direction.budget, wave):
                indices = range(start, min(start + wave, direction.budget))
                prompts = [self.prompt(space, direction, blueprints, slot=i) for i in indices]
                outcomes = list(
                    pool.map(functools.partial(self._one, space, direction, seed), indices, prompts)
                )
                for index, outcome in zip(indices, outcomes, strict=True):
                    if isinstance(outcome, Blueprint):
                        blueprints.append(outcome)
                    else:
                        rejected[f"{direction.direction_id}-b{index:04d}"] = outcome
        if rejected:
            raise PartialPlanningError(direction.direction_id, blueprints, rejected)
        return blueprints

    def _one(
        self, space: SynthesisSpace, direction: Direction, seed: int, index: int, prompt: str
    ) -> Blueprint | str:
        """The ``index``-th blueprint of ``direction``, or why it was rejected."""
        try:
            return ask_json(
                self.gateway,
                prompt,
                functools.partial(
                    parse_blueprint,
                    space=space,
                    direction=direction,
                    index=index,
                    seed=seed,
                    conflicts=self._conflicts,
                ),
                seed=seed + index,
            )
        except OutputRejected as exc:
            return exc.reason
        except LLMError as exc:
            return f"model call failed: {exc.error_class} after {exc.attempts} attempt(s)"


@PLANNERS.register("llm")
def _llm(cfg: CampaignConfig) -> Planner:
    return LLMPlanner.from_config(cfg, domain_plugin(cfg.campaign.domain).checks.conflicts)
