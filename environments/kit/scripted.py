"""The user side of a programmatic Teacher, and the Teacher that puts both sides together.

The user side (:class:`ScriptedUser`) holds the task: its scenario and persona, its gold
actions, cues and expected answers. It opens the conversation in the user's own words, hands
the agent each request as a :class:`~evosyn.environments.kit.sealed.SealedAction`, and answers
what the agent asks from what its instructions give. The agent side
(:class:`~evosyn.environments.kit.agent.ScriptedAgent`) is built without the task and reaches
the user only through a :class:`~evosyn.environments.kit.sealed.UserChannel`. The
:class:`ScriptedTeacher` is the conversation between the two, closing with what the agent
did or refused, in its own words, and the questions the user still has, which the agent
answers from what it has seen (:class:`~evosyn.environments.kit.sealed.SealedFact`).
"""

from __future__ import annotations

import abc
import random
from collections.abc import Mapping, Sequence
from typing import ClassVar

from tau2.data_model.message import Message, SystemMessage, ToolCall
from tau2.data_model.tasks import Action, Task

from evosyn.environments import information_flow, quality, spoken_forms
from evosyn.environments.base import FunctionalSymbol, Tau2Domain
from evosyn.environments.dialogue_acts import persona_kind
from evosyn.environments.information_flow import Choice, FlowRules
from evosyn.environments.kit import acting, phrasing
from evosyn.environments.kit.agent import ScriptedAgent, what_is
from evosyn.environments.kit.dialogue import (
    SLIPS,
    Dialogue,
    first_person,
    listed,
    stock_system_prompt,
)
from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.sealed import SealedAction, SealedFact, UserChannel
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Answer, Attempt, SynthTask, Trajectory


def scenario(task: Task, default_reason: str) -> tuple[str, str]:
    """The user's reason for calling (``default_reason`` if none) and what they know."""
    instructions = task.user_scenario.instructions
    reason = str(getattr(instructions, "reason_for_call", "") or default_reason)
    known = str(getattr(instructions, "known_info", "") or "")
    return reason, known


#: The user names the choices the agent asked for.
GIVE_CHOICES = (
    "(Sure|Of course|Yes|OK|Alright|Right|Certainly)(,|.) {answers}[(, please|, thanks)].",
    "{answers}[(, please|, thanks|, thank you)].",
    "(Let's see|Right|Alright|OK, so|Let me think)(:| -) {answers}[, please].",
    "(Here you go|Here's what I'd like|These are my choices|That's easy)(:| -) {answers}.",
)


#: The user asks for what they still need to know; the agent answers that question.
ASK_ANSWERS = (
    "(Before we (finish|wrap up|hang up)|One (more|last) thing|Oh, and|While you're at it), "
    "(could|can|would) you (tell me|confirm) {topics}?",
    "[(Sorry|Hmm), ]what (is|was|did you say was) {topics}[ again]?",
    "I('d| would|'d really) like to know {topics}[ before we (hang up|finish)].",
    "(Just so I have it|For my notes|So I know): what('s| is) {topics}?",
)
#: Said for a value whose question the Generator did not state (an LLM-written task).
DEFAULT_TOPIC = "the details you found"


def ask_answers(
    dialogue: Dialogue, task: Task, answers: Sequence[Answer], rng: random.Random
) -> list[SealedFact]:
    """The user asks for every expected answer not yet said in context (the user's turn).

    Returns what the agent is asked, sealed (:class:`~evosyn.environments.kit.sealed.
    SealedFact`): the agent states each value only if its tool results or its own working
    show it, in a sentence naming what it is ("The total bag fee is $89."), never as a bare
    list at the end. Empty when nothing is left to ask.
    """
    known = {a.value: a for a in answers}
    criteria = task.evaluation_criteria
    values = list((criteria.communicate_info if criteria else None) or [])
    pending = [
        known.get(v) or Answer(value=v, topic=DEFAULT_TOPIC)
        for v in values
        if not quality.said_in_context(v, dialogue.messages)
    ]
    if not pending:
        return []
    topics = " and ".join(dict.fromkeys(first_person(a.topic) for a in pending))
    dialogue.user(say(rng, ASK_ANSWERS, topics=topics))
    return [SealedFact(a.topic, a.value, a.said) for a in pending]


