"""The library domain, written here in τ²-bench's shape: database, tools, policy and tasks.

Its database loads and validates, every agent tool runs, every official task's gold scores
reward 1 under τ²-bench's own evaluator, the refusals the policy demands are in the tasks (the
refused write breaks the policy model and costs the reward), and its choice parameters hold a
patron to naming what they choose.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from tau2.data_model.message import AssistantMessage, SystemMessage, ToolCall, UserMessage
from tau2.data_model.tasks import Action, Task

from evosyn.agents.verifier import ReplayVerifier
from evosyn.agents.verifier.reference import stock_reward
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.information_flow import flow_breaks
from evosyn.environments.library import PLUGIN
from evosyn.environments.library.data import load_db
from evosyn.environments.library.data_model import LibraryDB
from evosyn.environments.library.environment import get_environment, get_tasks
from evosyn.environments.trajectories import gold_trajectory, trajectory_from_actions

DOMAIN = get_domain("library")
TASKS = {t.id: t for t in DOMAIN.tasks()}

#: One valid call of every agent tool on the unchanged database.
CALLS = {
    "find_patron_by_email": {"email": "Ana.Lopez@example.com"},
    "get_patron_details": {"patron_id": "P10001"},
    "get_loan_details": {"loan_id": "L5001"},
    "get_hold_details": {"hold_id": "H7001"},
    "get_fine_details": {"fine_id": "F9001"},
    "search_catalog": {"query": "orchard"},
    "get_book_details": {"book_id": "B001"},
    "list_branches": {},
    "renew_loan": {"loan_id": "L5001"},
    "place_hold": {"patron_id": "P10009", "book_id": "B010", "pickup_branch": "BR2"},
    "cancel_hold": {"hold_id": "H7006"},
    "change_pickup_branch": {"hold_id": "H7008", "pickup_branch": "BR4"},
    "pay_fine": {"fine_id": "F9001", "payment_method_id": "card_4421"},
    "waive_fine": {"fine_id": "F9003"},
    "report_lost_item": {"loan_id": "L5017"},
    "calculate": {"expression": "6.50 + 4.75"},
    "transfer_to_human_agents": {"summary": "Patron wants a human."},
}

#: The refusal tasks, each with the write the patron asks for that the policy forbids at the
#: start of the call, and the rule that forbids it.
REFUSED = {
    "renew_refused_hold_queue": ("renew_loan", {"loan_id": "L5003"}, "hold_queue_priority"),
    "renew_one_of_two": ("renew_loan", {"loan_id": "L5005"}, "renewal_limit"),
    "renew_refused_overdue": ("renew_loan", {"loan_id": "L5007"}, "overdue_no_renewal"),
    "pay_fines_then_renew": ("renew_loan", {"loan_id": "L5009"}, "blocked_account"),
    "waive_refused_lost_item": ("waive_fine", {"fine_id": "F9004"}, "waiver_eligibility"),
    "waive_refused_then_pay": ("waive_fine", {"fine_id": "F9005"}, "waiver_eligibility"),
    "hold_refused_expired_card": (
        "place_hold",
        {"patron_id": "P10010", "book_id": "B007", "pickup_branch": "BR1"},
        "blocked_account",
    ),
    "cancel_hold_to_place_new": (
        "place_hold",
        {"patron_id": "P10011", "book_id": "B010", "pickup_branch": "BR3"},
        "hold_limit",
    ),
    "damage_dispute_transfer": ("waive_fine", {"fine_id": "F9007"}, "waiver_eligibility"),
}


def test_the_database_loads_validates_and_holds_enough_entities() -> None:
    db = load_db()
    sizes = {name: len(getattr(db, name)) for name in LibraryDB.model_fields}
    assert sum(sizes.values()) >= 50 and min(sizes.values()) >= 4, sizes
    assert LibraryDB.model_validate(db.model_dump()).get_hash() == db.get_hash()
    assert load_db().get_hash() == db.get_hash()  # a fresh, equal copy each time
    with pytest.raises(ValidationError):
        LibraryDB.model_validate({**db.model_dump(), "members": {}})


def test_the_records_refer_to_each_other_consistently() -> None:
    db = load_db()
    for loan in db.loans.values():
        assert db.copies[loan.copy_id].book_id == loan.book_id
        assert loan.loan_id in db.patrons[loan.patron_id].loans
        if loan.status == "active":
            assert db.copies[loan.copy_id].status == "on_loan"
    for hold in db.holds.values():
        assert hold.hold_id in db.patrons[hold.patron_id].holds
        assert hold.book_id in db.titles and hold.pickup_branch in db.branches
    for fine in db.fines.values():
        assert fine.fine_id in db.patrons[fine.patron_id].fines
        assert db.loans[fine.loan_id].patron_id == fine.patron_id
    for title in db.titles.values():
        assert all(db.copies[c].book_id == title.book_id for c in title.copies)
    ready = [h for h in db.holds.values() if h.status == "ready"]
    shelved = [c for c in db.copies.values() if c.status == "on_hold_shelf"]
    assert len(ready) == len(shelved) > 0


def test_the_toolkit_has_the_shape_of_a_tau2_domain() -> None:
    specs = DOMAIN.tool_specs("assistant")
    writes = {s.name for s in specs if s.symbol == FunctionalSymbol.WRITE}
    assert len(specs) >= 10 and len(writes) >= 4
    assert set(CALLS) == {s.name for s in specs}
    assert DOMAIN.symbol("transfer_to_human_agents") == FunctionalSymbol.TRANSFER
    assert DOMAIN.symbol("calculate") == FunctionalSymbol.COMPUTE
    for spec in specs:  # the docstrings are the schemas the model sees
        function = spec.openai_schema["function"]
        assert function["description"].strip(), spec.name
        assert set(function["parameters"].get("properties", {})) >= spec.required


@pytest.mark.parametrize("tool", ["get_loan_details", "get_hold_details"])
def test_a_loan_or_hold_is_described_as_what_it_returns(tool: str) -> None:
    # It names its title by book id only; the description must not promise the title itself.
    spec = DOMAIN.tool_spec(tool, "assistant")
    assert spec is not None
    description = spec.openai_schema["function"]["description"]
    state = DOMAIN.initial_state()
    record = json.loads(state.execute(ToolCall(id="c", name=tool, arguments=CALLS[tool])).content)
    assert "book_id" in record and "title" not in record
    assert "book id" in description and "get_book_details" in description
    book = state.execute(
        ToolCall(id="b", name="get_book_details", arguments={"book_id": record["book_id"]})
    )
    assert json.loads(book.content)["title"]
    assert "the title," not in description and "title lent" not in description


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_every_tool_runs_and_only_writes_change_the_database(tool: str) -> None:
    state, untouched = DOMAIN.initial_state(), DOMAIN.initial_state()
    message = state.execute(ToolCall(id="c", name=tool, arguments=CALLS[tool]))
    assert not message.error, message.content
    assert message.content
    changed = not state.same_db(untouched)
    assert changed == (DOMAIN.symbol(tool) == FunctionalSymbol.WRITE), tool


def test_tools_refuse_what_the_database_forbids() -> None:
    state = DOMAIN.initial_state()
    for name, arguments in (
        ("get_patron_details", {"patron_id": "P99999"}),
        ("renew_loan", {"loan_id": "L5004"}),  # returned
        ("change_pickup_branch", {"hold_id": "H7009", "pickup_branch": "BR4"}),  # ready
        ("pay_fine", {"fine_id": "F9001", "payment_method_id": "card_2231"}),  # not hers
        ("waive_fine", {"fine_id": "F9006"}),  # waived already
        ("find_patron_by_email", {"email": "nobody@example.com"}),
    ):
        message = state.execute(ToolCall(id="c", name=name, arguments=arguments))
        assert message.error, (name, message.content)
    assert state.same_db(DOMAIN.initial_state())


def test_the_writes_do_what_the_policy_describes() -> None:
    env = get_environment()
    renewed = json.loads(
        env.get_response(
            ToolCall(id="a", name="renew_loan", arguments={"loan_id": "L5001"})
        ).content
    )
    assert (renewed["due_date"], renewed["renewals"]) == ("2025-04-04", 1)
    fine = json.loads(
        env.get_response(
            ToolCall(id="b", name="report_lost_item", arguments={"loan_id": "L5017"})
        ).content
    )
    # Weathering's replacement cost, $26.50, plus the $5.00 processing fee.
    assert (fine["fine_id"], fine["amount"], fine["kind"]) == ("F9008", 31.5, "lost_item")
    db = env.tools.db
    assert db.loans["L5017"].status == "lost" and db.copies["B022-1"].status == "lost"
    env.get_response(ToolCall(id="c", name="cancel_hold", arguments={"hold_id": "H7009"}))
    assert db.copies["B023-1"].status == "available"  # back from the hold shelf


def test_the_policy_names_its_date_and_its_refusals() -> None:
    policy = DOMAIN.policy()
    assert "2025-03-10" in policy
    for rule in ("$10.00", "fewer than 2 times", "fewer than 5 active", "$5.00 or less"):
        assert rule in policy, rule


def test_splits_are_disjoint_and_cover_every_task() -> None:
    splits = DOMAIN.splits()
    assert len(TASKS) >= 10
    assert set(splits["train"]).isdisjoint(splits["test"])
    assert set(splits["train"]) | set(splits["test"]) == set(splits["base"]) == set(TASKS)
    assert [t.id for t in get_tasks("test")] == [i for i in TASKS if i in splits["test"]]
    with pytest.raises(ValueError, match="unknown split"):
        get_tasks("nope")


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_every_official_gold_scores_reward_1_under_tau2s_evaluator(task_id: str) -> None:
    task = TASKS[task_id]
    messages = gold_trajectory(DOMAIN, task)
    assert stock_reward("library", task, messages) == 1.0
    report = ReplayVerifier("library", policy="all").report(task, messages)
    assert report.reward == 1.0 and not report.policy_violations, report.reasons


def _with(task: Task, tool: str, arguments: dict[str, object]) -> list[object]:
    """``task``'s gold trajectory with one more agent write made first."""
    extra = Action(action_id="extra", name=tool, arguments=arguments)
    return trajectory_from_actions(DOMAIN, task, [extra, *task.evaluation_criteria.actions])


