"""The blind agent side of a programmatic Teacher: it acts only on what a τ²-bench agent sees.

A :class:`ScriptedAgent` is built from the domain (its tools and policy), the dialogue it
speaks in (its system prompt, the user's turns, its own tool results) and a
:class:`~evosyn.environments.kit.sealed.UserChannel` to the user side. It never receives the
task: each request of the user comes as a
:class:`~evosyn.environments.kit.sealed.SealedAction` whose values open only once the agent
has seen every one, so the agent asks the user, or looks up a record it found, until it
has. Amounts it proposes come from the state its own calls reached, as the tools compute them.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence

from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage

from evosyn.environments import information_flow
from evosyn.environments.base import DomainState, FunctionalSymbol, Tau2Domain
from evosyn.environments.information_flow import Choice, FlowRules, Seen
from evosyn.environments.kit import acting, phrasing
from evosyn.environments.kit.dialogue import (
    Dialogue,
    hand_over,
    listed,
    reading,
)
from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.sealed import (
    SealedAction,
    SealedFact,
    Unseen,
    UserChannel,
    with_result,
)
from evosyn.environments.registry import domain_plugin

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
#: The agent asks for values it could not find in any record.
ASK_DETAILS = (
    "[(Thanks|OK|Alright). ](Could|Can) you (tell me|give me) {asks}[, please]?",
    "[(Thanks|OK|Alright). ]I (still need|also need|need) {asks}[ to go on]. (Could|Can) you "
    "(tell me|give me) (that|those)?",
)
#: How many times the agent puts a write to the user (a change of mind, a request to go over
#: it) before it has their yes.
_PROPOSALS = 4
#: The agent answers the user's questions from what it has seen.
GIVE_ANSWERS = (
    "(Sure|Of course|Certainly|Good question|Absolutely)(,|.|!) {facts}.",
    "(Let me check|One moment|Let me look)(.|...) (I have it here|Here it is|Found it)(:|.) "
    "{facts}.",
    "{facts}[(, according to your records|, going by your records)].",
    "(Looking at your records|From your records|According to your records|From what I see "
    "here), {facts}.",
    "(I've checked|I checked|I looked it up)(:| -) {facts}.",
)
#: The agent has seen nothing that answers a question: it says so rather than guess.
NOT_FOUND = (
    "I (can't|couldn't) find {topics} in (your records|what I've looked up)[, I'm sorry].",
    "(I'm sorry, but|Unfortunately,) {topics} (isn't|is not) in (the records I've checked|your "
    "records), so I can't tell you.",
)
#: Said for a group of values the question named together ("the details you found").
_PLURAL_TOPICS = frozenset({"the details you found"})
#: How many look-ups (and one question) the agent makes to find what a request needs.
_LOOKUPS = 4


def what_is(path: str) -> str:
    """What an argument is, in words: ``flights[0].flight_number`` is "the flight number"."""
    leaf = re.sub(r"\[\d+\]", "", path).rsplit(".", 1)[-1]
    return "the " + leaf.replace("_", " ").replace(" id", " ID").replace("dob", "date of birth")


class ScriptedAgent(abc.ABC):
    """The agent side: serves the user's sealed requests with the policy's turns around them.

    Holds what every domain's agent does alike (grounding by look-ups, asking for the user's
    choices, a confirmation with the amount before every write, the hand-over at a transfer);
    a domain scripts its turns before each request in :meth:`_before`, words its writes in
    :meth:`_describe` and names the look-ups its records point to in :meth:`_lookups`.

    Args:
        domain: The τ²-bench domain: its tools, their schemas and its policy.
        flow: The domain's user choices (None: grounding only).
        dialogue: The conversation so far, which the agent sees and speaks in.
        user: What the agent can ask of the user.
        hands_over: Whether a transfer ends the conversation, as τ²-bench's user simulator
            ends it.
    """

    def __init__(
        self,
        domain: Tau2Domain,
        flow: FlowRules | None,
        dialogue: Dialogue,
        user: UserChannel,
        *,
        hands_over: bool = True,
    ) -> None:
        self.domain = domain
        self.flow = flow
        self.dialogue = dialogue
        self.user = user
        self.hands_over = hands_over
        #: The rollout's seeded wording.
        self.rng = dialogue.rng
        #: What each write did, in order.
        self.summaries: list[str] = []
        #: Why the agent refused each request the policy forbids, in the customer's words.
        self.refusals: list[str] = []
        #: What the agent has asked the caller for so far ("user id", "order", ...).
        self.asked: set[str] = set()
        self._seen = Seen()
        self._seen_at: tuple[int, str | None] = (-1, None)
        #: Where the write at hand began: the user's words from there on are about it.
        self.since = 0
        dialogue.hear = self.hear

    def seen(self) -> Seen:
        """What the agent has seen so far (not to be changed: it is kept for the next ask)."""
        messages = self.dialogue.messages
        # Messages are only added, or the last one continued (two agent texts in a row), so
        # their count and the last one's words tell whether anything new was said.
        key = (len(messages), messages[-1].content if messages else None)
        if key != self._seen_at:
            self._seen = information_flow.seen_before(messages)
            self._seen_at = key
        return self._seen

    def react(self) -> None:
        """React to what the user just said: their mood, their experience, a claim, a vague ask.

        Read from the user's words (:func:`~evosyn.environments.kit.acting.react`).
        """
        acting.react(self.dialogue)

    def hear(self, text: str) -> None:
        """Take in a user turn as it is said: a side question is answered at the next words.

        The answer comes from the records the agent read
        (:func:`~evosyn.environments.kit.acting.side_answer`).
        """
        answer = acting.side_answer(self.dialogue, text)
        if answer is not None:
            self.dialogue.owed.append(answer)

    def serve(self, request: SealedAction) -> bool:
        """One request with its turns; whether it ended the conversation (a hand-over)."""
        self._before(request)
        if request.requestor == "user":
            self.user.perform(request)  # a step on the user's own device
            return False
        if not self._ground(request):
            return False  # nothing to go on: the agent cannot act on it
        if request.symbol == FunctionalSymbol.WRITE and self._refuse(request):
            return False
        dialogue = self.dialogue
        waive: list[Choice] = []
        if request.symbol == FunctionalSymbol.WRITE:
            self.since = len(dialogue.messages)
            wanted = self._unasked(request)
            if dialogue.slip == "chose_for_user" and wanted:
                dialogue.slip = None  # the slip: the agent picks for the user, asking nothing
                waive += wanted
            else:
                self._ask_choices(request, wanted)
        try:
            call = request.open(self.seen(), waive=waive, settle=self._named(request))
        except Unseen:
            return False  # a choice the user never named: the agent does not make it for them
        if request.symbol == FunctionalSymbol.TRANSFER:
            # The hand-over summary is the agent's own words (the gold compares the name only).
            call = call.model_copy(update={"arguments": {"summary": self._summary()}})
        if request.symbol == FunctionalSymbol.WRITE:
            settled = self._propose(request, call, waive)
            if settled is None:
                return False
            call = settled
        self._call(request, call)
        if request.symbol == FunctionalSymbol.TRANSFER and self.hands_over:
            hand_over(dialogue)
            return True
        return False

    def _refuse(self, request: SealedAction) -> bool:
        """Whether the policy forbids ``request``: the agent then says why and makes no call.

        The agent checks the write as the user asked for it, before it asks for their
        choices: what the policy forbids is refused at once. (A first preference the user
        names while the write is put to them, and then changes, is theirs to change.)
        """
        seen = self.seen()
        try:
            call = request.open(seen, waive=request.unchosen(seen))
        except Unseen:
            return False
        with reading(self.dialogue.state):
            why = self._forbidden(call)
        if why is None:
            return False
        reason = phrasing.plain_reason(why)
        self.refusals.append(reason)
        self.dialogue.assistant(phrasing.pick(self.rng, phrasing.REFUSE, reason=reason))
        self.user.reply("refusal")
        return True

    def _forbidden(self, call: ToolCall) -> str | None:
        """The policy rule ``call`` would break on the records as they stand, or None.

        By default the domain's policy model (the Verifier's check); a domain adds the rules
        that turn on what was said (a cancellation's reason) or that its tools enforce.
        """
        check = domain_plugin(self.domain.name).violation
        return None if check is None else check(self.dialogue.state.db, call.name, call.arguments)

    def outcome(self) -> str | None:
        """What the agent's own findings show of the outcome, for the closing (None: nothing).

        The default has none: what the writes did is in :attr:`summaries`. A domain whose
        fixes are made on the user's side (a phone) recaps the ones it had them make.
        """
        return None

    def declines(self) -> list[str]:
        """Why the agent cannot do what the user asked, where no tool would do it.

        Read from the user's words and the records the agent has seen (a request about an
        order that is not the caller's); by default none.
        """
        return []

    def _summary(self) -> str:
        """The agent's own hand-over summary: the customer's request and what it found.

        The request in the customer's words (what they wrote before the agent's first look-up:
        a greeting alone says nothing) and why the agent could not complete it (its refusals),
        so the human agent can pick up without asking again.
        """
        said: list[str] = []
        for message in self.dialogue.messages:
            if message.role == "tool":
                break
            if message.role == "user" and message.content:
                said.append(message.content.strip())
        parts = [f"The customer wrote: {' '.join(said)}"]
        if self.summaries:
            parts.append(f"Done so far: {'; '.join(self.summaries)}.")
        if self.refusals:
            parts.append(f"Not possible here: {'; '.join(self.refusals)}.")
        return " ".join(parts)

    def shown(self) -> list[str]:
        """What the agent tells facts from: its results, its turns and its own working.

        Its working is what it works out from its records by the policy (:meth:`_worked_out`).
        """
        return [
            *(
                message.content or ""
                for message in self.dialogue.messages
                if (isinstance(message, ToolMessage) and message.requestor == "assistant")
                or (isinstance(message, AssistantMessage) and message.content)
            ),
            *self._worked_out(self.seen()),
        ]

    def _worked_out(self, seen: Seen) -> list[str]:
        """Facts the policy gives from the records the agent has seen (an allowance, a fee).

        The default works out none; a domain names what its policy model computes.
        """
        return []

    def answer(self, facts: Sequence[SealedFact], shown: Sequence[str] | None = None) -> str:
        """The agent's reply to the user's questions: each fact its records or working show.

        A fact it has seen nowhere it says it cannot find (the user's turns and the policy do
        not count: a fact of the user's records comes from the records).

        Args:
            facts: What the user asked for, sealed.
            shown: What the agent may answer from (default: :meth:`shown` now).
        """
        shown = self.shown() if shown is None else shown
        found: list[str] = []
        missing: list[str] = []
        for fact in facts:
            try:
                value = fact.open(shown)
            except Unseen:
                missing.append(fact.topic)
                continue
            verb = "are" if fact.topic in _PLURAL_TOPICS else "is"
            found.append(f"{fact.topic} {verb} {value}")
        parts = [say(self.rng, GIVE_ANSWERS, facts="; ".join(found))] if found else []
        if missing:
            topics = listed(list(dict.fromkeys(missing)))
            parts.append(say(self.rng, NOT_FOUND, topics=topics))
        return " ".join(parts)

    def _propose(
        self, request: SealedAction, call: ToolCall, waive: Sequence[Choice]
    ) -> ToolCall | None:
        """Put the write ``call`` to the user until they say yes; the call they agreed to.

        The agent states what the write does and costs; the user says yes, asks to go over
        it or asks a side question (the agent answers and goes over it again), or changes
        their mind or names a condition, and the agent opens the request again with what they
        now named and proposes that. None where it cannot (a value the user named is one it
        cannot act with).
        """
        dialogue = self.dialogue
        with reading(dialogue.state):
            details = self._describe(call, dialogue.state)
        details = self._slipped(call, details)
        dialogue.assistant(phrasing.pick(self.rng, phrasing.ASK_CONFIRM, details=details))
        for _ in range(_PROPOSALS):
            self.user.reply("proposal")
            said = self._last_said()
            if acting.asks_to_go_over(said) or dialogue.owed:
                recap = say(self.rng, acting.RECAP, details=details)
                dialogue.assistant(f"{recap} Shall I go ahead?")
            elif acting.changes_mind(said):
                try:
                    call = request.open(self.seen(), waive=waive, settle=self._named(request))
                except Unseen:
                    return None
                with reading(dialogue.state):
                    details = self._describe(call, dialogue.state)
                dialogue.assistant(say(self.rng, acting.REPROPOSE, details=details))
            else:
                break
        self.summaries.append(details)
        return call

    def _last_said(self) -> str:
        """The user's latest words."""
        return next(
            (m.content or "" for m in reversed(self.dialogue.messages) if m.role == "user"), ""
        )

    def _call(self, request: SealedAction, call: ToolCall) -> None:
        """Make ``call`` (with a seeded slip, if one is due); a hand-over is explained first."""
        dialogue = self.dialogue
        if request.symbol == FunctionalSymbol.WRITE and dialogue.slip is not None:
            mistaken = acting.slip(dialogue, call)
            if mistaken is not None:
                dialogue.slip = None
                if mistaken == "skip":
                    return  # the agent says it acted but never calls the tool
                call = call.model_copy(update={"arguments": mistaken})
        if request.symbol == FunctionalSymbol.TRANSFER:
            last = dialogue.messages[-1] if dialogue.messages else None
            if not (isinstance(last, AssistantMessage) and last.content):
                dialogue.assistant(say(self.rng, acting.HAND_OFF))
            self.user.reply("hand-over")
            if acting.asks_to_go_over(self._last_said()):
                reason = "this needs a human agent, so I'll transfer you"
                dialogue.assistant(say(self.rng, acting.RECAP, details=reason))
        dialogue.call(call)

    @abc.abstractmethod
    def _before(self, request: SealedAction) -> None:
        """The domain's turns before ``request``'s call (and its confirmation, for a write).

        For a step on the user's own device, what the agent asks the user to do.
        """

    @abc.abstractmethod
    def _describe(self, call: ToolCall, state: DomainState) -> str:
        """What a write does and costs on ``state``, in words for the confirmation request."""

    def _unasked(self, request: SealedAction) -> list[Choice]:
        """The choices of ``request`` the agent still has to ask the user for."""
        return [c for c in request.unchosen(self.seen()) if c.ask]

    def _named(self, request: SealedAction) -> dict[str, object]:
        """The details of ``request`` the agent takes from the user's words, by path.

        By default the saved payment method the user named last while the agent was at this
        write (:func:`~evosyn.environments.kit.acting.named_method`); a domain adds its own
        (an amount). What the user has not named stays as the request holds it.
        """
        spec = self.domain.tool_spec(request.name, "assistant")
        path = None if spec is None else acting.payment_path(spec.properties)
        method = acting.named_method(self.dialogue, self.since) if path is not None else None
        return {} if path is None or method is None else {path: method}

    def _ask_choices(self, request: SealedAction, wanted: Sequence[Choice]) -> None:
        """The agent asks for the ``wanted`` choices of ``request``; the user answers.

        The choices are the domain's (:class:`~evosyn.environments.information_flow.Choice`):
        who travels, the cabin, the card, which items, how much data.
        """
        if not wanted:
            return
        asks = list(dict.fromkeys(choice.ask for choice in wanted))
        self.dialogue.assistant(say(self.rng, ASK_CHOICES, asks=listed(asks)))
        self.user.choose(request, wanted)

    def _slipped(self, call: ToolCall, details: str) -> str:
        """``details`` as a seeded slip words them: without the amount, or with a payment id.

        Either is a gate failure (:mod:`~evosyn.environments.information_flow`) that Repair
        must make right; without a slip due, ``details`` as they are.
        """
        dialogue = self.dialogue
        if dialogue.slip == "unpriced" and "$" in details:
            dialogue.slip = None
            return "; ".join(part for part in details.split("; ") if "$" not in part)
        payment = acting.payment_of(call.arguments)
        if dialogue.slip == "internal_id" and payment is not None:
            dialogue.slip = None
            return f"{details} (payment method {payment})"
        return details

    def _ground(self, request: SealedAction) -> bool:
        """Find out what ``request`` needs until the agent has seen every value; whether it has.

        Before a call with a value it has not seen, the agent makes a look-up that shows it
        (a look-up the user asked for that it can already make, or one its records point to:
        :meth:`_lookups`); where none does, it asks the user once for what is still missing.
        """
        asked = False
        for _ in range(_LOOKUPS):
            unseen = request.unseen(self.seen())
            if not unseen:
                return True
            if self._reveal(request):
                continue
            if asked:
                return False
            asked = self._ask(request, unseen)
        return not request.unseen(self.seen())

    def _ask(self, request: SealedAction, unseen: Sequence[str]) -> bool:
        """Ask the user for what ``request`` still needs; whether the agent asked for details.

        By default it asks for the values at ``unseen``; a domain may first ask what else the
        user needs (False: the user then says it, and the agent looks again).
        """
        self._ask_unseen(unseen)
        self.user.tell(request, "details")
        return True

    def _ask_unseen(self, paths: Sequence[str]) -> None:
        """The agent asks the user for the values at ``paths`` (by what they are, not by path)."""
        asks = list(dict.fromkeys(what_is(path) for path in paths))
        self.dialogue.assistant(say(self.rng, ASK_DETAILS, asks=listed(asks)))

    def _reveal(self, request: SealedAction) -> bool:
        """Make one look-up that shows a value ``request`` needs; whether one was made."""
        dialogue = self.dialogue
        seen = self.seen()
        lacking = len(request.unseen(seen))
        pending = self.user.pending()
        asked = [r for r in pending if r.symbol == FunctionalSymbol.READ]
        candidates = [(r, True) for r in asked if r.requestor == "assistant"]
        candidates += [
            (SealedAction(c.name, "assistant", c.arguments, self.domain, self.flow), False)
            for c in self._lookups(seen)
        ]
        for candidate, wished in candidates:
            try:
                call = candidate.open(seen)
            except Unseen:
                continue
            shown = dialogue.state.execute(call.model_copy(update={"id": "probe"}))
            probe = ToolMessage(
                id="probe", role="tool", content=shown.content or "", requestor="assistant"
            )
            if len(request.unseen(with_result(seen, probe))) >= lacking:
                continue
            if wished:
                index = pending.index(candidate)
                following = pending[index + 1] if index + 1 < len(pending) else None
                # A look-up right before a write is the agent checking the record it changes:
                # it is made again there.
                if following is None or following.symbol != FunctionalSymbol.WRITE:
                    self.user.served(candidate)
            self.serve(candidate)
            return True
        return False

    def _lookups(self, seen: Seen) -> list[ToolCall]:
        """Look-ups the records the agent has seen point to (a profile's orders, a line).

        The default knows none; a domain names them. Each must take only values the agent
        has seen; it is made only if it shows a value a request needs.
        """
        return []
