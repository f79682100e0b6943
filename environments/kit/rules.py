"""The feasibility rules the grounded domains share, as checks and as sentences.

Each helper registers a shared rule on a domain's :class:`~evosyn.environments.feasibility.Checks`
or states one as a :class:`~evosyn.environments.feasibility.Rule` for the LLM roles' prompts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.feasibility import OUTCOMES, Asked, Checks, Rule
from evosyn.environments.kit.grounding import PROPOSAL_CHALLENGES, REALIZABLE, proposal_conflict
from evosyn.environments.registry import Feasibility

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
