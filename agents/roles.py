"""Build a campaign's role implementations from its config, by name.

Every role has a :class:`~evosyn.agents.registry.Registry` beside its protocol, and
``agents.<role>.kind`` names the implementation; the campaign's strategy and ablations then
wrap or replace the Designer and the Reflector (:mod:`evosyn.agents.ablations`). Flows and
tasks never branch on backend: they ask for the roles the config names
(:func:`evosyn.tasks.loop.roles_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Importing a role's package registers its implementations.
from evosyn.agents.ablations import ablated
from evosyn.agents.designer import DESIGNERS, Designer
from evosyn.agents.designer.strategies import FailureSource, StrategyInputs, get_strategy
from evosyn.agents.gateway import Gateway, resolve_settings
from evosyn.agents.generator import GENERATORS, Generator
from evosyn.agents.generator import single_agent as single
from evosyn.agents.generator.base import single_agent_on_model
from evosyn.agents.learner import LEARNERS, Learner
from evosyn.agents.planner import PLANNERS, Planner
from evosyn.agents.reflector import REFLECTORS, Reflector
from evosyn.agents.registry import Implementation, Registry
from evosyn.agents.teacher import TEACHERS, Teacher
from evosyn.agents.verifier import NL_JUDGES, VERIFIERS, Verifier
from evosyn.agents.verifier.realize_judge import REALIZE_JUDGES
from evosyn.config import CampaignConfig, ConfigError
from evosyn.environments.registry import domain_plugin

REGISTRIES: dict[str, Registry[Any]] = {
    "designer": DESIGNERS,
    "planner": PLANNERS,
    "generator": GENERATORS,
    "teacher": TEACHERS,
    "verifier": VERIFIERS,
    "reflector": REFLECTORS,
    "learner": LEARNERS,
}
"""Role (a key of ``agents``) -> its registry."""


@dataclass(frozen=True)
class Roles:
    """The implementations one campaign runs with; ``None`` where a role is switched off."""

    designer: Designer
    planner: Planner
    generator: Generator
    teacher: Teacher
    verifier: Verifier
    reflector: Reflector | None
    learner: Learner
    gateways: tuple[Gateway, ...] = field(default=())
    """The LLM gateways of the roles above (their ``llm_calls`` rows wait in them)."""
    space_kept: str | None = None
    """Why the space is never revised (an ablation or the strategy); None if it may be."""


def implementation(cfg: CampaignConfig, role: str) -> Implementation[Any]:
    """The implementation of ``role`` that ``cfg`` selects; ConfigError naming the key if none."""
    return REGISTRIES[role].get(getattr(cfg.agents, role).kind)


def on_model(cfg: CampaignConfig) -> frozenset[str]:
    """The roles of ``cfg`` that are scheduled as model calls (concurrently, in small chunks).

    Those whose implementation calls a model (the Verifier: when it has an NL judge); under
    ``single_agent`` the Generator and the teacher are one agent, scheduled so even when its
    programmatic stand-in runs.
    """
    roles = {role for role in REGISTRIES if implementation(cfg, role).models}
    if NL_JUDGES.get(cfg.agents.verifier.nl_judge.kind).models:
        roles.add("verifier")
    if REALIZE_JUDGES.get(cfg.agents.verifier.realize_judge.kind).models:
        roles.add("verifier")
    if cfg.ablations.single_agent:
        roles |= {"generator", "teacher"}
    return frozenset(roles)


def _check_models(cfg: CampaignConfig) -> None:
    """ConfigError naming the field to set when a role on a model has no model configured."""
    roles = ["designer", "planner", "reflector"]
    if not cfg.ablations.single_agent:
        roles += ["generator", "teacher"]
    # The single agent's own model needs no check: it is on a model only if one resolves.
    models = [m for role in roles for m in implementation(cfg, role).models]
    for role in models:
        try:
            resolve_settings(cfg.llm, role)
        except ValueError as exc:
            raise ConfigError(f"config error: llm: {str(exc).splitlines()[0]}") from None


def _check_capabilities(cfg: CampaignConfig) -> None:
    """ConfigError when a role needs a programmatic capability the domain does not register.

    The Generator's and the Teacher's ``programmatic`` kinds build the domain's own; the error
    names the domain, the capability and the setting to use instead.
    """
    plugin = domain_plugin(cfg.campaign.domain)
    if cfg.ablations.single_agent:
        # The single agent's programmatic stand-in is the domain's Generator and Teacher.
        lacking = [] if single_agent_on_model(cfg) else ["generator", "teacher"]
        for capability in lacking:
            if plugin.lacking(capability):
                raise ConfigError(
                    f"config error: domain {plugin.name!r} has no programmatic {capability} "
                    f"for the single agent: set llm.roles.{single.ROLE}.model or "
                    "llm.default.model"
                )
        return
    for role in ("generator", "teacher"):
        missing = plugin.lacking(role)
        if missing and getattr(cfg.agents, role).kind == "programmatic":
            raise ConfigError(f"config error: {missing}")


def _gateways(*roles: object) -> tuple[Gateway, ...]:
    found: dict[int, Gateway] = {}
    for role in roles:
        for gateway in getattr(role, "gateways", ()):
            found.setdefault(id(gateway), gateway)
    return tuple(found.values())


def build_roles(cfg: CampaignConfig, failures: FailureSource | None = None) -> Roles:
    """The roles ``cfg`` asks for; ConfigError naming the field if one is unavailable.

    ``failures`` reads the learner's evaluations for a strategy steered by them (``r_zero``);
    :func:`evosyn.tasks.loop.roles_for` passes the campaign lake's.
    """
    _check_models(cfg)
    _check_capabilities(cfg)

    def build(role: str) -> Any:
        return REGISTRIES[role].build(getattr(cfg.agents, role).kind, cfg)

    generator: Generator
    teacher: Teacher
    if cfg.ablations.single_agent:
        # The monolithic ablation: one agent proposes task and trajectory, for both roles.
        generator = teacher = single.single_agent(cfg)
    else:
        generator, teacher = build("generator"), build("teacher")
    # The strategy (EvoSyn or a baseline) picks the Designer and whether the space may change.
    strategy = get_strategy(cfg.campaign.strategy)
    inputs = StrategyInputs(
        build("designer"), domain_plugin(cfg.campaign.domain).infeasible, failures
    )
    designer = strategy.designer(inputs)
    planner: Planner = build("planner")
    reflector: Reflector | None = build("reflector") if strategy.revises_space else None
    learner: Learner = build("learner")
    verifier: Verifier = build("verifier")
    gateways = _gateways(designer, planner, generator, teacher, verifier, reflector, learner)
    # The ablations are role implementations: the round's tasks call what they are given.
    designed, reflector, kept = ablated(designer, reflector, cfg.ablations)
    if kept == "no Reflector" and not strategy.revises_space:
        kept = f"{strategy.name}: the space is fixed"
    campaign_id = cfg.campaign.resolved_id()
    for gateway in gateways:
        # The campaign's answers are cached for it: a resume re-sends only what was in flight.
        gateway.bind_campaign(campaign_id, cfg.lake.root)
    return Roles(
        designer=designed,
        planner=planner,
        generator=generator,
        teacher=teacher,
        verifier=verifier,
        reflector=reflector,
        learner=learner,
        gateways=gateways,
        space_kept=kept,
    )
