"""A domain's feasibility rule in words, for the Designer's and the Planner's prompts.

A domain's ``infeasible`` function is the rule itself; its :class:`Rule` list says the same in
sentences a model can plan by. Each sentence names, as a pattern, the reasons ``infeasible``
returns for the combinations it forbids, so a test can check that every reason the rule
produces is stated in some sentence, and that no sentence states a rule that no longer exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evosyn.buckets import BUCKETS, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.registry import Feasibility


@dataclass(frozen=True)
class Rule:
    """One sentence of a domain's feasibility rule."""

    text: str
    """The rule as a prompt states it."""
    reasons: str
    """A regular expression matching the start of every reason ``infeasible`` gives for it."""

    def states(self, reason: str) -> bool:
        """Whether ``reason`` (a return value of ``infeasible``) is this rule's."""
        return re.match(self.reasons, reason) is not None


def unstated(rules: Sequence[Rule], reasons: Iterable[str]) -> list[str]:
    """The reasons among ``reasons`` that no rule states."""
    return sorted({r for r in reasons if not any(rule.states(r) for rule in rules)})


def listing(values: Iterable[str]) -> str:
    """``a, b or c``."""
    items = list(values)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


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
    reasons: str,
) -> Rule:
    """The difficulty profiles each ``num_write`` bucket leaves a (family, outcome), as a rule.

    Found by asking ``infeasible`` itself; the rule states the count reasons ``reasons``
    matches. Counts are where a plan most often goes wrong (a hard-only write count under a
    weight on ``medium``): the table saves the model adding up reads, writes and calls.
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
        reasons,
    )


def difficulties() -> str:
    """``easy 2-3, medium 4-5, hard 6+``: the tool calls of each difficulty profile."""
    return ", ".join(
        f"{name} {lo}+" if hi == OPEN_END else f"{name} {lo}-{hi}"
        for name, (lo, hi) in DIFFICULTY_CALLS.items()
    )
