"""A domain without a programmatic Generator or Teacher: what it offers, and the one-line error
for what it does not, wherever it is asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evosyn.agents.roles import build_roles
from evosyn.cli import app
from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.environments.registry import (
    DOMAIN_PACKAGES,
    MissingCapability,
    domain_plugin,
    domains_offering,
)

GENERATOR = "domain 'library' has no programmatic generator: set agents.generator.kind: llm"
TEACHER = "domain 'library' has no programmatic teacher: set agents.teacher.kind: llm"
LLM_ROLES = ("designer", "planner", "generator", "teacher", "reflector")


def _config(*overrides: str) -> CampaignConfig:
    return load_config(overrides=["campaign.domain=library", *overrides], environ={})


def _on_model(*overrides: str) -> CampaignConfig:
    # A model that is never called: building the roles sends nothing.
    return _config(
        "llm.default.model=openai/unused", "llm.default.api_base=http://127.0.0.1:9/v1", *overrides
    )


def test_the_library_offers_its_environment_and_no_programmatic_roles() -> None:
    plugin = domain_plugin("library")
    offered = {c: plugin.offers(c) for c in ("generator", "teacher", "checks", "flow", "violation")}
    assert offered == {
        "generator": False,
        "teacher": False,
        "checks": False,
        "flow": True,
        "violation": True,
    }
    assert plugin.realizable == {} and plugin.rules()
    # No feasibility rule: every selection can be planned.
    assert plugin.infeasible({"task_family": ["loan_renewal"]}) is None
    assert plugin.checks.conflicts({"expected_outcome": ["refuse"]}) == []
    with pytest.raises(ValueError, match="unknown domain capability"):
        plugin.offers("oracle")


def test_the_other_domains_still_offer_every_capability() -> None:
    others = [d for d in DOMAIN_PACKAGES if d != "library"]
    for capability in ("generator", "teacher", "checks"):
        assert domains_offering(capability) == others
    assert "library" in domains_offering("flow")


def test_asking_for_a_missing_capability_names_the_domain_and_the_setting() -> None:
    plugin = domain_plugin("library")
    with pytest.raises(MissingCapability) as generator:
        plugin.generator()
    with pytest.raises(MissingCapability) as teacher:
        plugin.teacher(mistake_rate=0.1)
    assert str(generator.value) == GENERATOR and str(teacher.value) == TEACHER
    assert plugin.lacking("generator") == GENERATOR
    assert domain_plugin("airline").lacking("generator") is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ((), GENERATOR),
        (("agents.generator.kind=llm",), TEACHER),
        (("agents.teacher.kind=llm",), GENERATOR),
    ],
)
def test_a_programmatic_role_on_the_library_is_a_config_error(
    overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_roles(_on_model(*overrides))
    assert str(info.value) == f"config error: {message}"


def test_the_single_agent_needs_a_model_on_the_library() -> None:
    with pytest.raises(ConfigError, match="no programmatic generator for the single agent"):
        build_roles(_config("ablations.single_agent=true"))
    assert build_roles(_on_model("ablations.single_agent=true")).generator is not None


def test_every_role_on_a_model_builds_on_the_library() -> None:
    roles = build_roles(_on_model(*(f"agents.{r}.kind=llm" for r in LLM_ROLES)))
    built = [roles.designer, roles.planner, roles.generator, roles.teacher, roles.reflector]
    assert [type(r).__name__ for r in built] == [
        "LLMDesigner",
        "LLMPlanner",
        "LLMGenerator",
        "LLMTeacher",
        "LLMReflector",
    ]


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["synth", "-d", "library", "-n", "1", "--lake", str(tmp_path)])
    assert result.exit_code == 2
    assert GENERATOR in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1
