"""Telecom task shapes beyond one fault and one line, and a Generator that does not repeat itself.

Each composition is generated for the blueprint that asks for its family, verifies with
τ²-bench's own reward 1, and realizes its family from its writes: τ²-bench's most common
one (abroad, roaming off on the line and the data limit reached: both fixed), two suspended
lines lifted in one call, a suspension lifted abroad with roaming enabled, and account
requests about another line of the caller's account. The database has four customers, so
the space of tasks comes from the faults and from the account's story, which τ²-bench's own
initialization functions set up (a bill paid before the call, a line suspended for a bill).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Sequence

import pytest
from synthesis_checks import exploration, hand_blueprint, verified_rollout
from tau2.data_model.message import AssistantMessage, UserMessage
from tau2.data_model.tasks import EnvFunctionCall, Task

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import generate
from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.dedup import SeenTasks
from evosyn.environments.information_flow import repeat_breaks
from evosyn.environments.telecom import faults, generator
from evosyn.environments.telecom.flow import RULES
from evosyn.environments.telecom.generator import TelecomGenerator, infeasible
from evosyn.environments.telecom.teacher import TelecomTeacher
from evosyn.records import Blueprint, SynthTask
from evosyn.space import seed_space

blueprint = functools.partial(hand_blueprint, focus=("eligibility_check",), patterns=())


@pytest.fixture(scope="module")
def made() -> TelecomGenerator:
    return TelecomGenerator()


@pytest.fixture(scope="module")
def teacher() -> TelecomTeacher:
    return TelecomTeacher()


@pytest.fixture(scope="module")
def verifier() -> ReplayVerifier:
    return ReplayVerifier("telecom")


def _calls(task: Task) -> list[tuple[str, str]]:
    actions = task.evaluation_criteria.actions if task.evaluation_criteria else None
    return [(str(a.requestor), a.name) for a in actions or []]


def _init(task: Task) -> list[str]:
    calls = task.initial_state.initialization_actions if task.initial_state else None
    return [c.func_name for c in calls or []]


def _phone(task: Task) -> str:
    first = _initial(task)[0]
    assert first.func_name == "set_user_info"
    return str(first.arguments["phone_number"])


def _initial(task: Task) -> list[EnvFunctionCall]:
    return list(task.initial_state.initialization_actions or []) if task.initial_state else []


def _writes(task: Task) -> list[str]:
    """The agent's writes, in order."""
    domain = get_domain("telecom")
    return [
        name
        for who, name in _calls(task)
        if who == "assistant" and domain.symbol(name) == FunctionalSymbol.WRITE
    ]


def _first(
    gen: TelecomGenerator,
    family: str,
    wanted: Callable[[Task], bool],
    difficulty: str = "hard",
    tries: int = 60,
) -> SynthTask:
    """The first task ``gen`` makes for ``family``/fulfill (blueprints 0, 1, ...) that is wanted."""
    for index in range(tries):
        task = gen.generate(blueprint(family, "fulfill", difficulty=difficulty, index=index), 3)
        if wanted(task.task):
            return task
    raise AssertionError(f"no {family} task of the wanted shape in {tries} blueprints")


def _verifies(task: SynthTask, teacher: TelecomTeacher, verifier: ReplayVerifier) -> dict[str, str]:
    verdict, messages = verified_rollout(task, teacher, verifier)
    loaded = Task.model_validate_json(task.task.model_dump_json())
    assert stock_reward("telecom", loaded, messages) == 1.0
    return verdict.realized