@pytest.mark.parametrize("task_id", sorted(REFUSED))
def test_refusals_are_in_the_tasks_and_the_refused_write_fails(task_id: str) -> None:
    task = TASKS[task_id]
    tool, arguments, rule = REFUSED[task_id]
    writes = [
        (a.name, a.arguments)
        for a in task.evaluation_criteria.actions
        if DOMAIN.symbol(a.name) == FunctionalSymbol.WRITE
    ]
    # Refused as asked: the gold makes it only after a write that lifts the rule (fines paid,
    # a hold cancelled), never first.
    assert (tool, arguments) not in writes[:1]
    state = DOMAIN.initial_state(task)
    reason = PLUGIN.violation(state.db, tool, arguments) if PLUGIN.violation else None
    assert reason is not None and reason.startswith(f"{rule}:"), reason
    # Making the refused write anyway costs the reward, and the verifier names the rule.
    messages = _with(task, tool, arguments)
    assert stock_reward("library", task, messages) == 0.0
    report = ReplayVerifier("library", policy="all").report(task, messages)
    assert any(rule in v for v in report.policy_violations), report.policy_violations


def test_every_gold_write_keeps_the_policy() -> None:
    for task in TASKS.values():
        state = DOMAIN.initial_state(task, sync=False)
        for action in task.evaluation_criteria.actions or []:
            if DOMAIN.symbol(action.name) == FunctionalSymbol.WRITE:
                assert PLUGIN.violation is not None
                assert PLUGIN.violation(state.db, action.name, action.arguments) is None
            state.execute_gold(action)


