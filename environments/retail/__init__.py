"""τ²-bench retail: order cancellations, modifications, returns, exchanges and profiles.

The domain's one registration: loaders and knowledge (:mod:`.domain`), policy model
(:mod:`.policy`), programmatic Generator (:mod:`.generator`, its task builders beside it),
feasibility rule (:mod:`.feasibility`), programmatic Teacher (:mod:`.teacher`) and the seed
ontology (``ontology.yaml``).
"""

from importlib import resources

from tau2.domains.retail.data_model import RetailDB

from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.registry import DomainPlugin, policy_on, register
from evosyn.environments.retail import feasibility, flow, generator, policy, rules, teacher
from evosyn.environments.retail.domain import KNOWLEDGE, make_domain, stock_environment

PLUGIN = register(
    DomainPlugin(
        name="retail",
        make_domain=make_domain,
        stock_environment=stock_environment,
        ontology=resources.files(__name__) / "ontology.yaml",
        violation=policy_on(RetailDB, policy.violation),
        checks=feasibility.CHECKS,
        rules=rules.rules,
        generator=generator.RetailGenerator,
        teacher=teacher.RetailTeacher,
        realizable=REALIZABLE,
        flow=flow.RULES,
        people=("users",),
    )
)

__all__ = ["KNOWLEDGE", "PLUGIN", "make_domain"]
