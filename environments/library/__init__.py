"""A city library's patron-services desk: loans, holds, fines and lost items.

A domain written here in τ²-bench's shape, with no programmatic Generator or Teacher: its
database (:mod:`.data_model`, built from the tables in :mod:`.data`), tools (:mod:`.tools`),
policy (``policy.md``) with its refusal rules as a policy model (:mod:`.policy`), environment
constructor and task loaders (:mod:`.environment`), official tasks (``tasks.json``,
``split_tasks.json``), the seed ontology (``ontology.yaml``), the choice parameters of the
information-flow gate (:mod:`.flow`) and rule sentences (:mod:`.rules`). ``docs/domains.md``
walks through it as the example of bringing your own domain.
"""

from importlib import resources

from evosyn.environments.library import flow, policy, rules
from evosyn.environments.library.data_model import LibraryDB
from evosyn.environments.library.domain import KNOWLEDGE, make_domain, stock_environment
from evosyn.environments.registry import DomainPlugin, policy_on, register

PLUGIN = register(
    DomainPlugin(
        name="library",
        make_domain=make_domain,
        stock_environment=stock_environment,
        ontology=resources.files(__name__) / "ontology.yaml",
        violation=policy_on(LibraryDB, policy.violation),
        rules=rules.rules,
        flow=flow.RULES,
        people=("patrons",),
        payment_rules=policy.PAYMENT_RULES,
    )
)

__all__ = ["KNOWLEDGE", "PLUGIN", "make_domain"]
