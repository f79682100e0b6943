"""The programmatic Teacher on τ²-bench mock: a to-do-list conversation around the gold calls."""

from __future__ import annotations

from tau2.data_model.message import ToolCall
from tau2.data_model.tasks import Action

from evosyn.environments.base import DomainState, FunctionalSymbol
from evosyn.environments.kit import phrasing
from evosyn.environments.kit.agent import ScriptedAgent
from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.scripted import ScriptedTeacher, ScriptedUser
from evosyn.environments.kit.sealed import SealedAction

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


def describe(call: ToolCall, state: DomainState | None = None) -> str:
    """A write as the agent lists it for confirmation (nothing in mock costs money)."""
    args = call.arguments
    if call.name == "create_task":
        return f"create a task titled '{args['title']}' for {args['user_id']}"
    if call.name == "update_task_status":
        return f"mark {args['task_id']} as {args['status']}"
    return f"call {call.name}"


class MockAgent(ScriptedAgent):
    """The mock agent: learns who is asking before anything else."""

    _describe = staticmethod(describe)

    def _before(self, request: SealedAction) -> None:
        dialogue, rng = self.dialogue, self.rng
        if "user id" not in self.asked:
            # Whoever the request is for, the agent first learns who is asking.
            self.asked.add("user id")
            dialogue.assistant(phrasing.pick(rng, phrasing.ASK_USER_ID))
            self.user.tell(request, "user id")
        if request.symbol == FunctionalSymbol.TRANSFER:
            dialogue.assistant(say(rng, NO_DELETE))


class MockUser(ScriptedUser):
    """The mock caller: their user id, from what they know."""

    def answer(self, topic: str, action: Action | None) -> str | None:
        """The caller's user id (``user id``), or the kit's topics."""
        if topic == "user id":
            user_id = self.known.removeprefix("Your user id is ").rstrip(".")
            return say(self.dialogue.rng, phrasing.GIVE_USER_ID, user_id=user_id)
        return super().answer(topic, action)


class MockTeacher(ScriptedTeacher):
    """Rolls out mock tasks into trajectories that reach the gold database state."""

    domain_name = "mock"
    default_reason = "I need help with my tasks."
    greetings = GREETINGS
    agent_side = MockAgent
    user_side = MockUser