def close(
    dialogue: Dialogue,
    task: Task,
    agent: ScriptedAgent,
    user: ScriptedUser,
    rng: random.Random,
    answers: Sequence[Answer] = (),
) -> None:
    """The closing turns: what was done (or why not), the answers the user asks for, goodbye.

    Everything the agent says comes from what it has seen: what its writes did, why it
    refused a request (said when it refused), what its own findings show of the outcome
    (:meth:`~evosyn.environments.kit.agent.ScriptedAgent.outcome`), or else what it can tell
    the user it cannot do from their words
    (:meth:`~evosyn.environments.kit.agent.ScriptedAgent.declines`).

    Args:
        dialogue: The conversation so far.
        task: The task, whose expected answers the user asks for (the user's side).
        agent: The agent side, which reports what its writes did and answers the user's
            questions from what it has seen.
        user: The user side, which may ask to go over it and says goodbye.
        rng: The rollout's seeded wording.
        answers: The task's expected answers with the questions they answer.
    """
    summaries, refusals = agent.summaries, agent.refusals
    outcome = agent.outcome()
    declined = [] if summaries or refusals else agent.declines()
    closing: str | None
    if summaries:
        recap = "; ".join([*summaries, *refusals])
        closing = phrasing.pick(rng, phrasing.DONE, summary="; ".join(summaries))
        if outcome:
            closing += f" {outcome}"
    elif refusals:
        recap = "; ".join(refusals)
        closing = outcome  # the refusal was said when the agent refused
    elif declined:
        recap = "; ".join(declined)
        closing = phrasing.pick(rng, phrasing.REFUSE, reason=recap)
    else:
        recap = outcome or "I have checked your records"
        closing = outcome or "I have checked your records."
    # The agent reports first; a question the user still has is answered in the next turn.
    dialogue.owed += dialogue.after_lookup
    dialogue.after_lookup.clear()
    if closing:
        dialogue.assistant(closing)
    user.reply("closing")
    said = next((m.content or "" for m in reversed(dialogue.messages) if m.role == "user"), "")
    if acting.asks_to_go_over(said):
        dialogue.assistant(say(rng, acting.RECAP, details=recap))
    facts = ask_answers(dialogue, task, answers, rng)
    if facts:
        dialogue.assistant(agent.answer(facts))
    dialogue.assistant(phrasing.pick(rng, phrasing.ANYTHING_ELSE))
    user.goodbye()


#: The user does not know a value the agent asked for.
UNSURE = ("I'm not sure about {what}", "I (don't know|can't tell you) {what}[, sorry]")
#: Ids a caller may lack, by argument, with what they call them.
LACKABLE = {
    "reservation_id": "reservation id",
    "order_id": "order id",
    "customer_id": "customer id",
    "bill_id": "bill id",
}


