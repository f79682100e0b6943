"""The contract a Generator's task meets, whichever backend wrote it.

A task honours its blueprint when the values its gold actions realize are the requested ones.
They are re-derived the way the Verifier derives them from a rollout
(:func:`~evosyn.environments.features.realized_features`), here from the gold trajectory opened
by the customer's instructions (an amount the customer states there, ``$250``, is what makes a
computation ``conditional``):

* ``num_read`` / ``num_write``: the bucket of the read / write calls;
* ``difficulty_profile``: the range of all tool calls (:data:`~evosyn.buckets.DIFFICULTY_CALLS`);
* ``computation``: the strongest kind of computation the calls show;
* ``task_family``: the family the writes imply (not derivable from a refusal that writes
  nothing: every refusal looks like an inquiry);
* a count the Reflector added as a factor from a probe (``num_numeric_args``,
  ``num_tool_calls``, ``num_compute``, :data:`PROBED`): the bucket of what it counts;

and the domain's feasibility rule accepts the requested family and outcome with the number of
writes made (a fulfilled request writes, unless its family only looks things up; a refusal
changes nothing). A value requested as a difficulty control counts first, as in
:func:`~evosyn.environments.kit.grounding.control`. The Planner's own controls
(:data:`CONTROLS`) are held to the letter: ``expected_tool_calls`` is the number of gold
actions, ``requires_state_change`` whether one of them writes.

The programmatic Generators meet the contract by construction (``tests/agents/generator/
test_contract.py`` holds them to it). The model roles that write a task, the LLM Generator and
the single agent of the monolithic ablation, hold every reply to one :class:`Contract`: it
names every miss at once for their repair turn, and :func:`definitions` states the same rules
in their prompts, so what a prompt asks for and what is checked cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tau2.data_model.message import UserMessage
from tau2.data_model.tasks import Task

from evosyn.agents.prompt_context import CHALLENGE_FACTOR, difficulty_ranges, value_meanings
from evosyn.agents.verifier.replay import policy_check, write_violation
from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS, OPEN_END, bucket, in_bucket
from evosyn.environments.base import FunctionalSymbol, Tau2Domain
from evosyn.environments.features import (
    COMPUTATIONS,
    RealizedFeatures,
    realized_features,
    string_leaves,
)
from evosyn.environments.kit.grounding import (
    REALIZABLE,
    CountMiss,
    control,
    count_misses,
    with_controls,
)
from evosyn.environments.registry import Feasibility, domain_plugin
from evosyn.environments.trajectories import gold_trajectory
from evosyn.records import Blueprint, Factor
from evosyn.space import seed_space

CHECKED: tuple[str, ...] = (
    "task_family",
    "num_read",
    "num_write",
    "difficulty_profile",
    "computation",
)
"""The factors whose requested value the gold actions must realize, in the order reported."""
COUNTED = ("num_read", "num_write", "difficulty_profile")
"""The checked factors that count calls, as the programmatic Generators count them."""
PROBED: tuple[str, ...] = tuple(
    name
    for name, field in RealizedFeatures.model_fields.items()
    if field.annotation is int and name not in CHECKED
)
"""The other counts of the gold a factor may select once the Reflector adds it from a probe
(``num_numeric_args``, ``num_tool_calls``, ``num_compute``): their bucket must be the one
requested, though no Generator builds to them."""
CONTROLS: dict[str, str] = {
    "expected_tool_calls": "how many tool calls the agent makes to resolve the task, all of "
    "them (look-ups, writes and any other call): a whole number inside the range of the "
    "selected difficulty_profile",
    "requires_state_change": "whether resolving the task changes the database (at least one "
    "write call)",
}
"""The Planner's difficulty controls beyond the factors, each with what it means."""

_COMPUTATION_MEANS = {
    "none": "no calculate call, no write that picks among listed alternatives, and every "
    "number passed to a tool was stated before (by the customer or a tool result)",
    "aggregate": "a calculate call, or a number passed to a tool that nobody stated (a total, "
    "a difference)",
    "constrained_opt": "a write that picks some, not all, of two or more alternatives one "
    "earlier read listed (e.g. the cheapest of the flights a search found)",
    "conditional": "a calculate call whose expression uses an amount the customer states in "
    "money form ($250) in the task's instructions, checked before deciding to act",
}


