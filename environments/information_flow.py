"""Information flow: the gold agent acts only on what it has seen, and the user owns their choices.

A trajectory is worth imitating only if a model could have produced it from what τ²-bench shows
an agent: its system prompt (instructions and policy), the user's words and the results of its
own tool calls. The user's own tool calls (telecom's phone) and their results reach the user,
not the agent. This module reads a trajectory in order and names every break of that rule,
whichever Teacher wrote it:

* **grounding** (:func:`flow_breaks`): every string argument of an agent's tool call (an id, a
  name, a date, a code) was said by the user or appeared in the agent's prompt or an earlier
  result of its own tools. Values of a tool's schema ``enum`` are vocabulary, not facts; numbers
  may be computed; a date said in words ("May 26", "the 26th") or within a week of a date the
  agent read grounds its ISO form; a domain may declare aliases (an airport code's city).
* **choices**: an argument a domain declares as the user's choice (:class:`Choice`: who
  travels, the cabin, the bags, the card, which items, which line, how much data, ...) must have
  been named by the user in their own turns before the call, in one of the forms the domain
  gives for that value (a card by its last four digits or its kind, a line by its phone number,
  a record by what tells it from its siblings). An agent that picks a card from the profile and
  is told "yes" chose for the user, unless it named the card to them first and the choice is
  one the domain lets the agent propose.
* **procedure** (:func:`procedure_breaks`, :func:`repeat_breaks`): a write the domain says
  moves money is proposed with an amount before the user's "yes"; an identifier the user gave
  is not asked for again.
* **facts** (:func:`fact_breaks`): the amount a proposal states is one the write moved.
* **failures** (:func:`failure_breaks`): a write that returned an error, and that no later call
  made after all, is reported to the user as not done.
* **what a customer hears** (:func:`hearing_breaks`): no internal id the user never said
  (payment method, user, item, line ids; the domain names the keys), no template debris.

Each break is one line naming the call, the argument and the reason; synthesis rejects the
trajectory with it and hands it to Repair like any verifier failure.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from evosyn.environments.base import FunctionalSymbol, Tau2Domain
from evosyn.environments.spoken_forms import (
    ISO_DATE,
    date_forms,
    money_forms,
    normalize,
    number_forms,
    said,
)

#: Debris of a template: "(s)" plurals, a space before an apostrophe, one-decimal money.
_DEBRIS = (
    (re.compile(r"\w\(s\)"), "a '(s)' plural"),
    (re.compile(r"\w \'(?:d|s|ll|ve|re|m)\b"), "a space before an apostrophe"),
    (re.compile(r"\$\d+\.\d(?!\d)"), "an amount with one decimal"),
    (re.compile(r"\{\w+\}"), "an unfilled placeholder"),
)
_AMOUNT = re.compile(r"\$\s?\d|\b\d+(?:\.\d+)?\s?(?:dollars|usd|gb)\b", re.IGNORECASE)


@dataclass
class Seen:
    """What the agent has seen so far, and what the user has said so far."""

    #: The agent's view: system prompt, user turns and its own tool results (normalized).
    agent: list[str] = field(default_factory=list)
    #: The user's turns (raw).
    user: list[str] = field(default_factory=list)
    #: Parsed results of the agent's tool calls, in order.
    records: list[object] = field(default_factory=list)
    #: The agent's messages to the user so far (raw).
    told: list[str] = field(default_factory=list)
    #: What the agent had said just before each of ``user`` (raw; "" where nothing).
    asked: list[str] = field(default_factory=list)
    _last_agent: str = ""
    #: Every JSON object inside ``records``, outermost first, in the order seen.
    _inner: list[Mapping[str, object]] = field(default_factory=list)

    def add(self, message: Message) -> None:
        """Take in ``message`` if the agent sees it."""
        if isinstance(message, SystemMessage) and message.content:
            self.agent.append(normalize(message.content))
        elif isinstance(message, UserMessage) and message.content:
            self.agent.append(normalize(message.content))
            self.user.append(message.content)
            self.asked.append(self._last_agent)
            self._last_agent = ""
        elif isinstance(message, AssistantMessage) and message.content:
            self._last_agent = f"{self._last_agent} {message.content}".strip()
            self.told.append(message.content)
        elif isinstance(message, ToolMessage) and message.requestor == "assistant":
            self.agent.append(normalize(message.content or ""))
            with contextlib.suppress(json.JSONDecodeError):
                record = json.loads(message.content or "")
                self.records.append(record)
                self._inner += records_in(record)

    @property
    def agreed(self) -> str:
        """The agent's words the user's latest turn answered ("" before any)."""
        return self.asked[-1] if self.asked else ""

    def agent_saw(self, forms: Iterable[str]) -> bool:
        """Whether any of ``forms`` is in the agent's view (plain substring, normalized)."""
        return any(normalize(f) and normalize(f) in text for f in forms for text in self.agent)

    def user_said(self, forms: Iterable[str]) -> bool:
        """Whether the user said any of ``forms`` (whole words)."""
        forms = list(forms)
        return any(said(forms, text) for text in self.user)

    def record_of(self, value: str) -> Mapping[str, object] | None:
        """The fullest record seen that ``value`` identifies (its ``*id`` field or its key).

        A record that only refers to the id (a payment in a reservation's history) has fewer
        fields than the record of the thing itself (the saved payment method); the latest of
        the fullest wins.
        """
        best: Mapping[str, object] | None = None
        for _, match in self.records_of(value):
            if best is None or len(match) > len(best):
                best = match
        return best

    def records_of(self, value: str) -> list[tuple[str, Mapping[str, object]]]:
        """Every record seen that ``value`` identifies, latest first, with the key naming it."""
        found: list[tuple[str, Mapping[str, object]]] = []
        for inner in reversed(self._inner):
            for key, field_value in inner.items():
                if field_value == value and (key == "id" or key.endswith("_id")):
                    found.append((key, inner))
                elif (
                    key == value
                    and isinstance(field_value, Mapping)
                    and value not in field_value.values()
                ):
                    # A record keyed by its id that does not repeat it (a saved payment method).
                    found.append(("id", {"id": key, **field_value}))
        return found

    def others_like(self, key: str, like: Mapping[str, object]) -> list[Mapping[str, object]]:
        """Records seen of the same shape as ``like`` that another value of ``key`` identifies.

        The other items of an order, the other reservations of a profile: the records a word
        must tell ``like`` apart from.
        """
        shape = set(like)
        return [
            inner
            for inner in self._inner
            if key != "id"
            and set(inner) == shape
            and isinstance(inner.get(key), str)
            and inner.get(key) != like.get(key)
        ]


