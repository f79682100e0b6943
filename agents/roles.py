"""Build a campaign's role implementations from its config, by name.

Flows never branch on backend: they ask this module for the roles the config names.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from evosyn.agents.ablations import ablated
from evosyn.agents.designer import Designer, LLMDesigner, ProgrammaticDesigner
from evosyn.agents.designer.strategies import FailureSource, StrategyInputs, get_strategy
from evosyn.agents.gateway import Gateway, resolve_settings
from evosyn.agents.generator import Generator
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.generator.single_agent import ProgrammaticSingleAgent, SingleAgentSynthesizer
from evosyn.agents.learner import Learner, SimulatedLearner
from evosyn.agents.planner import LLMPlanner, Planner, ProgrammaticPlanner
from evosyn.agents.reflector import (
    REALIZABLE,
    LLMReflector,
    ProgrammaticReflector,
    Reflector,
)
from evosyn.agents.teacher import Teacher
from evosyn.agents.verifier import Verifier, get_verifier
from evosyn.config import CampaignConfig, ConfigError
from evosyn.environments.registry import domain_plugin
from evosyn.records import EvalResult
from evosyn.storage.lake import Lake


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


def _unsupported(role: str, kind: str) -> ConfigError:
    return ConfigError(
        f"config error: agents.{role}.kind: {kind!r} is not available for this role yet"
    )


def _gateways(*roles: object) -> tuple[Gateway, ...]:
    found: dict[int, Gateway] = {}
    for role in roles:
        for gateway in getattr(role, "gateways", ()):
            found.setdefault(id(gateway), gateway)
    return tuple(found.values())


def _single_agent_on_model(cfg: CampaignConfig) -> bool:
    """Whether the single-agent ablation runs on a model.

    It does when a model is configured for role ``single_agent`` (or by default); otherwise
    :class:`ProgrammaticSingleAgent` stands in: the domain's Generator and teacher (with the
    configured ``mistake_rate``) as one agent, without Repair.
    """
    try:
        resolve_settings(cfg.llm, "single_agent")
    except ValueError:
        return False
    return True


def _models(cfg: CampaignConfig) -> None:
    """ConfigError naming the field to set when an LLM role has no model configured."""
    agents = cfg.agents
    roles = [
        r
        for r in ("designer", "planner", "generator", "reflector")
        if getattr(agents, r).kind == "llm"
    ]
    if cfg.ablations.single_agent and _single_agent_on_model(cfg):
        roles.append("single_agent")
    elif agents.teacher.kind == "llm":
        roles += ["teacher", "user_simulator"]
    for role in roles:
        try:
            resolve_settings(cfg.llm, role)
        except ValueError as exc:
            raise ConfigError(f"config error: llm: {str(exc).splitlines()[0]}") from None


def build_roles(cfg: CampaignConfig) -> Roles:
    """The roles ``cfg`` asks for; ConfigError naming the field if one is unavailable."""
    agents = cfg.agents
    domain = cfg.campaign.domain
    if agents.verifier.kind == "llm":
        raise _unsupported("verifier", "llm")
    for role in ("planner", "generator", "teacher"):
        if getattr(agents, role).kind == "none":
            raise ConfigError(f"config error: agents.{role}.kind: the {role} cannot be 'none'")
    single = cfg.ablations.single_agent
    _models(cfg)
    if agents.learner.kind != "simulated":
        # Real learners: the other roles as configured, the learner built from the whole config.
        import dataclasses

        from evosyn.agents.learner.icl import ICLLearner
        from evosyn.agents.learner.sft import SFTLearner

        real: Learner = SFTLearner(cfg) if agents.learner.kind == "sft" else ICLLearner(cfg)
        others = cfg.model_copy(deep=True)
        others.agents.learner.kind = "simulated"
        roles = build_roles(others)
        return dataclasses.replace(roles, learner=real, gateways=_gateways(roles, real))
    plugin = domain_plugin(domain)
    feasible = plugin.infeasible
    designer: Designer | None = None
    if agents.designer.kind == "programmatic":
        designer = ProgrammaticDesigner(feasible)
    elif agents.designer.kind == "llm":
        designer = LLMDesigner.from_config(cfg, feasible)
    planner: Planner = (
        LLMPlanner.from_config(cfg, feasible)
        if agents.planner.kind == "llm"
        else ProgrammaticPlanner(feasible)
    )
    generator: Generator
    teacher: Teacher
    if single:
        # The monolithic ablation: one call proposes task and trajectory, for both roles.
        synthesizer: Any = (
            SingleAgentSynthesizer.from_config(cfg)
            if _single_agent_on_model(cfg)
            else ProgrammaticSingleAgent(
                plugin.generator(), plugin.teacher(mistake_rate=agents.teacher.mistake_rate)
            )
        )
        generator, teacher = synthesizer, synthesizer
    else:
        generator = (
            LLMGenerator.from_config(cfg) if agents.generator.kind == "llm" else plugin.generator()
        )
        teacher = (
            _llm_teacher(cfg)
            if agents.teacher.kind == "llm"
            else plugin.teacher(mistake_rate=agents.teacher.mistake_rate)
        )
    reflector: Reflector | None = None
    # A programmatic Generator honours only the factors its domain registered; an LLM one, any.
    programmatic = not single and agents.generator.kind == "programmatic"
    if agents.reflector.kind == "programmatic":
        reflector = ProgrammaticReflector(plugin.realizable if programmatic else REALIZABLE)
    elif agents.reflector.kind == "llm":
        reflector = LLMReflector.from_config(cfg, plugin.realizable if programmatic else None)
    # The strategy (EvoSyn or a baseline) picks the Designer and whether the space may change.
    strategy = get_strategy(cfg.campaign.strategy)
    designer = strategy.designer(StrategyInputs(designer, feasible, _evaluations(cfg)))
    if not strategy.revises_space:
        reflector = None
    gateways = _gateways(designer, planner, generator, teacher, reflector)
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
        verifier=get_verifier("replay", domain=domain),
        reflector=reflector,
        learner=SimulatedLearner(agents.learner, cfg.campaign.seed),
        gateways=gateways,
        space_kept=kept,
    )


def _llm_teacher(cfg: CampaignConfig) -> Teacher:
    # Imported here: it pulls in τ²-bench's orchestrator and litellm, seconds of start-up
    # that a programmatic campaign does not need.
    from evosyn.agents.teacher.llm import LLMTeacher

    return LLMTeacher.from_config(cfg)


def _evaluations(cfg: CampaignConfig) -> FailureSource:
    lake: list[Lake] = []  # opened on first read, then reused

    def read(campaign_id: str, round: int) -> list[EvalResult]:
        if not lake:
            lake.append(Lake(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir))
        return lake[0].read(EvalResult, campaign_id, round)

    return read


@functools.cache
def _roles_from_json(config_json: str) -> Roles:
    return build_roles(CampaignConfig.model_validate_json(config_json))


def roles_for(cfg: CampaignConfig) -> Roles:
    """The roles of ``cfg``, built once per process (domains and caches are reused)."""
    return _roles_from_json(cfg.model_dump_json())
