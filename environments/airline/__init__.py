"""τ²-bench airline: flight bookings, changes, cancellations, baggage and compensation.

The domain's one registration: loaders and knowledge (:mod:`.domain`), policy model
(:mod:`.policy`), programmatic Generator (:mod:`.generator`, its task builders beside it),
feasibility rule (:mod:`.feasibility`), programmatic Teacher (:mod:`.teacher`) and the seed
ontology (``ontology.yaml``).
"""

from importlib import resources

from tau2.domains.airline.data_model import FlightDB

from evosyn.environments.airline import feasibility, flow, generator, policy, rules, teacher
from evosyn.environments.airline.domain import KNOWLEDGE, make_domain, stock_environment
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.registry import DomainPlugin, policy_on, register

PLUGIN = register(
    DomainPlugin(
        name="airline",
        make_domain=make_domain,
        stock_environment=stock_environment,
        ontology=resources.files(__name__) / "ontology.yaml",
        violation=policy_on(FlightDB, policy.violation),
        checks=feasibility.CHECKS,
        rules=rules.rules,
        generator=generator.AirlineGenerator,
        teacher=teacher.AirlineTeacher,
        realizable=REALIZABLE,
        flow=flow.RULES,
        people=("users",),
        payment_rules=policy.PAYMENT_RULES,
    )
)

__all__ = ["KNOWLEDGE", "PLUGIN", "make_domain"]