def gold_features(domain: Tau2Domain, task: Task) -> RealizedFeatures:
    """What ``task``'s gold actions realize, the customer's instructions said first."""
    opening = UserMessage(role="user", content=str(task.user_scenario.instructions))
    return realized_features(domain, [opening, *gold_trajectory(domain, task)])


def underivable(factor: str, outcome: Sequence[str], realized: Mapping[str, str]) -> bool:
    """Whether a trajectory cannot show ``factor`` (so it is neither a match nor a miss).

    The task family is read from the writes; a requested refusal that indeed wrote nothing
    has no family in its tool calls (every refusal looks like a read-only inquiry).
    """
    return (
        factor == "task_family" and list(outcome) == ["refuse"] and realized.get("num_write") == "0"
    )


def expected_calls(value: object) -> int | None:
    """An ``expected_tool_calls`` value as a count; None when it is no whole number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.isdigit() else None


def state_change(value: object) -> bool | None:
    """A ``requires_state_change`` value as a truth value; None when it is neither."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).strip().lower())


def controls(blueprint: Blueprint) -> dict[str, int | bool | str]:
    """The blueprint's difficulty controls as a model should read them.

    Copies of a selection (the Planners repeat ``num_write`` there) are left out, and the
    controls of :data:`CONTROLS` get their types back: the record stores
    ``requires_state_change`` as the string ``"false"``, which is not false.
    """
    shown: dict[str, int | bool | str] = {}
    for name, value in blueprint.difficulty_controls.items():
        if [str(value)] == blueprint.selections.get(name):
            continue
        typed = (
            expected_calls(value)
            if name == "expected_tool_calls"
            else state_change(value)
            if name == "requires_state_change"
            else None
        )
        shown[name] = value if typed is None else typed
    return shown


def control_problems(blueprint: Blueprint, calls: int, writes: int) -> list[str]:
    """Every way ``calls`` tool calls with ``writes`` writes miss the blueprint's CONTROLS."""
    wanted = blueprint.difficulty_controls
    problems = []
    count = expected_calls(wanted.get("expected_tool_calls"))
    if count is not None and calls != count:
        problems.append(
            f"expected_tool_calls is {count}, but the gold actions make {calls} tool calls"
        )
    change = state_change(wanted.get("requires_state_change"))
    if change is True and writes == 0:
        problems.append("requires_state_change is true, but the gold actions make no write")
    elif change is False and writes:
        problems.append(
            f"requires_state_change is false, but the gold actions make {writes} write(s)"
        )
    return problems


def _agent_writes(domain: Tau2Domain, task: Task) -> int:
    """Gold calls of the agent's write tools in ``task``."""
    criteria = task.evaluation_criteria
    return sum(
        1
        for action in (criteria.actions or [] if criteria else [])
        if action.requestor == "assistant"
        and (spec := domain.tool_spec(action.name, "assistant")) is not None
        and spec.symbol == FunctionalSymbol.WRITE
    )


#: The challenge whose customer lacks an id; only it gives a task ``unknown_info``.
LACKS_ID = "missing_information"


def lacks_id(blueprint: Blueprint) -> bool:
    """Whether ``blueprint`` requests the customer who lacks an id (:data:`LACKS_ID`)."""
    return LACKS_ID in blueprint.selections.get(CHALLENGE_FACTOR, [])


# An id or number a customer is asked for, as ``unknown_info`` would name it.
_AN_ID = re.compile(r"\b(?:id|ids|id\(s\)|number|numbers)\b", re.IGNORECASE)


def _gold_values(task: Task) -> set[str]:
    """The gold calls' argument values that look like ids or numbers (a digit, 3+ characters)."""
    criteria = task.evaluation_criteria
    return {
        value
        for action in (criteria.actions if criteria else None) or []
        for value in string_leaves(action.arguments)
        if len(value) >= 3 and any(c.isdigit() for c in value)
    }


