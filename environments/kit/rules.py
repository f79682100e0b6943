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

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.kit.grounding import (
    PROPOSAL_CHALLENGES,
    REALIZABLE,
    first,
    proposal_conflict,
)
from evosyn.environments.registry import Feasibility

#: The expected outcomes a programmatic Generator grounds.
OUTCOMES = ("fulfill", "refuse")


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


# ------------------------------------------------------------ checks the grounded domains share

Computations = Callable[[str, str], Collection[str]]
"""The ``computation`` values a (family, outcome) can realize."""

#: The computations that make a ``calculate`` call.
CALCULATED = frozenset({"aggregate", "conditional"})


def opening_rules(checks: Checks, *, first_read: str, unvaried: Collection[str]) -> None:
    """Registers the rules every grounded domain checks first: ``no_reads``, ``proposal``.

    Args:
        checks: The domain's checks.
        first_read: What every task's first read does ("identifies the customer with a
            read"), the tail of the ``no_reads`` reason.
        unvaried: The families whose write leaves the user nothing to choose otherwise
            (:func:`~evosyn.environments.kit.grounding.proposal_conflict`).
    """

    @checks.rule("no_reads")
    def _no_reads(a: Asked) -> str | None:
        if a.reads == "0":
            return f"num_read=0 is impossible: every task {first_read}"
        return None

    @checks.rule("proposal")
    def _proposal(a: Asked) -> str | None:
        return proposal_conflict(a.selections, unvaried)


def computation_rule(checks: Checks, families: Collection[str], computations: Computations) -> None:
    """Registers ``computation``: a computation the (family, outcome) cannot realize."""

    @checks.rule("computation")
    def _computation(a: Asked) -> str | None:
        c = a.computation
        if a.known(families) and c is not None and c not in computations(a.family, a.outcome):
            return f"computation={c} cannot be realized by {a.family}/{a.outcome}"
        return None


def calculation_rules(
    checks: Checks,
    families: Collection[str],
    computations: Computations,
    *,
    pattern: str,
    prefix: str,
) -> None:
    """Registers ``{prefix}_without_computation`` and ``{prefix}_without_sum``.

    The tool-use ``pattern`` of a calculation needs a computation other than ``none``, and a
    (family, outcome) whose computations include one that calculates.
    """

    @checks.rule(f"{prefix}_without_computation")
    def _without_computation(a: Asked) -> str | None:
        if a.known(families) and pattern in a.patterns and a.computation == "none":
            return f"tool_use_pattern={pattern} conflicts with computation=none"
        return None

    @checks.rule(f"{prefix}_without_sum")
    def _without_sum(a: Asked) -> str | None:
        if (
            a.known(families)
            and pattern in a.patterns
            and not set(computations(a.family, a.outcome)) & CALCULATED
        ):
            return f"tool_use_pattern={pattern} has nothing to compute in {a.family}/{a.outcome}"
        return None


@dataclass(frozen=True)
class Rule:
    """One sentence of a domain's feasibility rule."""

    text: str
    """The rule as a prompt states it."""
    ids: tuple[str, ...]
    """The ids of the checks' rules it states."""


def unstated(rules: Sequence[Rule], ids: Iterable[str]) -> list[str]:
    """The rule ids among ``ids`` that no sentence states."""
    stated = {i for rule in rules for i in rule.ids}
    return sorted(set(ids) - stated)


def listing(values: Iterable[str]) -> str:
    """``a, b or c``."""
    items = list(values)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def no_reads_sentence(first_read: str) -> Rule:
    """The sentence of ``no_reads``.

    ``first_read`` says what every task's first look-up does ("looks the caller up first").
    """
    return Rule(f"num_read is never 0: every task {first_read}.", ("no_reads",))


def proposal_sentence(detail: str, unvaried: Iterable[str]) -> Rule:
    """The sentence of ``proposal``.

    ``detail`` is what a caller leaves open to the agent's proposal ("the refuel amount a
    caller leaves open"), ``unvaried`` the families without it.
    """
    return Rule(
        f"interaction_challenge {listing(PROPOSAL_CHALLENGES)} answers the agent's proposal "
        f"of a write ({detail}): choose at most one of them, and never with "
        f"expected_outcome=refuse, num_write=0 or task_family {listing(unvaried)}.",
        ("proposal",),
    )


def computation_sentence(infeasible: Feasibility, families: Sequence[str]) -> Rule:
    """The sentence of ``computation``.

    It lists the values each (family, outcome) can take, found by asking ``infeasible``.
    """
    return Rule(
        "computation takes only the values its task_family/expected_outcome can realize: "
        + by_family(infeasible, families, OUTCOMES, "computation", REALIZABLE["computation"].values)
        + ".",
        ("computation",),
    )


def calculation_sentence(pattern: str, prefix: str) -> Rule:
    """The sentence of :func:`calculation_rules` (stated after :func:`computation_sentence`)."""
    return Rule(
        f"tool_use_pattern={pattern} needs something to compute: never with computation=none, "
        "and only where the computation list above allows aggregate or conditional.",
        (f"{prefix}_without_computation", f"{prefix}_without_sum"),
    )


def by_family(
    infeasible: Feasibility,
    families: Sequence[str],
    outcomes: Sequence[str],
    factor: str,
    values: Sequence[str],
) -> str:
    """``family/outcome: a, b; ...``: the values of ``factor`` each (family, outcome) can take.

    Found by asking ``infeasible`` with nothing else selected; a (family, outcome) the rule
    refuses outright is left out.
    """
    parts = []
    for family in families:
        for outcome in outcomes:
            base = {"task_family": [family], "expected_outcome": [outcome]}
            if infeasible(base) is not None:
                continue
            fits = [v for v in values if infeasible({**base, factor: [v]}) is None]
            parts.append(f"{family}/{outcome}: {', '.join(fits) or 'none'}")
    return "; ".join(parts)


def write_counts(
    infeasible: Feasibility,
    families: Sequence[str],
    outcomes: Sequence[str],
    difficulties: Sequence[str],
    ids: tuple[str, ...],
) -> Rule:
    """The difficulty profiles each ``num_write`` bucket leaves a (family, outcome), as a rule.

    Found by asking ``infeasible`` itself; the rule states the count rules ``ids``. Counts
    are where a plan most often goes wrong (a hard-only write count under a weight on
    ``medium``): the table saves the model adding up reads, writes and calls.
    """
    parts = []
    for family in families:
        for outcome in outcomes:
            cells = []
            for writes in BUCKETS:
                fits = [
                    d
                    for d in difficulties
                    if infeasible(
                        {
                            "task_family": [family],
                            "expected_outcome": [outcome],
                            "num_write": [writes],
                            "difficulty_profile": [d],
                        }
                    )
                    is None
                ]
                if fits:
                    cells.append(f"{writes}: {'/'.join(fits)}")
            if cells:
                parts.append(f"{family}/{outcome} {{{'; '.join(cells)}}}")
    return Rule(
        "Write counts and difficulty must fit together (num_write: the difficulty_profile "
        "values it allows, per task_family/expected_outcome; a bucket or a pair left out is "
        "impossible): " + ", ".join(parts) + ".",
        ids,
    )


def difficulties() -> str:
    """``easy 2-3, medium 4-5, hard 6+``: the tool calls of each difficulty profile."""
    return ", ".join(
        f"{name} {lo}+" if hi == OPEN_END else f"{name} {lo}-{hi}"
        for name, (lo, hi) in DIFFICULTY_CALLS.items()
    )
