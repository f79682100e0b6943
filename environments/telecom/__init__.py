"""τ²-bench telecom: line, billing and plan services plus on-device troubleshooting.

The domain's one registration: loaders and knowledge (:mod:`.domain`), policy model
(:mod:`.policy`), programmatic Generator (:mod:`.generator`, its task builders beside it),
feasibility rule (:mod:`.forms`), programmatic Teacher (:mod:`.teacher`) and the seed
ontology (``ontology.yaml``).
"""

from importlib import resources

from tau2.domains.telecom.data_model import TelecomDB

from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.registry import DomainPlugin, policy_on, register
from evosyn.environments.telecom import flow, forms, generator, policy, rules, teacher
from evosyn.environments.telecom.domain import KNOWLEDGE, make_domain, stock_environment

PLUGIN = register(
    DomainPlugin(
        name="telecom",
        make_domain=make_domain,
        stock_environment=stock_environment,
        ontology=resources.files(__name__) / "ontology.yaml",
        violation=policy_on(TelecomDB, policy.violation),
        checks=forms.CHECKS,
        rules=rules.rules,
        generator=generator.TelecomGenerator,
        teacher=teacher.TelecomTeacher,
        realizable=REALIZABLE,
        flow=flow.RULES,
        people=("customers",),
    )
)

__all__ = ["KNOWLEDGE", "PLUGIN", "make_domain"]
