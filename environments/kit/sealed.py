"""A user's request as the blind programmatic agent receives it: the tool seen, values sealed.

The programmatic Teacher's user side holds the task (its gold actions, cues and answers); the
agent side receives each request the user makes as a :class:`SealedAction`. The tool it maps to
is visible, as a real agent reads the intent from the user's words; its argument values open
only once every one is grounded in what the agent has seen (its prompt, the user's turns, its
own tool results) and every choice the user owns was named by them. The check is the verifier's
own information-flow gate (:func:`~evosyn.environments.information_flow.ungrounded`,
:func:`~evosyn.environments.information_flow.unnamed`), so an agent that acts on a request has,
by construction, seen every value it acts with. Opening early raises :class:`Unseen`, naming the
arguments (never their values) the agent must still look up or ask for. A step on the user's
own device (telecom's phone) is the user's call, not the agent's: it opens unchecked.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tau2.data_model.message import Message, ToolCall

from evosyn.environments import information_flow, spoken_forms
from evosyn.environments.base import FunctionalSymbol, Tau2Domain
from evosyn.environments.information_flow import Choice, FlowRules, Seen


class Unseen(Exception):
    """A sealed request was opened before the agent had seen every one of its values."""

    def __init__(self, tool: str, paths: Sequence[str]) -> None:
        super().__init__(f"{tool}: the agent has not seen {', '.join(paths)}")
        #: The arguments still unseen (or, for a choice, not named by the user), by path.
        self.paths = list(paths)


class SealedAction:
    """A request the agent may carry out only with values it has seen.

    Args:
        name: The tool the request maps to (visible).
        requestor: Who calls it: ``assistant``, or ``user`` for a step on the user's own device.
        arguments: The values, sealed until :meth:`open`.
        domain: The domain whose tool schemas the grounding check reads.
        rules: The domain's user choices (None: grounding only).
    """

    __slots__ = (
        "__arguments",
        "__domain",
        "__rules",
        "__unchosen",
        "__unseen",
        "name",
        "requestor",
        "symbol",
    )

    def __init__(
        self,
        name: str,
        requestor: Literal["user", "assistant"],
        arguments: Mapping[str, Any],
        domain: Tau2Domain,
        rules: FlowRules | None,
    ) -> None:
        self.name = name
        self.requestor = requestor
        spec = domain.tool_spec(name, requestor)
        #: What the tool does (a read, a write, a transfer, ...), as its schema says.
        self.symbol: FunctionalSymbol | None = None if spec is None else spec.symbol
        self.__arguments: dict[str, Any] = json.loads(json.dumps(dict(arguments)))
        self.__domain = domain
        self.__rules = rules
        # The last answers, by the view they were asked about (a view nobody changes after):
        # an agent asks again and again while nothing new was said.
        self.__unseen: tuple[Seen | None, list[str]] = (None, [])
        self.__unchosen: tuple[Seen | None, list[Choice]] = (None, [])

    def __repr__(self) -> str:
        return f"SealedAction({self.name!r}, sealed)"

    def unseen(self, seen: Seen) -> list[str]:
        """The arguments whose values the agent has not seen yet, by path (never the values)."""
        if self.__unseen[0] is not seen:
            paths: list[str] = []
            if self.requestor == "assistant":  # a step on the user's device is the user's call
                aliases = self.__rules.aliases if self.__rules else None
                paths = [
                    path
                    for path, _ in information_flow.ungrounded(
                        self.__domain, self.name, self.__arguments, seen, aliases
                    )
                ]
            self.__unseen = (seen, paths)
        return self.__unseen[1]

    def unchosen(self, seen: Seen) -> list[Choice]:
        """The user's choices of the request they have not named yet (what to ask them for).

        The values stay sealed: the agent learns what to ask, not the answer.
        """
        if self.__unchosen[0] is not seen:
            choices: list[Choice] = []
            if self.__rules is not None and self.requestor == "assistant":
                found = information_flow.unnamed(self.__rules, self.name, self.__arguments, seen)
                choices = list(dict.fromkeys(choice for choice, _ in found))
            self.__unchosen = (seen, choices)
        return self.__unchosen[1]

    def open(
        self,
        seen: Seen,
        *,
        waive: Sequence[Choice] = (),
        settle: Mapping[str, object] | None = None,
    ) -> ToolCall:
        """The request as a tool call, once every value is seen and every choice named.

        A choice the agent may propose in the customer's words (:attr:`Choice.proposable`)
        is settled by the user's "yes" to the proposal, so it does not hold the seal.

        Args:
            seen: What the agent has seen so far.
            waive: Choices the agent settles without the user's word (a seeded slip that
                chooses for the user, which the information-flow gate rejects). Their values
                must still be ones the agent has seen.
            settle: The agent's own values for details, by path (``payment_id``,
                ``payment_methods[0].payment_id``, ``gb_amount``): what it read from the
                user's words. The sealed values there stay sealed; the call is checked with
                the agent's values, so they too must be seen and, for a choice, named.

        Raises:
            Unseen: Naming the arguments not seen yet and the choices not named yet.
        """
        if settle:
            arguments = json.loads(json.dumps(self.__arguments))
            for path, value in settle.items():
                _put(arguments, path, value)
            own = SealedAction(self.name, self.requestor, arguments, self.__domain, self.__rules)
            return own.open(seen, waive=waive)
        unseen = [*self.unseen(seen)]
        unseen += [c.argument for c in self.unchosen(seen) if not c.proposable and c not in waive]
        if unseen:
            raise Unseen(self.name, list(dict.fromkeys(unseen)))
        return ToolCall(
            id="",
            name=self.name,
            arguments=json.loads(json.dumps(self.__arguments)),
            requestor=self.requestor,
        )


#: A step of an argument path: a key, or a key and a list index ("payment_methods[0]").
_STEP = re.compile(r"^(\w+)(?:\[(\d+)\])?$")


def _put(arguments: dict[str, Any], path: str, value: object) -> None:
    """Set ``path`` of ``arguments`` (``a``, ``a.b``, ``a[0].b``) to ``value``, where it exists."""
    node: Any = arguments
    steps = path.split(".")
    for depth, step in enumerate(steps):
        match = _STEP.match(step)
        if match is None or not isinstance(node, dict) or match.group(1) not in node:
            return  # the call has no such argument: nothing to settle
        key, index = match.group(1), match.group(2)
        last = depth == len(steps) - 1
        if index is None:
            if last:
                node[key] = value
                return
            node = node[key]
            continue
        items = node[key]
        if not isinstance(items, list) or int(index) >= len(items):
            return
        if last:
            items[int(index)] = value
            return
        node = items[int(index)]


class SealedFact:
    """A fact the user asks the agent for: the question visible, the answer sealed.

    The user side knows what it wants to learn (its instructions say so) and asks in its
    own words; the agent may state the answer only once it has seen the value, in a tool
    result or in its own earlier words (an amount it worked out from the records, such as a
    booking's total from the fares). Opening earlier raises :class:`Unseen`: the agent says it
    could not find it rather than state what it was never shown.

    Args:
        topic: What the user asks about, in the agent's words ("the total bag fee").
        value: The answer, sealed until :meth:`open`.
        said: How the answer is said in a sentence ("$89"; default ``value``).
    """

    __slots__ = ("__said", "__value", "topic")

    def __init__(self, topic: str, value: str, said: str = "") -> None:
        self.topic = topic
        self.__value = value
        self.__said = said or value

    def __repr__(self) -> str:
        return f"SealedFact({self.topic!r}, sealed)"

    def open(self, shown: Sequence[str]) -> str:
        """The answer in words, once the agent has seen it.

        Args:
            shown: What the agent has to go on: its tool results and its own earlier turns
                (the policy and the user's turns do not count: a fact of the user's records
                comes from the records, or from what the agent worked out from them).

        Raises:
            Unseen: The value is in none of ``shown``.
        """
        if _shown(self.__value, shown):
            return self.__said
        raise Unseen("answer", [self.topic])


#: A number inside a value's words ("4 free checked bag", "$89.50").
_NUMBER = re.compile(r"(?<![\w.])\$?(\d+(?:\.\d+)?)(?![\w])")


def _shown(value: str, shown: Sequence[str]) -> bool:
    """Whether ``value`` is in ``shown``: itself, or, for a count or amount in words, its numbers.

    "4 free checked bag" is shown by a calculation that came to 4.0: the words around the
    number are the question's, the number is what the agent must have found.
    """
    forms = spoken_forms.date_forms(value)
    if any(spoken_forms.said(forms, text) for text in shown):
        return True
    numbers = _NUMBER.findall(value)
    return bool(numbers) and all(
        any(spoken_forms.said(spoken_forms.number_forms(float(n)), t) for t in shown)
        for n in numbers
    )


@dataclass(frozen=True)
class UserChannel:
    """What the blind agent can do with the user: see their pending requests, ask them things.

    Every answer is a user turn added to the dialogue, in the user's words, from what their
    instructions give; the agent learns only what the dialogue then shows. The channel holds
    functions, not the user side, so the agent has no way to the task.
    """

    #: The requests the user has yet to see carried out, in order (sealed).
    pending: Callable[[], list[SealedAction]]
    #: A pending request was carried out early (a look-up made to find something out).
    served: Callable[[SealedAction], None]
    #: The user answers the agent's question about a topic of a request ("user id", ...).
    tell: Callable[[SealedAction, str], None]
    #: The user names the choices the agent just asked for.
    choose: Callable[[SealedAction, Sequence[Choice]], None]
    #: The user carries out a step on their own device and says what it showed.
    perform: Callable[[SealedAction], None]
    #: The user answers what the agent just put to them: ``proposal`` (a write's details:
    #: a yes, a change of mind, or a request to go over it), ``closing`` or ``hand-over``
    #: (nothing, or a request to go over it).
    reply: Callable[[str], None]


def with_result(seen: Seen, message: Message) -> Seen:
    """``seen`` and then ``message`` (a probe's result), leaving ``seen`` as it was."""
    probe = copy.copy(seen)
    probe.agent = [*seen.agent]
    probe.user = [*seen.user]
    probe.records = [*seen.records]
    probe._inner = [*seen._inner]
    probe.add(message)
    return probe
