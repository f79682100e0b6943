"""Build a campaign's role implementations from its config, by name.

Flows never branch on backend: they ask this module for the roles the config names.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

from evosyn.agents.designer import Designer, ProgrammaticDesigner
from evosyn.agents.generator import Generator
from evosyn.agents.learner import Learner, SimulatedLearner
from evosyn.agents.planner import Feasibility, Planner, ProgrammaticPlanner
from evosyn.agents.reflector import ProgrammaticReflector, Reflector
from evosyn.agents.teacher import Teacher
from evosyn.agents.verifier import Verifier, get_verifier
from evosyn.config import CampaignConfig, ConfigError

# Programmatic synthesis per domain: agents.generator.<domain> defines ``<Name>Generator``
# and ``infeasible`` (the Planner feasibility rule); agents.teacher.<domain>, ``<Name>Teacher``.
PROGRAMMATIC_SYNTHESIS = ("airline", "retail")


def programmatic_synthesis(domain: str) -> tuple[type[Generator], type[Teacher], Feasibility]:
    """The programmatic Generator class, Teacher class and feasibility rule of ``domain``."""
    name = domain.capitalize()
    generator = importlib.import_module(f"evosyn.agents.generator.{domain}")
    teacher = importlib.import_module(f"evosyn.agents.teacher.{domain}")
    return (
        getattr(generator, f"{name}Generator"),
        getattr(teacher, f"{name}Teacher"),
        generator.infeasible,
    )


@dataclass(frozen=True)
class Roles:
    """The implementations one campaign runs with; ``None`` where a role is switched off."""

    designer: Designer | None
    planner: Planner
    generator: Generator
    teacher: Teacher
    verifier: Verifier
    reflector: Reflector | None
    learner: Learner


def _unsupported(role: str, kind: str) -> ConfigError:
    return ConfigError(
        f"config error: agents.{role}.kind: {kind!r} is not available for this role yet"
    )


def build_roles(cfg: CampaignConfig) -> Roles:
    """The roles ``cfg`` asks for; ConfigError naming the field if one is unavailable."""
    agents = cfg.agents
    domain = cfg.campaign.domain
    for role in ("designer", "planner", "generator", "teacher", "reflector"):
        kind = getattr(agents, role).kind
        if kind == "llm":
            raise _unsupported(role, kind)
    for role in ("planner", "generator", "teacher"):
        if getattr(agents, role).kind == "none":
            raise ConfigError(f"config error: agents.{role}.kind: the {role} cannot be 'none'")
    if domain not in PROGRAMMATIC_SYNTHESIS:
        raise ConfigError(
            f"config error: campaign.domain: programmatic synthesis supports "
            f"{sorted(PROGRAMMATIC_SYNTHESIS)} so far, not {domain!r}"
        )
    generator_cls, teacher_cls, feasible = programmatic_synthesis(domain)
    if agents.learner.kind != "simulated":
        # Real learners: the other roles as configured, the learner built from the whole config.
        import dataclasses

        from evosyn.agents.learner.icl import ICLLearner
        from evosyn.agents.learner.sft import SFTLearner

        real: Learner = SFTLearner(cfg) if agents.learner.kind == "sft" else ICLLearner(cfg)
        others = cfg.model_copy(deep=True)
        others.agents.learner.kind = "simulated"
        return dataclasses.replace(build_roles(others), learner=real)
    return Roles(
        designer=ProgrammaticDesigner() if agents.designer.kind == "programmatic" else None,
        planner=ProgrammaticPlanner(feasible),
        generator=generator_cls(),
        teacher=teacher_cls(),
        verifier=get_verifier("replay", domain=domain),
        reflector=ProgrammaticReflector() if agents.reflector.kind == "programmatic" else None,
        learner=SimulatedLearner(agents.learner, cfg.campaign.seed),
    )


@functools.cache
def _roles_from_json(config_json: str) -> Roles:
    return build_roles(CampaignConfig.model_validate_json(config_json))


def roles_for(cfg: CampaignConfig) -> Roles:
    """The roles of ``cfg``, built once per process (domains and caches are reused)."""
    return _roles_from_json(cfg.model_dump_json())
