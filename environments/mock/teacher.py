"""The programmatic Teacher on τ²-bench mock: a to-do-list conversation around the gold calls."""

from __future__ import annotations

from tau2.data_model.tasks import Action

from evosyn.environments.base import DomainState, FunctionalSymbol
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.dialogue import Script, ScriptedTeacher
from evosyn.environments.kit.grammar import say

# Templates of the phrase grammar (environments/kit/grammar.py): (a|b) picks, [x] may drop.
GREETINGS: tuple[str, ...] = (
    "(Hi|Hello|Hey there)[,] I (need|could use) [some ]help with my (to-do list|tasks).",
    "(Hi|Hello)[ there], I'm (writing|getting in touch) about my (task list|to-do list).",
)
NO_DELETE: tuple[str, ...] = (
    "(I'm sorry, but|I'm afraid|Unfortunately,) I can't delete tasks( myself|| here): only a "
    "human agent can (help with|do) that. (Let me transfer you|I'll transfer you now|I'll hand "
    "you over to one)[ (so they can help|right away)].",
    "(Deleting tasks|Removing a task) (is not|isn't) something I can do[ (myself|here)]; I'll "
    "(hand you over|transfer you) to a human agent[ who can (help|take care of it)].",
    "(I can't remove tasks from your list|Deleting a task is outside what I can do)[, I'm "
    "(sorry|afraid)]. A human agent can (help with|handle) that, so (I'll|let me) transfer you"
    "[ now].",
)


def describe(action: Action, state: DomainState | None = None) -> str:
    """A write as the agent lists it for confirmation (nothing in mock costs money)."""
    args = action.arguments
    if action.name == "create_task":
        return f"create a task titled '{args['title']}' for {args['user_id']}"
    if action.name == "update_task_status":
        return f"mark {args['task_id']} as {args['status']}"
    return f"call {action.name}"


class MockTeacher(ScriptedTeacher):
    """Rolls out mock tasks into trajectories that reach the gold database state."""

    domain_name = "mock"
    default_reason = "I need help with my tasks."
    greetings = GREETINGS

    _describe = staticmethod(describe)

    def _before(self, script: Script, action: Action, symbol: FunctionalSymbol | None) -> None:
        dialogue, rng = script.dialogue, script.rng
        if "user id" not in script.asked:
            # Whoever the request is for, the agent first learns who is asking.
            script.asked.add("user id")
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
            user_id = script.dialogue.known.removeprefix("Your user id is ").rstrip(".")
            dialogue.user(say(rng, phrasing.GIVE_USER_ID, user_id=user_id))
        if symbol == FunctionalSymbol.TRANSFER:
            dialogue.assistant(say(rng, NO_DELETE))