class ScriptedUser:
    """The user side: the task's requests handed over sealed, answers from the instructions.

    Args:
        task: The τ²-bench task (the user's instructions and the gold actions).
        dialogue: The conversation, which the user speaks in.
        domain: The domain (its tool schemas, for the seal).
        flow: The domain's user choices (None: grounding only).
        cues: What the user says at a gold action, by action id (``SynthTask.cues``).
        challenges: The interaction challenges the task requests, to act out.
        refused: The writes the user asks for that policy forbids (``SynthTask.refused``),
            handed over sealed like the others: the agent finds out that it must refuse.
    """

    def __init__(
        self,
        task: Task,
        dialogue: Dialogue,
        domain: Tau2Domain,
        flow: FlowRules | None,
        cues: Mapping[str, str],
        challenges: Sequence[str] = (),
        refused: Sequence[ToolCall] = (),
    ) -> None:
        self.task = task
        self.dialogue = dialogue
        self.domain = domain
        self.flow = flow
        self.cues = cues
        #: What the user acts out: the requested challenges and the task's persona.
        self.performance = acting.Performance(
            frozenset(challenges), persona_kind(task.user_scenario.persona)
        )
        #: Whether the user is answering a proposal (no side question then: their yes is
        #: to the write, and it must follow the write's details).
        self.answering = False
        dialogue.interject = self.interject
        _, known = scenario(task, "")
        #: What the user knows from the start (their instructions' known info).
        self.known = known
        #: The request the user has still to say, having opened vaguely (None: said).
        self.unsaid: str | None = None
        criteria = task.evaluation_criteria
        #: Each request still to hand over, with the action behind it (a gold action, or a
        #: write the policy forbids).
        self.gold: dict[SealedAction, Action] = {}
        self.queue: list[SealedAction] = []
        actions = list((criteria.actions if criteria else None) or [])
        # A forbidden write is asked for before a hand-over, which ends the call.
        specs = [domain.tool_spec(a.name, a.requestor) for a in actions]
        transfers = (
            i for i, spec in enumerate(specs) if spec and spec.symbol == FunctionalSymbol.TRANSFER
        )
        at = next(transfers, len(actions))
        actions[at:at] = [
            Action(
                action_id=f"refused_{i}",
                requestor=write.requestor,
                name=write.name,
                arguments=write.arguments,
            )
            for i, write in enumerate(refused)
        ]
        for action in actions:
            sealed = SealedAction(action.name, action.requestor, action.arguments, domain, flow)
            self.gold[sealed] = action
            self.queue.append(sealed)

    def channel(self) -> UserChannel:
        """What the agent may ask of this user (functions only: no way to the task)."""
        return UserChannel(
            pending=lambda: list(self.queue),
            served=self.queue.remove,
            tell=self.tell,
            choose=self.choose,
            perform=self.perform,
            reply=self.reply,
        )

    def open(self, greeting: str, default_reason: str) -> None:
        """The user's opening turn: their reason for calling, in their own words."""
        reason, _ = scenario(self.task, default_reason)
        self.unsaid = acting.open_request(
            self.dialogue, self.performance, greeting, first_person(reason), self.lacking()
        )

    def lacking(self) -> str | None:
        """The id the user does not have (for ``missing_information``), or None.

        The first id a request of theirs looks a record up by that their instructions do
        not give; a domain may name another (telecom: the customer id).
        """
        for request in self.queue:
            action = self.gold[request]
            if action.requestor != "assistant" or request.symbol != FunctionalSymbol.READ:
                continue
            for key, what in LACKABLE.items():
                value = action.arguments.get(key)
                if isinstance(value, str) and value not in self.known:
                    return what
        return None

    def interject(self, text: str) -> str:
        """``text`` with a side question of the user's own, where one is due.

        Not in a goodbye, nor in an answer to a proposal.
        """
        if "###" in text or self.answering:
            return text
        asked = acting.side_question(self.dialogue, self.performance)
        return text if asked is None else f"{text} {asked}"

    def reply(self, moment: str) -> None:
        """The user's answer to what the agent put to them at ``moment``.

        At a ``proposal``: a change of mind under way, else a careful user's request to go
        over it (once), else a side question that is due (before the yes, which must follow
        the write's details), else a yes (terse for a busy user). At a ``refusal``: a request
        for a human agent where the user's next request is the hand-over (their instructions
        have them insist on one), else nothing. At a ``closing`` or ``hand-over``: a careful
        user who has not yet asked to go over the details asks now.
        """
        rng, performance = self.dialogue.rng, self.performance
        if moment == "refusal":
            following = self.queue[0] if self.queue else None
            if following is not None and following.symbol == FunctionalSymbol.TRANSFER:
                self.dialogue.user(phrasing.pick(rng, phrasing.ASK_HUMAN))
            return
        if moment == "proposal":
            said = (
                acting.change_line(performance, rng)
                or acting.go_over_line(performance, rng)
                or acting.side_question(self.dialogue, performance)
            )
            if said is None:
                terse = performance.persona == "busy"
                said = phrasing.pick(rng, acting.TERSE_CONFIRM if terse else phrasing.CONFIRM)
        else:
            said = acting.go_over_line(performance, rng, done=True)
        if said is not None:
            self.answering = moment == "proposal"
            self.dialogue.user(said)
            self.answering = False

    def goodbye(self) -> None:
        """The user's last words (terse for a busy user)."""
        terse = self.performance.persona == "busy"
        rng = self.dialogue.rng
        self.dialogue.user(phrasing.pick(rng, acting.TERSE_GOODBYE if terse else phrasing.GOODBYE))

    def clarify(self) -> None:
        """The user says their request precisely, if they opened vaguely."""
        acting.clarify(self.dialogue, self.unsaid)
        self.unsaid = None

    def next(self) -> SealedAction | None:
        """The user's next request (sealed), or None when they have asked for everything."""
        return self.queue.pop(0) if self.queue else None

    def cue(self, action: Action | None) -> str | None:
        """What the user says when the conversation reaches ``action``, in their words."""
        cue = self.cues.get(action.action_id) if action is not None else None
        return None if cue is None else first_person(cue)

    def tell(self, request: SealedAction, topic: str) -> None:
        """The user answers the agent's question about ``topic`` for ``request`` (if they can)."""
        text = self.answer(topic, self.gold.get(request))
        if text:
            self.dialogue.user(text)

    def answer(self, topic: str, action: Action | None) -> str | None:
        """The user's words on ``topic`` for ``action`` (None: a request the agent made itself).

        ``cue``: what the user says at the action; ``details``: the values the agent could
        not find. A domain adds its own topics.
        """
        if topic == "cue":
            return self.cue(action)
        if topic == "details" and action is not None:
            return self._details(action)
        return None

    def _allowed(self, action: Action, method: str) -> bool:
        """Whether policy allows ``action`` paid with ``method`` (a first preference to name).

        Any saved method by default; a domain whose policy limits it (a refund only to the
        original method) says so.
        """
        return True

    def _details(self, action: Action) -> str | None:
        """The values of ``action`` the agent has not seen, where the instructions give them.

        What the instructions do not give the user does not know: they say so.
        """
        seen = information_flow.seen_before(self.dialogue.messages)
        unseen = information_flow.ungrounded(
            self.domain,
            action.name,
            action.arguments,
            seen,
            self.flow.aliases if self.flow else None,
        )
        instructions = str(self.task.user_scenario.instructions)
        known: dict[str, list[str]] = {}
        unknown: list[str] = []
        for path, value in unseen:
            what = what_is(path)
            if any(form in instructions for form in spoken_forms.date_forms(value)):
                known.setdefault(what, []).append(value)
            else:
                unknown.append(what)
        parts = [f"{what} is {listed(list(dict.fromkeys(v)))}" for what, v in known.items()]
        unknown = [what for what in unknown if what not in known]
        if unknown:
            parts.append(say(self.dialogue.rng, UNSURE, what=listed(list(dict.fromkeys(unknown)))))
        if not parts:
            return None
        text = "; ".join(parts)
        return f"{text[0].upper()}{text[1:]}."

    def choose(self, request: SealedAction, choices: Sequence[Choice]) -> None:
        """The user names their values of ``choices`` for ``request``, in their own words."""
        action = self.gold.get(request)
        if action is None or self.flow is None:
            return
        seen = information_flow.seen_before(self.dialogue.messages)
        answers: list[str] = []
        for choice, value in information_flow.unnamed(
            self.flow, action.name, action.arguments, seen
        ):
            if choice not in choices:
                continue
            words = choice.say(value, action.arguments, seen)
            first = self._first_preference(action, choice, value) if choice.open_detail else None
            if first is not None and self.performance.change_to is None:
                words, self.performance.change_to = first  # the second named on changing
            answers.append(words)
        answers = list(dict.fromkeys(answers))
        if answers:
            self.dialogue.user(say(self.dialogue.rng, GIVE_CHOICES, answers=listed(answers)))

    def _first_preference(
        self, action: Action, choice: Choice, value: object
    ) -> tuple[str, str] | None:
        """The words for another value of the open detail ``choice`` and for ``value``, or None.

        The user names the first, then changes their mind to ``value``. Only where a proposal
        challenge is due. By default, for the payment method, another saved method policy
        allows (:meth:`_allowed`) that the user tells apart by name; a domain names its own
        details (an amount).
        """
        if not self.performance.proposal_due() or choice.argument.split(".")[-1] not in (
            "payment_id",
            "payment_method_id",
        ):
            return None
        dialogue = self.dialogue
        gold = acting.user_words(dialogue, str(value))
        if gold is None:
            return None
        for other in sorted(acting.saved_methods(dialogue)):
            first = acting.user_words(dialogue, other)
            if other != value and first not in (None, gold) and self._allowed(action, other):
                return str(first), gold
        return None

    def perform(self, request: SealedAction) -> None:
        """The user makes their own tool call of ``request`` on their device."""
        action = self.gold.get(request)
        if action is not None:
            self.dialogue.call(
                ToolCall(id="", name=action.name, arguments=action.arguments, requestor="user")
            )


