"""Programmatic task generation on τ²-bench mock: to-do tasks created, completed or kept.

A blueprint becomes one of three shapes, each on the unmodified mock database (one user,
``user_1``, with ``task_1``):

* ``task_creation`` / fulfil: the agent looks the user up and creates the new tasks the user
  names (titles never used by an official task);
* ``task_status_update`` / fulfil: the task's initial state adds tasks to the list; the agent
  looks the user up and marks the ones the user names completed;
* ``task_status_update`` / refuse: the user wants a task deleted; no tool deletes, so policy
  has the agent transfer to a human.

The difficulty and the write count set how many tasks a request names; the read count is
the one look-up (``get_users``) or none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tau2.data_model.tasks import EnvFunctionCall, Task
from tau2.domains.mock.data_model import MockDB

from evosyn.buckets import DIFFICULTY_CALLS, OPEN_END, bucket
from evosyn.environments.feasibility import Asked, Checks
from evosyn.environments.kit.grounding import (
    Draft,
    GroundedGenerator,
    Request,
    Step,
)
from evosyn.records import Answer, Blueprint

FAMILIES = ("task_creation", "task_status_update")
USER = "user_1"
#: Tasks the mock database holds before a task's initial state adds any.
STOCK_TASKS = 1
#: Titles of the tasks users create or finish ("Important Meeting" is an official task's).
TITLES = (
    "Quarterly budget review",
    "Book dentist appointment",
    "Renew passport",
    "Draft project proposal",
    "Call the landlord",
    "Plan team offsite",
    "Update resume",
    "Pay electricity bill",
    "Prepare slides for Monday",
    "Order birthday cake",
    "Back up laptop",
    "Review pull requests",
    "Schedule car service",
    "Write release notes",
    "Clean up inbox",
    "Buy train tickets",
    "Submit expense report",
    "Water the plants",
    "Read onboarding guide",
    "Fix the leaking tap",
    "Send thank-you notes",
    "Organise photo library",
    "Cancel gym trial",
    "Compare insurance quotes",
)
PERSONAS: tuple[str, ...] = (
    "You are polite and to the point; you answer questions briefly.",
    "You are busy and want your list sorted quickly, without small talk.",
    "You are friendly and chatty, but you give the details when asked.",
    "You are careful and double-check every detail before agreeing.",
)
CHALLENGES: dict[str, tuple[str, ...]] = {
    "ambiguous_request": (
        "Start vague (say you want to 'sort out your list') and give the details when asked.",
        "Describe what you want loosely at first; be precise once the agent asks.",
    ),
    "user_false_claim": (
        "Claim at first that another agent already did this for you; accept the records if "
        "the agent shows otherwise.",
        "Insist at first you were told this was done; drop it when the agent explains.",
    ),
    "emotional_pressure": (
        "You are stressed and press the agent to hurry.",
        "You are upset that your list is a mess and push the agent to be quick.",
    ),
}


#: Mock's feasibility rule, one check per rule (``.rules`` states each id in a sentence).
CHECKS = Checks()


def _refused(a: Asked) -> bool:
    return a.outcome == "refuse"


@CHECKS.rule("one_lookup")
def _one_lookup(a: Asked) -> str | None:
    if a.reads not in (None, "0", "1"):
        return "mock has one look-up (get_users): a task reads at most once"
    return None


@CHECKS.rule("no_computation")
def _no_computation(a: Asked) -> str | None:
    if a.computation not in (None, "none"):
        return "mock has no calculator and nothing to compute"
    return None


@CHECKS.rule("lookup_without_read")
def _lookup_without_read(a: Asked) -> str | None:
    if a.reads == "0" and "lookup_then_act" in a.patterns:
        return "lookup_then_act needs the look-up (num_read 1)"
    return None


@CHECKS.rule("refusal_family")
def _refusal_family(a: Asked) -> str | None:
    if _refused(a) and a.family not in ("", "task_status_update"):
        return "mock refuses only deletions, which are task_status_update requests"
    return None


# The shape of a refused deletion, asked only of a refused task_status_update.
@CHECKS.rule("refusal_shape", after=("refusal_family",))
def _refusal_shape(a: Asked) -> str | None:
    if _refused(a) and (
        a.difficulty not in (None, "easy") or a.reads == "0" or a.writes not in (None, "0")
    ):
        return "a refused deletion is one look-up and a transfer: easy, one read, no write"
    return None


@CHECKS.rule("refusal_batch", after=("refusal_family",))
def _refusal_batch(a: Asked) -> str | None:
    if _refused(a) and "batched_multi_item_action" in a.patterns:
        return "a refused deletion acts on nothing"
    return None


@CHECKS.rule("handoff_fulfil")
def _handoff_fulfil(a: Asked) -> str | None:
    if not _refused(a) and (
        "escalation_handoff" in a.patterns
        or "no_deletion_transfer" in a.values("policy_or_constraint_focus")
    ):
        return "a hand-off is mock's only refusal"
    return None


@CHECKS.rule("fulfil_without_write")
def _fulfil_without_write(a: Asked) -> str | None:
    if not _refused(a) and a.writes == "0":
        return "a fulfilled mock request writes"
    return None


# Counted with at most one look-up, and the one a lookup_then_act needs, in a task that writes.
@CHECKS.rule("write_calls", after=("one_lookup", "lookup_without_read", "fulfil_without_write"))
def _write_calls(a: Asked) -> str | None:
    if not _refused(a) and not _write_counts(a.difficulty, a.reads, a.writes):
        return f"num_write={a.writes} does not fit difficulty_profile={a.difficulty}"
    return None


#: Why mock cannot realize ``selections`` together, or None (the Planner's rule): the reason of
#: the first conflict :data:`CHECKS` finds.
infeasible = CHECKS.first


def _write_counts(difficulty: str | None, reads: str | None, writes: str | None) -> list[int]:
    """Write counts (tasks named) whose calls fit the difficulty and the write bucket."""
    lo, hi = DIFFICULTY_CALLS.get(difficulty or "", (0, OPEN_END))
    looked_up = 0 if reads == "0" else 1
    return [
        n
        for n in range(1, 8)
        if lo <= looked_up + n <= hi and (writes is None or bucket(n) == writes)
    ]


@dataclass(kw_only=True)
class _Request(Request):
    """What the blueprint asks for: how many tasks the request names, and the look-up."""

    writes: int
    reads: int


class MockGenerator(GroundedGenerator[Draft, _Request, MockDB]):
    """Grounds blueprints into mock tasks whose gold actions realize the requested values."""

    domain_name = "mock"
    database = MockDB

    def _request(self, blueprint: Blueprint, seed: int) -> _Request:
        asked = Request.read(blueprint, seed, FAMILIES, "a mock family", infeasible)
        controls = asked.controls
        counts = _write_counts(
            controls["difficulty_profile"], controls["num_read"], controls["num_write"]
        )
        if "batched_multi_item_action" in asked.patterns:
            counts = [n for n in counts if n > 1] or counts
        return _Request(
            **asked.shared(),
            writes=0 if asked.outcome == "refuse" else asked.rng.choice(counts[:2]),
            reads=0 if controls["num_read"] == "0" else 1,
        )

    def _build(self, request: _Request) -> Draft:
        return _BUILDERS[(request.family, request.outcome)](request)

    def _pad_reads(self, draft: Draft, request: _Request) -> None:
        """Nothing to pad: the one look-up is in the draft already."""

    def _assemble(self, draft: Draft, request: _Request) -> Task:
        rng, instructions = self._scene(request, draft.instructions, CHALLENGES)
        return self._task(
            draft,
            request,
            persona=rng.choice(PERSONAS),
            instructions=instructions,
            known=[f"Your user id is {USER}."],
        )

    def _exclude(self, draft: Draft, request: _Request) -> None:
        """Nothing to exclude: the next candidate draws new titles from the same stream."""


def _lookups(request: _Request) -> list[Step]:
    return [Step("get_users", {}) for _ in range(request.reads)]


def _create(request: _Request) -> Draft:
    """New tasks the user names, created after the look-up."""
    titles = request.rng.sample(TITLES, request.writes)
    named = ", ".join(f"'{t}'" for t in titles)
    creations = [Step("create_task", {"user_id": USER, "title": t}) for t in titles]
    return Draft(
        steps=[*_lookups(request), *creations],
        reason=f"You want to add to your to-do list: {named}.",
        instructions=[
            f"Ask for new tasks titled exactly {named}, nothing else.",
            "Ask for the id of the last new task, to refer to it later.",
        ],
        purpose="Create tasks for an existing user.",
        # The tool numbers new tasks after the ones the database holds.
        communicate=[
            Answer(
                value=f"task_{STOCK_TASKS + len(titles)}",
                topic=f"the id of the task '{titles[-1]}'",
            )
        ],
    )


def _listed(request: _Request) -> tuple[list[EnvFunctionCall], list[tuple[str, str]], str]:
    """Tasks the initial state adds, the (id, title) of those the request names, in words.

    Those named keep ids past the official tasks' task_2.
    """
    rng = request.rng
    kept = rng.randint(1, 2)
    titles = rng.sample(TITLES, kept + max(1, request.writes))
    init = [
        EnvFunctionCall(
            env_type="assistant",
            func_name="create_task",
            arguments={"user_id": USER, "title": t},
        )
        for t in titles
    ]
    targets = [(f"task_{STOCK_TASKS + kept + i + 1}", t) for i, t in enumerate(titles[kept:])]
    return init, targets, ", ".join(f"'{t}' ({task_id})" for task_id, t in targets)


def _complete(request: _Request) -> Draft:
    """Listed tasks the user names, marked completed."""
    init, targets, named = _listed(request)
    updates = [
        Step("update_task_status", {"task_id": task_id, "status": "completed"})
        for task_id, _ in targets
    ]
    return Draft(
        steps=[*_lookups(request), *updates],
        reason=f"You have finished {named} and want them marked completed.",
        instructions=["Only those tasks are done; leave every other task as it is."],
        purpose="Mark tasks of an existing user completed.",
        init=init,
    )


def _delete(request: _Request) -> Draft:
    """A listed task the user wants deleted: no tool deletes, so a human agent must."""
    init, targets, named = _listed(request)
    task_id, title = targets[0]
    return Draft(
        steps=[
            *_lookups(request),
            Step(
                "transfer_to_human_agents",
                {"summary": f"User {USER} wants task {task_id} ('{title}') deleted."},
            ),
        ],
        reason=f"You want the task {named} deleted from your list for good.",
        instructions=["Do not accept marking it completed instead; it must go."],
        purpose="A deletion request, which policy hands to a human agent.",
        note="tasks cannot be deleted, so a human agent has to help",
        init=init,
    )


_BUILDERS: dict[tuple[str, str], Callable[[_Request], Draft]] = {
    ("task_creation", "fulfill"): _create,
    ("task_status_update", "fulfill"): _complete,
    ("task_status_update", "refuse"): _delete,
}