def unknown_info_problem(task: Task, blueprint: Blueprint) -> str | None:
    """What is wrong with the ids ``task``'s customer lacks, for ``blueprint``; None if nothing.

    A customer told they lack an id or number says so, and the dialogue is then checked as
    acting out ``missing_information``: ``unknown_info`` names one exactly when the blueprint
    requests that challenge. Facts the agent finds or tells (a fare, a refund) may be unknown
    either way.
    """
    instructions = task.user_scenario.instructions
    unknown = str(getattr(instructions, "unknown_info", None) or "")
    given = sorted(v for v in _gold_values(task) if v in unknown)
    if given:
        # The simulated user reads unknown_info: a value written there is one they know.
        return (
            f"unknown_info gives {', '.join(map(repr, given))}, a value the gold calls use: "
            "the simulated user reads unknown_info, so name what they lack by what it is "
            '("your card number"), never its value'
        )
    names_id = bool(_AN_ID.search(unknown))
    if lacks_id(blueprint) and not names_id:
        return f"{LACKS_ID} is requested, but unknown_info names no id the customer lacks"
    if names_id and not lacks_id(blueprint):
        return (
            f"unknown_info is {unknown!r}, but {LACKS_ID} is not requested: the customer knows "
            "every id or number the task needs, so unknown_info names none"
        )
    return None


def unmet(
    domain: Tau2Domain, blueprint: Blueprint, task: Task, infeasible: Feasibility
) -> list[str]:
    """Every way ``task``'s gold actions miss what ``blueprint`` requests; empty when none.

    Args:
        domain: The task's domain.
        blueprint: The blueprint the task was written for.
        task: The task; its initial state must build (the gold actions are replayed on it).
        infeasible: The domain's feasibility rule (``DomainPlugin.infeasible``).

    """
    features = gold_features(domain, task)
    counted = {
        miss.factor: miss
        for miss in count_misses(
            blueprint,
            reads=features.num_read,
            writes=features.num_write,
            calls=features.num_tool_calls,
        )
    }
    realized = features.as_values()
    outcome = blueprint.selections.get("expected_outcome", [])
    family = control(blueprint, "task_family")
    problems = []
    for factor in CHECKED:
        wanted = control(blueprint, factor)
        if wanted is None or underivable(factor, outcome, realized):
            continue
        if factor in COUNTED:
            if factor in counted:
                problems.append(_count_problem(counted[factor]))
        elif factor == "computation":
            if wanted in COMPUTATIONS and features.computation != wanted:
                problems.append(
                    f"computation is {wanted} ({_COMPUTATION_MEANS[wanted]}), but the gold "
                    f"actions show {features.computation}"
                )
        elif features.task_family != wanted:
            writes = sorted(
                set(domain.knowledge.family_by_write) & set(_written(features)) or {"none"}
            )
            problems.append(
                f"task_family is {wanted}, but the writes ({', '.join(writes)}) are those of "
                f"{features.task_family}"
            )
    for factor in PROBED:
        wanted = control(blueprint, factor)
        count = getattr(features, factor)
        if wanted is not None and in_bucket(count, wanted) is False:
            problems.append(
                f"{factor} is {wanted}, but the gold actions have {count}, counting "
                f"{_counted(factor)}"
            )
    problems += control_problems(blueprint, features.num_tool_calls, features.num_write)
    # A refusal is the agent's: the caller may still fix their own phone (telecom).
    agent_writes = _agent_writes(domain, task)
    if outcome == ["refuse"] and agent_writes:
        problems.append(
            f"expected_outcome is refuse, but the agent's gold actions make {agent_writes} "
            "state change(s)"
        )
    elif family is not None and outcome and control(blueprint, "num_write") is None:
        # The domain's rule on what the family and outcome need (a fulfilled request writes).
        reason = infeasible(
            {
                "task_family": [family],
                "expected_outcome": list(outcome),
                "num_write": [bucket(features.num_write)],
            }
        )
        if reason is not None:
            problems.append(f"{reason} (the gold actions make {features.num_write} write(s))")
    return problems


def _count_problem(miss: CountMiss) -> str:
    if miss.factor == "difficulty_profile":
        lo, hi = DIFFICULTY_CALLS[miss.wanted]
        return (
            f"difficulty_profile is {miss.wanted} ({_calls(lo, hi)}), but the gold actions "
            f"make {miss.count} tool calls"
        )
    kind = miss.factor.removeprefix("num_")
    return f"{miss.factor} is {miss.wanted}, but the gold actions make {miss.count} {kind} call(s)"


def _counted(factor: str) -> str:
    """What a :data:`PROBED` factor counts, as a sentence continues it (``calls of ...``)."""
    means = str(RealizedFeatures.model_fields[factor].description or "").rstrip(".")
    return means[:1].lower() + means[1:]


