"""Duplicates among synthesized tasks: exact modulo generated ids, and near-identical wording."""

from __future__ import annotations

import json
import re

from synthesis_checks import hand_blueprint
from tau2.data_model.tasks import Action, Task

from evosyn.environments.dedup import SeenTasks, exact_key
from evosyn.environments.retail.generator import RetailGenerator
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.records import Blueprint


def _blueprint(
    family: str,
    outcome: str,
    index: int = 0,
    controls: dict[str, str] | None = None,
    difficulty: str = "medium",
) -> Blueprint:
    return hand_blueprint(
        family,
        outcome,
        focus=("eligibility_check",),
        patterns=("multi_hop_retrieval",),
        index=index,
        controls=controls,
        difficulty=difficulty,
    )


def _suspended_for_a_bill() -> Task:
    """A telecom task whose initial state makes up a new overdue bill."""
    generator = TelecomGenerator()
    bp = _blueprint("line_management", "fulfill", controls={"num_write": "3-4"}, difficulty="hard")
    for seed in range(20):
        task = generator.generate(bp, seed).task
        text = task.model_dump_json()
        if re.search(r"\bB\d{7}\b", text):
            return task
    raise AssertionError("no telecom task with a generated bill in 20 seeds")


def _renamed(task: Task, **changes: object) -> Task:
    return task.model_copy(update={"id": "other-task", **changes}, deep=True)


def test_a_task_differing_only_in_its_generated_bill_id_is_a_repeat() -> None:
    task = _suspended_for_a_bill()
    [bill] = set(re.findall(r"\bB\d{7}\b", task.model_dump_json()))
    copy = Task.model_validate(json.loads(task.model_dump_json().replace(bill, "B1111111")))
    copy = _renamed(
        copy,
        user_scenario=copy.user_scenario.model_copy(
            update={"instructions": "Worded from scratch: my line is off, please help."}
        ),
    )
    assert exact_key("telecom", copy) == exact_key("telecom", task)
    seen = SeenTasks("telecom")
    seen.add(task)
    reason = seen.reason(copy)
    assert reason is not None and task.id in reason and "same initial state" in reason
    assert len(seen) == 1


def test_an_extra_lookup_does_not_make_a_new_task_but_another_entity_does() -> None:
    task = _suspended_for_a_bill()
    criteria = task.evaluation_criteria
    assert criteria is not None
    look = Action(action_id="x", name="get_customer_by_id", arguments={"customer_id": "C1001"})
    padded = _renamed(
        task, evaluation_criteria=criteria.model_copy(update={"actions": [look, *criteria.actions]})
    )
    assert exact_key("telecom", padded) == exact_key("telecom", task)
    moved = Task.model_validate(
        json.loads(task.model_dump_json().replace('"resume_line"', '"suspend_line"'))
    )
    assert exact_key("telecom", moved) != exact_key("telecom", task)


def test_answer_only_tasks_are_told_apart_by_what_they_look_up() -> None:
    generator = RetailGenerator()
    keys: dict[str, set[str]] = {}
    for seed in range(24):
        task = generator.generate(_blueprint("profile_or_inquiry", "fulfill", seed), seed).task
        criteria = task.evaluation_criteria
        assert criteria is not None
        if not criteria.communicate_info:
            continue
        key = exact_key("retail", task)
        assert key is not None
        keys.setdefault(json.dumps(criteria.communicate_info), set()).add(key)
    # Several inquiries share an answer ("delivered") yet are about different orders.
    assert max(len(k) for k in keys.values()) > 1


def test_a_read_only_task_with_nothing_to_say_has_no_key_and_is_compared_by_wording() -> None:
    task = _suspended_for_a_bill()
    silent = _renamed(
        task,
        evaluation_criteria=task.evaluation_criteria.model_copy(  # type: ignore[union-attr]
            update={"actions": [], "communicate_info": [], "env_assertions": []}
        ),
        initial_state=None,
    )
    assert exact_key("telecom", silent) is None
    seen = SeenTasks("telecom")
    seen.add(silent)
    reworded = _renamed(silent, id="third-task")
    reason = seen.reason(reworded)
    assert reason is not None and reason.startswith("instructions near-identical to task")
    fresh = _renamed(
        silent,
        id="fourth-task",
        user_scenario=silent.user_scenario.model_copy(
            update={"instructions": "Something else entirely, in words of its own."}
        ),
    )
    assert seen.reason(fresh) is None


def _handoff(base: Task, reads: list[Action], transfer: Action, task_id: str) -> Task:
    criteria = base.evaluation_criteria
    assert criteria is not None
    return _renamed(
        base,
        id=task_id,
        evaluation_criteria=criteria.model_copy(
            update={"actions": [*reads, transfer], "communicate_info": [], "env_assertions": []}
        ),
        initial_state=None,
    )


def test_transfer_only_tasks_are_told_apart_by_what_they_look_up() -> None:
    from evosyn.environments.registry import get_domain

    # Official retail tasks that only hand the user off, each after its own look-ups.
    official = get_domain("retail").tasks()
    handoffs = [
        t
        for t in official
        if t.evaluation_criteria is not None
        and [a.name for a in t.evaluation_criteria.actions or []][-1:]
        == ["transfer_to_human_agents"]
    ]
    base = handoffs[0]
    transfer = base.evaluation_criteria.actions[-1]  # type: ignore[union-attr,index]
    user = Action(
        action_id="u",
        name="find_user_id_by_email",
        arguments={"email": "noah.brown7922@example.com"},
    )
    other = Action(
        action_id="v",
        name="find_user_id_by_email",
        arguments={"email": "yusuf.rossi9057@example.com"},
    )
    first = _handoff(base, [user], transfer, "first")
    second = _handoff(base, [other], transfer, "second")
    assert exact_key("retail", first) is not None
    assert exact_key("retail", first) != exact_key("retail", second)
    seen = SeenTasks("retail")
    seen.add(first)
    # Reworded, so only the exact key could call the second a repeat.
    reworded = second.model_copy(
        update={
            "user_scenario": second.user_scenario.model_copy(
                update={"instructions": "A different request about another customer entirely."}
            )
        }
    )
    assert seen.reason(reworded) is None
    # The same look-ups, in another order, are the same hand-off.
    again = _handoff(base, [other, user], transfer, "third")
    assert exact_key("retail", again) == exact_key(
        "retail", _handoff(base, [user, other], transfer, "x")
    )
    # A hand-off with no look-up says nothing of what it is about: the wording decides.
    assert exact_key("retail", _handoff(base, [], transfer, "bare")) is None