class ScriptedTeacher(abc.ABC):
    """A programmatic Teacher: a conversation between a user side and a blind agent side.

    The user side (:attr:`user_side`) holds the task; the agent side (:attr:`agent_side`)
    gets the domain, the dialogue and a channel to the user, never the task. Without a
    ``domain`` it rolls out on the shared instance of :attr:`domain_name`.
    """

    #: The τ²-bench domain this Teacher rolls out tasks of.
    domain_name: ClassVar[str]
    name = "programmatic"
    #: The user's reason for calling where the task's scenario states none.
    default_reason: ClassVar[str] = "I need help."
    #: The user's opening lines (phrase-grammar templates).
    greetings: ClassVar[tuple[str, ...]] = phrasing.GREETINGS
    #: Whether a transfer ends the conversation, as τ²-bench's user simulator ends it.
    hands_over: ClassVar[bool] = True
    #: The domain's agent side (blind) and user side.
    agent_side: ClassVar[type[ScriptedAgent]]
    user_side: ClassVar[type[ScriptedUser]] = ScriptedUser

    def __init__(self, domain: Tau2Domain | None = None, mistake_rate: float = 0.0) -> None:
        self.domain = domain or get_domain(self.domain_name)
        #: The domain's user choices (asked before a write), if it declares them.
        self.flow = domain_plugin(self.domain_name).flow
        #: Share of rollouts with a seeded mistake (see :meth:`_open`).
        self.mistake_rate = mistake_rate

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        """The trajectory for ``task``: its requests served inside a policy-following dialogue.

        Args:
            task: The synthesized task.
            seed: Seed of the wording.
            attempt: 0 for the first rollout, k for the k-th repair (varies the wording).
            previous: The failed attempt (unused: the gold actions do not change).

        Returns:
            The trajectory in τ²-bench's message format.
        """
        return Trajectory(
            campaign_id=task.campaign_id,
            round=task.round,
            trajectory_id=f"{task.task_id}-traj{attempt}",
            task_id=task.task_id,
            messages=self.messages(
                task.task,
                seed,
                attempt,
                task.answers,
                task.requested.get("interaction_challenge", []),
                task.cues,
                task.refused,
            ),
            teacher=self.name,
            attempt=attempt,
        )

    def messages(
        self,
        task: Task,
        seed: int,
        attempt: int = 0,
        answers: Sequence[Answer] = (),
        challenges: Sequence[str] = (),
        cues: Mapping[str, str] | None = None,
        refused: Sequence[ToolCall] = (),
    ) -> list[Message]:
        """The conversation for a τ²-bench task of the domain (synthesized or official).

        The task's stored history is replayed, the user opens with their reason for calling,
        the agent serves each of the user's requests with the turns its domain scripts (a
        confirmation of every write), and the closing turns follow unless a transfer ended
        the call.

        Args:
            task: The τ²-bench task.
            seed: Seed of the wording.
            attempt: 0 for the first rollout, k for the k-th repair.
            answers: Its expected answers with the questions they answer.
            challenges: The interaction challenges to act out.
            cues: What the user says at a gold action, by action id (``SynthTask.cues``).
            refused: The writes the user asks for that policy forbids (``SynthTask.refused``;
                none for an official task).
        """
        rng, dialogue = self._open(task, seed, attempt)
        history = task.initial_state.message_history if task.initial_state else None
        for message in history or []:
            dialogue.replay(message)
        user = self.user_side(
            task, dialogue, self.domain, self.flow, cues or {}, challenges, refused
        )
        user.open(say(rng, self.greetings), self.default_reason)
        agent = self.agent_side(
            self.domain, self.flow, dialogue, user.channel(), hands_over=self.hands_over
        )
        agent.react()
        user.clarify()
        while (request := user.next()) is not None:
            if agent.serve(request):
                return dialogue.messages
        close(dialogue, task, agent, user, rng, answers)
        return dialogue.messages

    def _open(self, task: Task, seed: int, attempt: int) -> tuple[random.Random, Dialogue]:
        """The rollout's seeded wording and a dialogue opened as τ²-bench opens one.

        The system turn is what τ²-bench's stock agent sees (its instructions and the policy,
        in tags); the agent greets first, as τ²-bench's orchestrator does, unless the task
        brings a message history of its own.
        """
        rng = phrasing.seeded(seed, task.id, attempt, "rollout")
        dialogue = Dialogue(self.domain, self.domain.initial_state(task), rng)
        slip = phrasing.seeded(seed, task.id, attempt, "mistake")
        if slip.random() < self.mistake_rate:
            # A realistic slip the Verifier must catch: each attempt draws anew, so Repair
            # (a fresh attempt) usually makes the rollout right.
            dialogue.slip = slip.choice(SLIPS)
        dialogue.add(SystemMessage(role="system", content=stock_system_prompt(self.domain)))
        if not (task.initial_state and task.initial_state.message_history):
            dialogue.assistant(quality.AGENT_GREETING)
        return rng, dialogue