def _written(features: RealizedFeatures) -> list[str]:
    # decisive_signature lists "write:<tool>" for each agent write, in order.
    return [s.split(":", 1)[1] for s in features.decisive_signature if s.startswith("write:")]


def _calls(lo: int, hi: int) -> str:
    return f"{lo}+ tool calls" if hi >= OPEN_END else f"{lo}-{hi} tool calls"


def definitions(
    domain: Tau2Domain, blueprint: Blueprint, factors: Mapping[str, Factor]
) -> list[str]:
    """One line per factor ``blueprint`` requests: what its value means, how it is checked.

    ``factors`` are the known factors by name (the seed space's and the realizable ones);
    their guidance defines a factor the contract does not check.
    """
    knowledge = domain.knowledge
    known = {**REALIZABLE, **factors}
    by_family: dict[str, list[str]] = {}
    for tool, family in sorted(knowledge.family_by_write.items()):
        by_family.setdefault(family, []).append(tool)
    ranges = ", ".join(f"{name} {_calls(lo, hi)}" for name, (lo, hi) in DIFFICULTY_CALLS.items())
    checked = {
        "task_family": "the family the gold writes imply: "
        + "; ".join(f"{f} writes with {', '.join(t)}" for f, t in sorted(by_family.items()))
        + f". Mixed writes count as the first of {', '.join(knowledge.family_priority)}; no "
        f"write counts as {knowledge.default_family}, except in a refusal: a refused request "
        "writes nothing and keeps the family of what the customer asked for",
        "expected_outcome": "fulfill: the agent does what the customer asks, so the gold "
        "actions make at least one write unless the family only looks things up; refuse: the "
        "policy forbids it, so the gold actions only look things up",
        "num_read": "how many gold_actions call a [read] tool, as a bucket of "
        + ", ".join(BUCKETS),
        "num_write": "how many gold_actions call a [write] tool, as a bucket of "
        + ", ".join(BUCKETS),
        "difficulty_profile": f"how many gold_actions there are in all: {ranges}",
        "computation": "the strongest of these the gold_actions show (conditional > "
        "constrained_opt > aggregate > none): "
        + "; ".join(f"{v}: {_COMPUTATION_MEANS[v]}" for v in reversed(COMPUTATIONS)),
    }
    shown = controls(blueprint)
    lines = []
    for name in blueprint.selections:
        if name in checked:
            lines.append(f"{name}: {checked[name]}.")
        elif name == CHALLENGE_FACTOR:
            lines.append(_challenges(blueprint, known))
        elif name in known:
            # A shape factor's values each ask for something of their own (the domain's
            # ontology says what): the selected ones are defined beside the factor.
            meanings = value_meanings(name, blueprint.selections[name])
            lines.append(
                f"{name}: {known[name].guidance.rstrip('.')}."
                + "".join(f" {value}: {means.rstrip('.')}." for value, means in meanings.items())
            )
        elif name in PROBED:
            # A factor the Reflector added from a probe is computed from the gold's calls:
            # the Generator is told what is counted, not left to guess from the name.
            lines.append(
                f"{name}: counted on the gold_actions, as a bucket of {', '.join(BUCKETS)}: "
                f"{_counted(name)}."
            )
        else:
            lines.append(f"{name}: a factor added during the campaign; honour its value as named.")
    for name, value in shown.items():
        if name in blueprint.selections:
            continue
        if name == "expected_tool_calls" and isinstance(value, int):
            lines.append(
                f"expected_tool_calls = {value}: gold_actions make exactly {value} tool calls in "
                f"all (look-ups, writes and any other call), a count inside the range of the "
                f"difficulty_profile ({difficulty_ranges()} tool calls)."
            )
        elif name == "requires_state_change" and isinstance(value, bool):
            lines.append(
                "requires_state_change = true: at least one gold action is a [write] call."
                if value
                else "requires_state_change = false: no gold action is a [write] call; the "
                "task only looks things up."
            )
        elif name in checked:
            lines.append(f"{name} = {value}: {checked[name]}.")
        else:
            lines.append(f"{name} = {value}: a difficulty control; honour its value as named.")
    return lines


