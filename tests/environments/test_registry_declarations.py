"""What a domain's registration declares for the prompts: its people tables and amount rules.

A domain states them in its ``DomainPlugin`` or has none: the registry guesses neither a
people table from τ²-bench's names nor amount rules from the module of the policy model.
"""

from __future__ import annotations

import pytest

from evosyn.environments.airline import policy as airline_policy
from evosyn.environments.library import policy as library_policy
from evosyn.environments.registry import DomainPlugin, domain_plugin, get_domain, list_domains

DECLARED = {
    "airline": (("users",), airline_policy.PAYMENT_RULES),
    "retail": (("users",), ()),
    "telecom": (("customers",), ()),
    "mock": (("users",), ()),
    "library": (("patrons",), library_policy.PAYMENT_RULES),
}


@pytest.mark.parametrize("name", list_domains())
def test_every_domain_declares_its_people_and_amount_rules(name: str) -> None:
    plugin = domain_plugin(name)
    assert (plugin.people, tuple(plugin.payment_rules)) == DECLARED[name]


@pytest.mark.parametrize("name", list_domains())
def test_every_declared_people_table_is_a_table_of_the_database(name: str) -> None:
    tables = type(get_domain(name).blank_state().db).model_fields
    assert set(domain_plugin(name).people) <= set(tables)


def test_a_registration_that_declares_neither_has_none() -> None:
    library = domain_plugin("library")
    # The airline's policy model, whose module states PAYMENT_RULES, is not a declaration.
    plugin = DomainPlugin(
        name="library",
        make_domain=library.make_domain,
        stock_environment=library.stock_environment,
        ontology=library.ontology,
        violation=domain_plugin("airline").violation,
    )
    assert plugin.people == ()
    assert plugin.payment_rules == ()