def records_in(value: object) -> Iterator[Mapping[str, object]]:
    """Every JSON object inside ``value``, outermost first."""
    if isinstance(value, Mapping):
        yield value
        for inner in value.values():
            yield from records_in(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from records_in(inner)


Forms = Callable[[object, Mapping[str, object], Seen], Sequence[str]]
"""The words by which a user states a choice's ``value`` (given the call's arguments and what
the agent has seen); an empty list means the value needs no words (nothing to choose)."""


def literal(value: object, arguments: Mapping[str, object], seen: Seen) -> list[str]:
    """The value itself (a date also in words, a number also as a word)."""
    if isinstance(value, str):
        return date_forms(value)
    return number_forms(value)


Say = Callable[[object, Mapping[str, object], Seen], str]
"""How a user states a choice's value in words (the programmatic Teacher's user side)."""


def spoken(value: object, arguments: Mapping[str, object], seen: Seen) -> str:
    """The value as a person says it: underscores as spaces, whole numbers without ".0"."""
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return str(value).replace("_", " ")


@dataclass(frozen=True)
class Choice:
    """An argument of a domain's tool that the user owns.

    ``argument`` is a path: ``cabin``, ``item_ids[]`` (each element), ``payment_methods[].
    payment_id`` (a field of each element).
    """

    tool: str
    argument: str
    #: What the choice is, for the reason ("the cabin").
    what: str
    forms: Forms = literal
    #: The agent's question for it ("which cabin you'd like"); empty: the user volunteers it.
    ask: str = ""
    say: Say = spoken
    #: Whether the agent may propose the value (in the customer's words, never by its id) and
    #: take the user's "yes" as their choice, as with the one method a refund may go to.
    proposable: bool = False
    #: Whether a caller may leave it open for the agent to propose (a card, an amount): the
    #: detail a preference change or a late condition then settles.
    open_detail: bool = False


def unnamed(
    rules: FlowRules, call_name: str, arguments: Mapping[str, object], seen: Seen
) -> list[tuple[Choice, object]]:
    """The choices of a call the user has not named yet, with their values, in rule order."""
    missing: list[tuple[Choice, object]] = []
    for choice in rules.choices:
        if choice.tool != call_name:
            continue
        for _, value in _at(arguments, choice.argument):
            forms = choice.forms(value, arguments, seen)
            if not forms or seen.user_said(forms):
                continue
            words = [f for f in forms if f != str(value)]  # the id itself is no customer word
            if choice.proposable and seen.agreed and words and said(words, seen.agreed):
                continue
            missing.append((choice, value))
    return missing


def ungrounded(
    domain: Tau2Domain,
    name: str,
    arguments: Mapping[str, object],
    seen: Seen,
    aliases: Mapping[str, tuple[str, ...]] | None = None,
) -> list[tuple[str, str]]:
    """(path, value) of the string arguments of an agent call the agent has not seen.

    A value is seen when it, or one of its ``aliases`` (an airport code's city), or, for a
    date, the date in words, is in what the agent saw.
    """
    aliases = aliases or {}
    spec = domain.tool_spec(name, "assistant")
    if spec is None or spec.symbol in (FunctionalSymbol.COMPUTE, FunctionalSymbol.TRANSFER):
        return []  # an unknown tool is the schema check's; arithmetic and a hand-off summary
    vocabulary = _enums(spec.parameters)
    return [
        (path, value)
        for path, value in _leaves(arguments)
        if isinstance(value, str)
        and value
        and value not in vocabulary
        and len(value.split()) < _PROSE_WORDS
        and not seen.agent_saw([*date_forms(value), *aliases.get(value, ())])
        and not _near_a_seen_date(value, seen)
    ]


#: How far a date may lie from one the agent saw: "a day later", "the week after".
_DATE_REACH = datetime.timedelta(days=7)


def _near_a_seen_date(value: str, seen: Seen) -> bool:
    """Whether ``value`` is a date within a week of an ISO date the agent has seen.

    A person moves a trip "a day or two" or "to the next day"; the agent works the date out
    from the one it read, and that is grounded arithmetic, not an invention.
    """
    if not ISO_DATE.match(value):
        return False
    day = datetime.date.fromisoformat(value)
    for text in seen.agent:
        for found in re.findall(r"\b\d{4}-\d{2}-\d{2}\b", text):
            with contextlib.suppress(ValueError):
                if abs(datetime.date.fromisoformat(found) - day) <= _DATE_REACH:
                    return True
    return False


#: A string argument of this many words is the agent's own prose (a reason, a summary).
_PROSE_WORDS = 5


def _at(value: object, path: str) -> Iterator[tuple[str, object]]:
    """The values at ``path`` inside ``value`` with their concrete paths."""
    head, _, rest = path.partition(".")
    many = head.endswith("[]")
    key = head[:-2] if many else head
    if not isinstance(value, Mapping) or key not in value:
        return
    inner = value[key]
    items = list(enumerate(inner)) if many and isinstance(inner, list) else [(None, inner)]
    for index, item in items:
        where = key if index is None else f"{key}[{index}]"
        if rest:
            for sub, found in _at(item, rest):
                yield f"{where}.{sub}", found
        else:
            yield where, item


def _leaves(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _leaves(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _leaves(inner, f"{path}[{index}]")
    else:
        yield path, value


def _enums(schema: object) -> set[str]:
    """Every ``enum`` value anywhere in a JSON schema."""
    found: set[str] = set()
    for record in records_in(schema):
        values = record.get("enum")
        if isinstance(values, list):
            found |= {str(v) for v in values}
    return found


def _short(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class FlowRules:
    """What a domain declares for the information-flow checks (nothing: grounding only)."""

    #: Arguments the user owns.
    choices: Sequence[Choice] = ()
    #: Writes that move money, whose proposal must state an amount before the user's "yes".
    priced_writes: frozenset[str] = frozenset()
    #: Keys whose values are internal ids a customer is not told unless they said them.
    internal_ids: frozenset[str] = frozenset()
    #: Patterns of internal ids a tool may return in plain text ("certificate_4518123").
    internal_patterns: tuple[str, ...] = ()
    #: Words that ground a value the agent may translate (an airport code by its city).
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: What a caller identifies themselves or a record by: the words that ask for it (a
    #: regex) and the form of its value; asked again once the user said one, it is a repeat.
    identifiers: Mapping[str, str] = field(default_factory=dict)
    #: Those of ``identifiers`` whose form alone says what it is (an order id "#W1234567"):
    #: given whenever the user says one, named or not.
    distinctive: frozenset[str] = frozenset()


def _calls(messages: Sequence[Message]) -> Iterator[tuple[int, int, ToolCall]]:
    """(message index, call number, call) of every tool call, numbered as the verifier does."""
    number = 0
    for position, message in enumerate(messages):
        if isinstance(message, AssistantMessage | UserMessage):
            for call in message.tool_calls or []:
                yield position, number, call
                number += 1


def seen_before(messages: Sequence[Message]) -> Seen:
    """What the agent has seen after ``messages``."""
    seen = Seen()
    for message in messages:
        seen.add(message)
    return seen


def flow_breaks(domain: Tau2Domain, rules: FlowRules, messages: Sequence[Message]) -> list[str]:
    """Every agent tool-call argument not grounded in what the agent saw, or chosen for the user.

    Args:
        domain: The τ²-bench domain (its tool schemas and symbols).
        rules: The domain's choices.
        messages: The trajectory, system prompt included.
    """
    breaks: list[str] = []
    seen = Seen()
    number = 0
    for message in messages:
        for call in (
            message.tool_calls or [] if isinstance(message, AssistantMessage | UserMessage) else []
        ):
            where = f"tool call #{number} {call.name}"
            number += 1
            if call.requestor != "assistant":
                continue
            for path, value in ungrounded(domain, call.name, call.arguments, seen, rules.aliases):
                breaks.append(
                    f"flow: {where} argument {path} {_short(value)} was never said by the "
                    "user nor shown by a tool"
                )
            for choice, chosen in unnamed(rules, call.name, call.arguments, seen):
                breaks.append(
                    f"choice: {where} argument {choice.argument} {_short(chosen)}: "
                    + _unnamed_reason(choice, chosen, call.arguments, seen)
                )
        seen.add(message)
    return breaks


def _unnamed_reason(
    choice: Choice, value: object, arguments: Mapping[str, object], seen: Seen
) -> str:
    """What was missing for ``value`` to be the user's ``choice``, said so the agent can act on it.

    Either the agent named it and the user never did (a record is the user's to name), or
    the user said none of the words the agent's tool results show for it (they are listed: a
    card the user called by its brand is not named until a tool result shows that brand), or,
    where no tool result showed it, the user never named it.
    """
    forms = choice.forms(value, arguments, seen)
    words = [f for f in forms if f != str(value)]
    if not choice.proposable and any(said(forms, text) for text in seen.told):
        return (
            f"the agent named {choice.what} to the user, who never named it themselves; a yes "
            "to the agent's proposal is not their choice"
        )
    if words and seen.records_of(str(value)):
        shown = ", ".join(json.dumps(w) for w in words[:8]) + (", ..." if len(words) > 8 else "")
        return (
            f"nothing the user said names {choice.what} as the agent's tool results show it "
            f"({shown}); a name for it that no tool result shows (a brand, a nickname) does "
            "not tie the user's words to it"
        )
    return f"the user never named {choice.what}"


def procedure_breaks(
    domain: Tau2Domain, rules: FlowRules, messages: Sequence[Message]
) -> list[str]:
    """Money-moving writes whose proposal stated no amount before the user's consent."""
    breaks: list[str] = []
    for position, number, call in _calls(messages):
        if call.requestor != "assistant" or call.name not in rules.priced_writes:
            continue
        proposal = _proposal(messages, position)
        if proposal is None or not _AMOUNT.search(proposal):
            breaks.append(
                f"procedure: tool call #{number} {call.name} was agreed to without its amount "
                "(price, fee, refund or difference) in the proposal"
            )
    return breaks


def repeat_breaks(rules: FlowRules, messages: Sequence[Message]) -> list[str]:
    """Agent questions for an identifier the user had already given."""
    breaks: list[str] = []
    given: set[str] = set()
    asked = ""  # the agent's words the user is answering
    for turn, message in enumerate(messages):
        text = message.content if isinstance(message, AssistantMessage | UserMessage) else None
        if not text:
            continue
        for asking, form in rules.identifiers.items():
            # Given: a value of its form, named as such or answering a question for it (a zip
            # inside a new shipping address identifies nobody).
            named = asking in rules.distinctive or bool(
                re.search(asking, f"{asked} {text}", re.IGNORECASE)
            )
            if isinstance(message, UserMessage) and re.search(form, text) and named:
                given.add(asking)
            elif (
                isinstance(message, AssistantMessage)
                and asking in given
                and any(
                    "?" in sentence and re.search(asking, sentence, re.IGNORECASE)
                    for sentence in re.split(r"(?<=[.?!])\s+", text)
                )
            ):
                breaks.append(f"procedure: turn {turn} asks again for what the user gave")
                break
        asked = text if isinstance(message, AssistantMessage) else ""
    return breaks


def _proposal(messages: Sequence[Message], position: int) -> str | None:
    """The agent's words the user last answered before the call at ``position``.

    That is the agent text before the latest user turn preceding the call, with any agent text
    since (a recap after "go over it once more" counts too).
    """
    texts: list[str] = []
    user_seen = False
    for message in reversed(messages[:position]):
        if isinstance(message, UserMessage) and message.content:
            if user_seen and texts:
                break
            user_seen = True
        elif isinstance(message, AssistantMessage) and message.content and user_seen:
            texts.append(message.content)
        elif isinstance(message, AssistantMessage) and message.tool_calls and user_seen and texts:
            break
    return " ".join(reversed(texts)) if texts else None


def fact_breaks(rules: FlowRules, messages: Sequence[Message]) -> list[str]:
    """Money-moving writes whose proposal stated an amount the write did not move.

    What a write moved is read from its own result: the payments it added to the record's
    ``payment_history`` (a charge, a refund; their total too), a ``charge`` it reports, or
    an amount its text names. A proposal must state one of them; a write whose result shows
    no amount (nothing was charged) is not checked.
    """
    breaks: list[str] = []
    seen = Seen()
    pending: dict[str, tuple[int, ToolCall, str | None]] = {}
    number = 0
    for position, message in enumerate(messages):
        if isinstance(message, AssistantMessage | UserMessage):
            for call in message.tool_calls or []:
                if call.requestor == "assistant" and call.name in rules.priced_writes:
                    pending[call.id] = (number, call, _proposal(messages, position))
                number += 1
        if isinstance(message, ToolMessage) and message.id in pending:
            index, call, proposal = pending.pop(message.id)
            moved = _moved(message.content or "", seen)
            if (
                moved
                and proposal is not None
                and not any(said(money_forms(m), proposal) for m in moved)
            ):
                shown = ", ".join(f"${m:g}" for m in sorted(set(moved)))
                breaks.append(
                    f"fact: tool call #{index} {call.name} moved {shown}, an amount its "
                    "proposal never stated"
                )
        seen.add(message)
    return breaks


def _moved(result: str, seen: Seen) -> list[float]:
    """The amounts a write's ``result`` shows it moved (see :func:`fact_breaks`)."""
    try:
        record = json.loads(result)
    except json.JSONDecodeError:
        return [float(x) for x in re.findall(r"amount (\d+(?:\.\d+)?)", result)]
    if not isinstance(record, Mapping):
        return []
    moved: list[float] = []
    charge = record.get("charge")
    if isinstance(charge, int | float | str):
        with contextlib.suppress(ValueError):
            moved.append(round(float(charge), 2))
    history = record.get("payment_history")
    if isinstance(history, list):
        own = next((str(v) for k, v in record.items() if k.endswith("_id")), "")
        before = seen.record_of(own) if own else None
        earlier = before.get("payment_history") if before else None
        old = list(earlier) if isinstance(earlier, list) else []
        added = []
        for entry in history:
            if entry in old:
                old.remove(entry)
            elif isinstance(entry, Mapping) and isinstance(entry.get("amount"), int | float):
                added.append(float(entry["amount"]))
        moved += [abs(a) for a in added]
        if len(added) > 1:
            moved.append(abs(round(sum(added), 2)))
    return moved


#: How an agent tells a user that something did not happen: it could not, it failed or was
#: declined, a negation of its going through, of what it may do or of the change itself ("I'm
#: not able", "isn't something I'm permitted to do", "nothing has been changed").
_FAILED = re.compile(
    r"\b(?:unable|cannot|unfortunately|unsuccessful|insufficient|declined|rejected|denied"
    r"|fail(?:s|ed|ure)?|errors?|only (?:has|had|have))\b"
    r"|\b(?:could|can|ca|will|wo)(?:n't|\snot)\b"
    r"|(?:\bnot|\bnothing|n't)(?:\s[\w']+){0,3}?\s(?:able|go(?:ne)? through|work(?:ed)?"
    r"|succeed(?:ed)?|complete(?:d)?|cover(?:s|ed)?|valid|enough|allowed|accepted|possible"
    r"|eligible|permitted|been|changed|made|done)\b",
    re.IGNORECASE,
)


def failure_breaks(domain: Tau2Domain, rules: FlowRules, messages: Sequence[Message]) -> list[str]:
    """Agent writes that returned an error the agent's next words do not tell the user.

    Structural first: a call of one of the domain's writes (its ``write`` symbol) whose
    result τ²-bench marks as an error, and that no later call made (the same tool with the
    same arguments, but for the details a caller may leave open, :attr:`Choice.open_detail`:
    a retry with another card is a recovered mistake), must be reported. The report
    is everything the agent says from that result to the user's next turn; saying nothing is
    no report. Only whether the report says the write failed is read from its words: it must
    state an inability, a failure or what fell short (:data:`_FAILED`: "couldn't", "did not
    go through", "declined", "not enough"); a confirmation of the change, or moving on in
    silence, tells the user the change was made.
    """
    breaks: list[str] = []
    pending: dict[str, tuple[int, ToolCall]] = {}
    failed: list[tuple[int, int, ToolCall, str]] = []
    made: dict[tuple[str, ...], int] = {}  # a write -> position of its latest successful result
    number = 0
    for position, message in enumerate(messages):
        if isinstance(message, AssistantMessage | UserMessage):
            for call in message.tool_calls or []:
                spec = domain.tool_spec(call.name, "assistant")
                if (
                    call.requestor == "assistant"
                    and spec is not None
                    and spec.symbol == FunctionalSymbol.WRITE
                ):
                    pending[call.id] = (number, call)
                number += 1
        elif isinstance(message, ToolMessage) and message.id in pending:
            index, call = pending.pop(message.id)
            if message.error:
                failed.append((position, index, call, message.content or ""))
            else:
                made[_write_of(rules, call)] = position
    for position, index, call, result in failed:
        if made.get(_write_of(rules, call), -1) > position:
            continue
        if not _FAILED.search(_report(messages, position).replace("\u2019", "'")):
            breaks.append(
                f"failure: tool call #{index} {call.name} returned an error ({_short(result)}) "
                "and no later call of it succeeded, but the agent's next words to the user do "
                "not say it did not go through"
            )
    return breaks


def _write_of(rules: FlowRules, call: ToolCall) -> tuple[str, ...]:
    """What ``call`` writes: its tool and its arguments but for the domain's open details."""
    open_paths = {
        path
        for choice in rules.choices
        if choice.tool == call.name and choice.open_detail
        for path, _ in _at(call.arguments, choice.argument)
    }
    return (
        call.name,
        *sorted(
            f"{path}={json.dumps(value)}"
            for path, value in _leaves(call.arguments)
            if path not in open_paths
        ),
    )


def _report(messages: Sequence[Message], position: int) -> str:
    """What the agent tells the user after the message at ``position``, up to the user's turn."""
    texts: list[str] = []
    for message in messages[position + 1 :]:
        if isinstance(message, UserMessage) and message.content:
            break
        if isinstance(message, AssistantMessage) and message.content:
            texts.append(message.content)
    return " ".join(texts)


def hearing_breaks(rules: FlowRules, messages: Sequence[Message]) -> list[str]:
    """Internal ids told to a user who never said them, and template debris in agent turns."""
    breaks: list[str] = []
    seen = Seen()
    internal: set[str] = set()
    for turn, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.requestor == "assistant":
            count = len(seen.records)
            seen.add(message)
            if len(seen.records) > count:
                internal |= _internal_values(seen.records[-1], rules.internal_ids)
            for pattern in rules.internal_patterns:
                internal |= set(re.findall(pattern, message.content or ""))
            continue
        if isinstance(message, AssistantMessage) and message.content:
            text = message.content
            for value in sorted(internal):
                if value in text and not seen.user_said([value]):
                    breaks.append(f"hearing: turn {turn} tells the user the internal id {value}")
            for debris, what in _DEBRIS:
                if debris.search(text):
                    breaks.append(f"hearing: turn {turn} has {what}")
        seen.add(message)
    return breaks


def _internal_values(record: object, keys: frozenset[str]) -> set[str]:
    found: set[str] = set()
    for inner in records_in(record):
        for key, value in inner.items():
            if key in keys and isinstance(value, str) and len(value) > 3:
                found.add(value)
            elif key in keys and isinstance(value, Mapping):
                found |= {k for k in value if len(k) > 3}  # a dict keyed by ids
            elif key in keys and isinstance(value, list):
                found |= {v for v in value if isinstance(v, str) and len(v) > 3}
    return found


def gate_breaks(domain: Tau2Domain, rules: FlowRules, messages: Sequence[Message]) -> list[str]:
    """Every break of the information-flow, procedure, fact, failure and hearing rules, in order."""
    return [
        *flow_breaks(domain, rules, messages),
        *procedure_breaks(domain, rules, messages),
        *repeat_breaks(rules, messages),
        *fact_breaks(rules, messages),
        *failure_breaks(domain, rules, messages),
        *hearing_breaks(rules, messages),
    ]