def _challenges(blueprint: Blueprint, known: Mapping[str, Factor]) -> str:
    """The interaction_challenge line: what the simulated user does for each selected value."""
    guidance = known[CHALLENGE_FACTOR].guidance.rstrip(".") if CHALLENGE_FACTOR in known else ""
    selected = blueprint.selections.get(CHALLENGE_FACTOR, [])
    meanings = value_meanings(CHALLENGE_FACTOR, selected)
    if not selected:
        return f"{CHALLENGE_FACTOR}: {guidance}; none is selected, so the customer adds none."
    told = "; ".join(f'{v}: "{meanings[v]}"' for v in selected if v in meanings)
    return (
        f"{CHALLENGE_FACTOR}: {guidance}. The simulated user is told, for each selected value, "
        f"to do this, and the conversation is checked for it: {told}."
    )


def requested(blueprint: Blueprint) -> dict[str, list[str]]:
    """Every factor value ``blueprint`` requests, a difficulty control replacing its selection."""
    controls = {name: str(value) for name, value in blueprint.difficulty_controls.items()}
    merged = with_controls(blueprint.selections, controls)
    return {name: list(values) for name, values in merged.items()}


class Contract:
    """One domain's contract, as a model role that writes tasks is told it and held to it.

    The LLM Generator and the single agent share it: :meth:`definitions` fills their prompts,
    :meth:`problems` checks their replies.

    Args:
        domain: The domain the tasks are written in.
    """

    def __init__(self, domain: Tau2Domain) -> None:
        self.domain = domain
        #: The domain's feasibility rule (``DomainPlugin.infeasible``).
        self.infeasible: Feasibility = domain_plugin(domain.name).infeasible
        #: The known factors by name, whose guidance defines a factor the contract does not check.
        self.factors = {f.name: f for f in seed_space(domain.name, "generator").factors}
        self._policy = policy_check(domain.name)

    def definitions(self, blueprint: Blueprint) -> list[str]:
        """One line per factor ``blueprint`` requests (:func:`definitions`)."""
        return definitions(self.domain, blueprint, self.factors)

    def problems(self, task: Task, blueprint: Blueprint) -> list[str]:
        """Every way ``task`` is not executable or does not honour ``blueprint``; empty if none.

        Gold actions that are not agent tools or miss arguments, every way the realized
        values miss the request (:func:`unmet`), and the first gold action the database or
        the policy refuses. A task whose initial state does not build is reported with the
        malformed actions only (nothing can be replayed on it).
        """
        actions = list(task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
        problems: list[str] = []
        for action in actions:
            wrong = call_problem(self.domain, action.name, action.arguments)
            if wrong is not None:
                problems.append(f"gold action {wrong}")
        malformed = bool(problems)
        try:
            state = self.domain.initial_state(task, sync=False)
        except Exception as exc:
            return [*problems, f"the task's initial state fails: {first_line(exc)}"]
        try:
            problems += unmet(self.domain, blueprint, task, self.infeasible)
        except Exception as exc:
            problems.append(f"the gold actions cannot be replayed: {first_line(exc)}")
        # A call of an unknown tool or with wrong arguments fails the replay too: said once.
        broken = None if malformed else self._replay(state, actions)
        if broken is not None:
            problems.append(broken)
        return problems

    def _replay(self, state: Any, actions: list[Any]) -> str | None:
        """The first gold action the policy or the database refuses, in words; None if none."""
        for index, action in enumerate(actions):
            broken = write_violation(
                self._policy, self.domain, state, action.name, action.arguments
            )
            if broken:
                return f"gold action #{index} {action.name} breaks the policy: {broken}"
            try:
                state.execute_gold(action)
            except Exception as exc:
                return (
                    f"gold action #{index} {action.name} fails on the database: {first_line(exc)}"
                )
        return None


def call_problem(domain: Tau2Domain, name: str, arguments: Mapping[str, Any]) -> str | None:
    """What is wrong with a call of agent tool ``name`` with ``arguments``; None if nothing.

    The tool must be one of the agent's, called with its required arguments and no others.
    """
    spec = domain.tool_spec(name, "assistant")
    if spec is None:
        known = sorted(s.name for s in domain.tool_specs("assistant"))
        return f"{name!r} is not an agent tool ({known})"
    missing = sorted(spec.required - set(arguments))
    unknown = sorted(set(arguments) - spec.properties)
    if missing or unknown:
        return f"{name}: missing arguments {missing}, unknown {unknown}"
    return None


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its class when it has none), at most 300 characters."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]
