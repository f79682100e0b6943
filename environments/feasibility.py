"""A domain's feasibility rule as checks with ids, and in words for the LLM roles' prompts.

A domain's :class:`Checks` is the rule itself: ordered checks, each a small function that says
why a selection breaks one rule, under the rule's stable id. ``conflicts`` gives every rule a
selection breaks, so a repair turn can name them all at once; ``first`` gives the first one's
reason (the domain's ``infeasible``, what the programmatic roles ask). Its :class:`Rule` list
says the same in sentences a model can plan by, each naming the ids it states, so a test can
check that every id the checks give is stated in some sentence and that no sentence states a
rule that no longer exists.
"""

from __future__ import annotations

# Nothing of the grounding kit: the registry, which the core imports, builds these.
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

#: The expected outcomes a programmatic Generator grounds.
OUTCOMES = ("fulfill", "refuse")


def first(selections: Mapping[str, Sequence[str]], name: str) -> str | None:
    """The first selected value of ``name``, or None when nothing is selected."""
    return next(iter(selections.get(name) or []), None)


@dataclass(frozen=True)
class Conflict:
    """One rule of a domain's feasibility that a selection breaks."""

    rule: str
    """The rule's stable id (a sentence of the domain's rules states it)."""
    reason: str
    """Why the selection breaks it, naming the selected values."""


@dataclass(frozen=True)
class Asked:
    """A selection's values as feasibility checks read them."""

    selections: Mapping[str, Sequence[str]]
    """The selection itself (factor -> chosen values)."""
    family: str
    """The first ``task_family``; "" when none is selected."""
    outcome: str
    """The first ``expected_outcome``; "" when none is selected."""
    writes: str | None
    """The ``num_write`` bucket, or None."""
    reads: str | None
    """The ``num_read`` bucket, or None."""
    computation: str | None
    """The first ``computation``, or None."""
    difficulty: str | None
    """The first ``difficulty_profile``, or None."""
    patterns: frozenset[str]
    """Every selected ``tool_use_pattern``."""

    @classmethod
    def of(cls, selections: Mapping[str, Sequence[str]]) -> Asked:
        """The values ``selections`` asks for."""
        return cls(
            selections=selections,
            family=first(selections, "task_family") or "",
            outcome=first(selections, "expected_outcome") or "",
            writes=first(selections, "num_write"),
            reads=first(selections, "num_read"),
            computation=first(selections, "computation"),
            difficulty=first(selections, "difficulty_profile"),
            patterns=frozenset(selections.get("tool_use_pattern") or []),
        )

    def values(self, name: str) -> Sequence[str]:
        """Every selected value of ``name`` (none when the factor is not selected)."""
        return self.selections.get(name) or []

    def known(self, families: Collection[str]) -> bool:
        """Whether the family is one of ``families`` and the outcome one of :data:`OUTCOMES`."""
        return self.family in families and self.outcome in OUTCOMES


Check = Callable[[Asked], "str | Conflict | None"]
"""A check: why a selection breaks its rule (a reason, or a :class:`Conflict` naming which of
its rules), or None."""


@dataclass(frozen=True)
class _Registered:
    ids: tuple[str, ...]
    check: Check
    after: frozenset[str]


class Checks:
    """A domain's feasibility rule: ordered checks, each registered under its rule id(s).

    A check that assumes an earlier rule holds (a count check that reads the write bucket the
    write rules vet) names that rule in ``after``, and is skipped when it did not pass (its
    check fired, or was itself skipped; a check of several rules stands for all of them). The
    first conflict never depends on ``after``: nothing is skipped before a check fires, so it
    is the one a rule that stops at its first reason gives.
    """

    def __init__(self) -> None:
        self._checks: list[_Registered] = []

    @property
    def ids(self) -> tuple[str, ...]:
        """Every rule id a check can give, in order."""
        return tuple(i for c in self._checks for i in c.ids)

    def ids_but(self, *ids: str) -> tuple[str, ...]:
        """Every rule id registered so far except ``ids``.

        The ``after`` of a check that assumes every earlier rule but ``ids``: a rule added
        before it later is assumed too, not forgotten.

        Raises:
            ValueError: An id in ``ids`` is not registered.
        """
        registered = self.ids
        if set(ids) - set(registered):
            raise ValueError(f"rules {sorted(set(ids) - set(registered))} are not registered")
        return tuple(i for i in registered if i not in ids)

    def rule(self, *ids: str, after: Iterable[str] = ()) -> Callable[[Check], Check]:
        """Registers the decorated function as the check of rule ``ids[0]``.

        A check of several rules returns a :class:`Conflict` naming one of ``ids``.

        Raises:
            ValueError: An id is taken, or ``after`` names a rule not registered before.
        """
        after = frozenset(after)
        taken = set(self.ids)
        if not ids or taken & set(ids):
            raise ValueError(f"rule ids {ids} are empty or taken")
        if after - taken:
            raise ValueError(f"rules {sorted(after - taken)} are not registered before {ids}")

        def register(check: Check) -> Check:
            self._checks.append(_Registered(ids, check, after))
            return check

        return register

    def _scan(self, selections: Mapping[str, Sequence[str]]) -> Iterator[Conflict]:
        asked = Asked.of(selections)
        unmet: set[str] = set()
        for registered in self._checks:
            if registered.after & unmet:
                unmet.update(registered.ids)
                continue
            found = registered.check(asked)
            if found is None:
                continue
            if isinstance(found, str):
                found = Conflict(registered.ids[0], found)
            if found.rule not in registered.ids:
                raise ValueError(f"a check of {registered.ids} gave rule {found.rule!r}")
            unmet.update(registered.ids)
            yield found

    def conflicts(self, selections: Mapping[str, Sequence[str]]) -> list[Conflict]:
        """Every rule ``selections`` breaks, in check order (none: it can be realized)."""
        return list(self._scan(selections))

    def first(self, selections: Mapping[str, Sequence[str]]) -> str | None:
        """The first conflict's reason, or None (the domain's ``infeasible``)."""
        found = next(self._scan(selections), None)
        return None if found is None else found.reason


@dataclass(frozen=True)
class Rule:
    """One sentence of a domain's feasibility rule."""

    text: str
    """The rule as a prompt states it."""
    ids: tuple[str, ...]
    """The ids of the checks' rules it states."""