def test_abroad_over_the_limit_enables_roaming_then_refuels(
    made: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    task = _first(
        made, "plan_change", lambda t: {"enable_roaming", "refuel_data"} <= set(_writes(t))
    )
    writes = _writes(task.task)
    assert writes.index("enable_roaming") < writes.index("refuel_data")
    kinds = faults.fault_kinds(task.task)
    assert "data_usage_exceeded" in kinds
    assert {"user_abroad_roaming_disabled_on", "user_abroad_roaming_disabled_off"} & set(kinds)
    realized = _verifies(task, teacher, verifier)
    assert realized["task_family"] == "plan_change"


def test_two_suspended_lines_are_lifted_in_one_call(
    made: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    task = _first(
        made,
        "line_management",
        lambda t: _writes(t).count("resume_line") == 2,
        difficulty="medium",
    )
    lines = {
        a.arguments["line_id"]
        for a in task.task.evaluation_criteria.actions
        if a.name == "resume_line"
    }
    assert len(lines) == 2
    assert _verifies(task, teacher, verifier)["task_family"] == "line_management"


def test_a_suspension_is_lifted_abroad_with_roaming_enabled(
    made: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    task = _first(
        made, "line_management", lambda t: {"resume_line", "enable_roaming"} <= set(_writes(t))
    )
    assert "set_user_location" in _init(task.task)
    assert ("user", "reboot_device") in _calls(task.task)
    assert _verifies(task, teacher, verifier)["task_family"] == "line_management"


@pytest.mark.parametrize(
    ("family", "write"),
    [
        ("line_management", "resume_line"),
        ("service_troubleshooting", "enable_roaming"),
    ],
)
def test_a_caller_asks_about_another_line_of_their_account(
    family: str,
    write: str,
    made: TelecomGenerator,
    teacher: TelecomTeacher,
    verifier: ReplayVerifier,
) -> None:
    def about_another(task: Task) -> bool:
        acted = [
            a.arguments["line_id"] for a in task.evaluation_criteria.actions if a.name == write
        ]
        lines = {x.line_id: x.phone_number for x in made.db.lines}
        return bool(acted) and lines[acted[0]] != _phone(task)

    task = _first(made, family, about_another, difficulty="easy")
    lines = {x.line_id: x.phone_number for x in made.db.lines}
    acted = next(a for a in task.task.evaluation_criteria.actions if a.name == write)
    # The caller knows the number of the line they call about, and says it.
    assert lines[acted.arguments["line_id"]] in task.task.user_scenario.instructions.known_info
    # No phone fault: the caller's phone plays no part.
    assert not [who for who, _ in _calls(task.task) if who == "user"]
    _verifies(task, teacher, verifier)


def test_a_suspension_is_lifted_once_the_bill_was_paid_before_the_call(
    made: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    task = _first(
        made,
        "line_management",
        lambda t: {"make_payment", "suspend_line"} <= set(_init(t)),
        difficulty="easy",
    )
    assert _writes(task.task) == ["resume_line"]
    _verifies(task, teacher, verifier)


@pytest.mark.parametrize("ended", [False, True])
def test_a_bill_that_suspended_a_line_is_paid(
    ended: bool, made: TelecomGenerator, teacher: TelecomTeacher, verifier: ReplayVerifier
) -> None:
    def suspended_for_it(task: Task) -> bool:
        return any(
            c.func_name == "suspend_line_for_overdue_bill"
            and c.arguments["contract_ended"] is ended
            for c in _initial(task)
        )

    task = _first(made, "billing_issue", suspended_for_it, difficulty="easy")
    assert _writes(task.task) == ["send_payment_request"]
    known = task.task.user_scenario.instructions.known_info
    assert "suspended" in known and (("contract" in known) is ended)
    assert _verifies(task, teacher, verifier)["task_family"] == "billing_issue"


@pytest.mark.parametrize(
    ("family", "patterns", "count", "at_least"),
    [
        # The shortest tasks (three calls, no phone fault) are where a small database runs
        # out first: each has tens of distinct accounts' stories (the caller's line alone
        # gave 5, 3 and 6).
        ("billing_issue", (), 50, 50),
        ("line_management", (), 25, 23),
        # An agent write asked for: roaming enabled, on the caller's line or another.
        ("service_troubleshooting", ("lookup_then_update",), 25, 23),
    ],
)
def test_short_tasks_vary_with_the_account(
    family: str, patterns: tuple[str, ...], count: int, at_least: int
) -> None:
    blueprints = [
        hand_blueprint(
            family,
            "fulfill",
            focus=("eligibility_check",),
            patterns=patterns,
            difficulty="easy",
            index=i,
        )
        for i in range(count)
    ]
    batch = generate(blueprints, TelecomGenerator(), seed=3)
    assert len(batch.tasks) >= at_least, collections.Counter(r.stage for r in batch.rejections)


def _repeats(blueprints: Sequence[Blueprint], seed: int) -> float:
    batch = generate(blueprints, TelecomGenerator(), seed, SeenTasks("telecom"))
    repeated = [r for r in batch.rejections if r.stage == "duplicate"]
    return len(repeated) / len(blueprints)


def test_the_generator_rarely_repeats_a_kept_task() -> None:
    space = seed_space("telecom", "dupes")
    blueprints = ProgrammaticPlanner(infeasible).plan(space, exploration(space, 400), 31337)
    # 28% of 1,000 blueprints repeated a kept task when the caller's line was the only
    # variety of an account request (tasks/benchmarks/task_shapes.py --telecom-repeats).
    assert _repeats(blueprints, 31337) < 0.05
    assert generator.CANDIDATES > 8  # a fresh variant is looked for past the kit's default


def test_asking_for_a_bill_number_is_no_repeated_phone_number_question() -> None:
    said = [
        AssistantMessage(role="assistant", content="Which line is this about?"),
        UserMessage(role="user", content="That's my number 555-123-2008."),
    ]
    bill = AssistantMessage(role="assistant", content="Could you give me the bill number?")
    phone = AssistantMessage(role="assistant", content="What is your phone number?")
    assert repeat_breaks(RULES, [*said, bill]) == []
    assert repeat_breaks(RULES, [*said, phone])  # the phone number again is a repeat
