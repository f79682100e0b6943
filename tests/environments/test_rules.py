"""Each domain's feasibility rule in sentences: every rule id its checks give is stated by a
sentence and returned for some random selection, and no sentence states an id the checks no
longer give."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.kit.rules import unstated
from evosyn.environments.registry import DOMAIN_PACKAGES, domain_plugin
from evosyn.records import Blueprint
from evosyn.space import seed_space

#: Random selections drawn per domain: every rule shows up well before this.
DRAWS = 20_000


def found_rules(domain: str) -> Counter[str]:
    """The rule ids of every conflict of random selections over the seed space and every
    factor a Generator can realize, with their counts; checks that the first conflict's reason
    is what ``infeasible`` gives."""
    plugin = domain_plugin(domain)
    factors = [
        (f.name, f.values, Blueprint.CARDINALITY.get(f.name, (f.min_select, f.max_select)))
        for f in seed_space(domain, "rules").active_factors
    ] + [(name, f.values, (0, 1)) for name, f in {**REALIZABLE, **plugin.realizable}.items()]
    rng = random.Random(0)
    found: Counter[str] = Counter()
    for _ in range(DRAWS):
        selections = {}
        for name, values, (lo, hi) in factors:
            k = rng.randint(lo, hi)
            if k:
                selections[name] = rng.sample(values, k)
        conflicts = plugin.checks.conflicts(selections)
        assert plugin.infeasible(selections) == (conflicts[0].reason if conflicts else None)
        found.update(c.rule for c in conflicts)
    return found


@pytest.mark.parametrize("domain", DOMAIN_PACKAGES)
def test_every_rule_of_the_feasibility_checks_is_stated_and_given(domain: str) -> None:
    plugin = domain_plugin(domain)
    rules = plugin.rules()
    found = found_rules(domain)
    assert unstated(rules, plugin.checks.ids) == [], "rules no sentence states"
    stated = {i for rule in rules for i in rule.ids}
    assert sorted(stated - set(plugin.checks.ids)) == [], "sentences stating no rule"
    assert sorted(set(plugin.checks.ids) - set(found)) == [], "rules no selection breaks"


def test_a_count_table_names_what_each_write_count_allows() -> None:
    [table] = [r for r in domain_plugin("airline").rules() if r.text.startswith("Write counts")]
    assert "refund_or_compensation/fulfill {1: medium/hard; 2: hard; 3-4: hard}" in table.text
    assert "flight_cancellation/refuse {0: easy/medium/hard}" in table.text
