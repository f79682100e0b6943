"""Each domain's feasibility rule in sentences: every reason the rule gives is stated, and no
sentence states a reason the rule no longer gives."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from evosyn.environments.kit.rules import unstated
from evosyn.environments.registry import DOMAIN_PACKAGES, domain_plugin
from evosyn.records import Blueprint
from evosyn.space import seed_space

#: Random selections drawn per domain: every kind of reason shows up well before this.
DRAWS = 20_000


def reasons(domain: str) -> Counter[str]:
    """The reasons ``infeasible`` gives for random selections over the seed space and every
    factor the domain's Generator can realize, with their counts."""
    plugin = domain_plugin(domain)
    factors = [
        (f.name, f.values, Blueprint.CARDINALITY.get(f.name, (f.min_select, f.max_select)))
        for f in seed_space(domain, "rules").active_factors
    ] + [(name, f.values, (0, 1)) for name, f in plugin.realizable.items()]
    rng = random.Random(0)
    found: Counter[str] = Counter()
    for _ in range(DRAWS):
        selections = {}
        for name, values, (lo, hi) in factors:
            k = rng.randint(lo, hi)
            if k:
                selections[name] = rng.sample(values, k)
        reason = plugin.infeasible(selections)
        if reason is not None:
            found[reason] += 1
    return found


@pytest.mark.parametrize("domain", DOMAIN_PACKAGES)
def test_every_reason_of_the_feasibility_rule_is_stated_by_a_sentence(domain: str) -> None:
    rules = domain_plugin(domain).rules()
    found = reasons(domain)
    assert found, "the draws found no infeasible selection"
    assert unstated(rules, found) == []
    silent = [r.text for r in rules if not any(r.states(reason) for reason in found)]
    assert silent == [], "sentences stating no reason the rule gives"


def test_a_count_table_names_what_each_write_count_allows() -> None:
    [table] = [r for r in domain_plugin("airline").rules() if r.text.startswith("Write counts")]
    assert "refund_or_compensation/fulfill {1: medium/hard; 2: hard; 3-4: hard}" in table.text
    assert "flight_cancellation/refuse {0: easy/medium/hard}" in table.text
