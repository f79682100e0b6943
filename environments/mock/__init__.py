"""τ²-bench mock: a to-do list of users and tasks (the proof that a domain is one folder).

The domain's one registration: loaders and knowledge (:mod:`.domain`), policy model
(:mod:`.policy`), programmatic Generator and feasibility rule (:mod:`.generator`), programmatic
Teacher (:mod:`.teacher`) and the seed ontology (``ontology.yaml``).
"""

from importlib import resources

from tau2.domains.mock.data_model import MockDB

from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.mock import generator, policy, rules, teacher
from evosyn.environments.mock.domain import KNOWLEDGE, make_domain, stock_environment
from evosyn.environments.registry import DomainPlugin, policy_on, register

PLUGIN = register(
    DomainPlugin(
        name="mock",
        make_domain=make_domain,
        stock_environment=stock_environment,
        ontology=resources.files(__name__) / "ontology.yaml",
        violation=policy_on(MockDB, policy.violation),
        checks=generator.CHECKS,
        rules=rules.rules,
        generator=generator.MockGenerator,
        teacher=teacher.MockTeacher,
        # One look-up tool and no calculator: read and write counts, not computation.
        realizable={name: REALIZABLE[name] for name in ("num_write", "num_read")},
        people=("users",),
    )
)

__all__ = ["KNOWLEDGE", "PLUGIN", "make_domain"]