def _hold_dialogue(branch_words: str) -> list[object]:
    calls = [
        ("get_patron_details", {"patron_id": "P10009"}),
        ("search_catalog", {"query": "Lanterns Over Kestrel Bay"}),
        ("list_branches", {}),
        ("place_hold", {"patron_id": "P10009", "book_id": "B010", "pickup_branch": "BR2"}),
    ]
    state = DOMAIN.initial_state()
    messages: list[object] = [
        SystemMessage(role="system", content=DOMAIN.policy()),
        UserMessage(
            role="user",
            content=f"Hi, card P10009. I'd like a hold on Lanterns Over Kestrel Bay{branch_words}.",
        ),
    ]
    for number, (name, arguments) in enumerate(calls):
        call = ToolCall(id=f"c{number}", name=name, arguments=arguments)
        messages += [AssistantMessage(role="assistant", tool_calls=[call]), state.execute(call)]
    return messages


def test_the_patron_names_the_book_and_the_branch() -> None:
    assert flow_breaks(DOMAIN, PLUGIN.flow, _hold_dialogue(", to pick up at Riverside")) == []
    breaks = flow_breaks(DOMAIN, PLUGIN.flow, _hold_dialogue(""))
    assert len(breaks) == 1 and "pickup_branch" in breaks[0], breaks
