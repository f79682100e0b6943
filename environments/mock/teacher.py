"""The programmatic Teacher on τ²-bench mock: a to-do-list conversation around the gold calls."""

from __future__ import annotations

from collections.abc import Sequence

from tau2.data_model.message import Message
from tau2.data_model.tasks import Action, Task

from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.acting import open_request
from evosyn.environments.kit.dialogue import (
    ScriptedTeacher,
    close,
    confirm,
    first_person,
    hand_over,
    scenario,
)
from evosyn.environments.kit.grammar import say
from evosyn.records import Answer

# Templates of the phrase grammar (environments/kit/grammar.py): (a|b) picks, [x] may drop.
GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey there)[,] I (need|could use) [some ]help with my (to-do list|tasks).",
    "(Hi|Hello)[ there], I'm (writing|getting in touch) about my (task list|to-do list).",
)
NO_DELETE: tuple[str, ...] = (
    "I'm sorry, I can't delete tasks: only a human agent can help with that. Let me transfer you.",
    "Deleting tasks is not something I can do; I'll hand you over to a human agent.",
)


def describe(action: Action) -> str:
    """A write as the agent lists it for confirmation."""
    args = action.arguments
    if action.name == "create_task":
        return f"create a task titled '{args['title']}' for {args['user_id']}"
    if action.name == "update_task_status":
        return f"mark {args['task_id']} as {args['status']}"
    return f"call {action.name}"


class MockTeacher(ScriptedTeacher):
    """Rolls out mock tasks into trajectories that reach the gold database state."""

    domain_name = "mock"

    def messages(
        self,
        task: Task,
        seed: int,
        attempt: int = 0,
        answers: Sequence[Answer] = (),
        challenges: Sequence[str] = (),
    ) -> list[Message]:
        """The conversation for a τ²-bench mock task."""
        rng, dialogue = self._open(task, seed, attempt, challenges)
        reason, known = scenario(task, "I need help with my tasks.")
        open_request(dialogue, say(rng, GREETINGS), first_person(reason))
        criteria = task.evaluation_criteria
        summaries: list[str] = []
        asked = False
        for action in (criteria.actions if criteria else None) or []:
            symbol = self._symbol(action)
            if not asked:
                # Whoever the request is for, the agent first learns who is asking.
                asked = True
                dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
                user_id = known.removeprefix("Your user id is ").rstrip(".")
                dialogue.user(say(rng, phrasing.GIVE_USER_ID, user_id=user_id))
            if symbol == FunctionalSymbol.WRITE:
                confirm(dialogue, describe(action), rng, summaries, action)
            if symbol == FunctionalSymbol.TRANSFER:
                dialogue.assistant(say(rng, NO_DELETE))
            dialogue.call(action)
            if symbol == FunctionalSymbol.TRANSFER:
                hand_over(dialogue)
                return dialogue.messages
        close(dialogue, task, summaries, rng, answers)
        return dialogue.messages
