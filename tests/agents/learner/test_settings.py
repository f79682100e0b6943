"""Each learner kind's own settings: declared with the kind, validated by the chosen kind.

A learner outside the repository declares and registers its kind from the entry-point group
``evosyn.learner``; the plug-in here is a distribution written into a temporary folder on
``sys.path``.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from evosyn import kinds
from evosyn.agents.learner import LEARNERS, SimulatedSettings
from evosyn.agents.learner.settings import ICLSettings, RLSettings, SFTSettings
from evosyn.agents.roles import build_roles
from evosyn.config import CampaignConfig, ConfigError, LearnerSection, load_config
from evosyn.resume import config_changes

PLUGIN = '''
"""A learner kind from outside evosyn, with one setting of its own."""

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.learner import LEARNERS, SimulatedLearner
from evosyn.config import LearnerSection
from evosyn.kinds import Kind, declare


class EchoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    loudness: int = Field(default=1, ge=1, description="How loud it echoes.")


class EchoLearner(SimulatedLearner):
    name = "echo"

    def __init__(self, cfg):
        super().__init__(LearnerSection(), cfg.campaign.seed)
        self.loudness = cfg.agents.learner.kind_settings(EchoSettings).loudness


declare("learner", Kind("echo", settings=EchoSettings))


@LEARNERS.register("echo")
def _echo(cfg):
    return EchoLearner(cfg)
'''


def _load(*overrides: str) -> CampaignConfig:
    return load_config(None, list(overrides), environ={})


def _error(*overrides: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(*overrides)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def echo_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on ``sys.path`` whose entry points register learner ``echo`` and fail."""
    (tmp_path / "evosyn_echo").mkdir()
    (tmp_path / "evosyn_echo" / "__init__.py").write_text(PLUGIN)
    info = tmp_path / "evosyn_echo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evosyn-echo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [evosyn.learner]
            echo = evosyn_echo
            broken = evosyn_no_such_module
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # The catalog and the registry are the process's: a later test must not find the plug-in.
    monkeypatch.setitem(kinds._KINDS, "learner", dict(kinds._KINDS["learner"]))
    yield
    LEARNERS._entries.pop("echo", None)
    sys.modules.pop("evosyn_echo", None)


def test_each_kind_reads_its_own_settings_typed_from_the_flat_section() -> None:
    sft = _load(
        "agents.learner.kind=sft", "agents.learner.recipe={model: m}", "agents.learner.trials=2"
    )
    assert sft.agents.learner.trials == 2
    own = sft.agents.learner.kind_settings(SFTSettings)
    assert own.recipe == {"model": "m"} and own.serve_port == 8000
    # The section dumps, and a campaign stores, every setting of the kind flat, as before.
    dumped = sft.agents.learner.model_dump()
    assert dumped["recipe"] == {"model": "m"} and dumped["train_command"][0] == "llamafactory-cli"
    assert "weaknesses" not in dumped
    with pytest.raises(TypeError, match="kind 'sft' has no RLSettings"):
        sft.agents.learner.kind_settings(RLSettings)
    assert (
        _load("agents.learner.kind=icl").agents.learner.kind_settings(ICLSettings).demonstrations
        == 3
    )
    simulated = LearnerSection(mastery_scale=5.0).kind_settings(SimulatedSettings)
    assert simulated.mastery_scale == 5.0 and simulated.weaknesses == []


def test_a_key_no_setting_of_the_kind_declares_fails_in_one_line() -> None:
    message = _error("agents.learner.kind=sft", "agents.learner.recpie={}")
    assert message.startswith("config error: agents.learner: unknown key 'recpie' for kind 'sft'")
    assert "recipe" in message and "trials" in message
    assert _error("agents.learner.kind=sft", "agents.learner.serve_port=0").startswith(
        "config error: agents.learner.serve_port: Input should be greater than or equal to 1"
    )


def test_a_key_of_another_kind_names_the_kind_that_owns_it() -> None:
    assert _error("agents.learner.recipe={model: m}") == (
        "config error: agents.learner: 'recipe' is a setting of kind 'sft', not of kind "
        "'simulated' (drop it, or set it to {}, its default, where an override switches the kind)"
    )
    assert "of kind 'rl' and 'sft'" in _error("agents.learner.serve_port=9000")
    # Another kind's default configures nothing: an override that switches the kind clears
    # what the base config set for the old one (deployments/experiments/airline-real.yaml).
    cleared = _load("agents.learner.kind=sft", "agents.learner.weaknesses=[]")
    assert "weaknesses" not in cleared.agents.learner.model_dump()


def test_the_programmatic_teachers_slip_rate_is_its_own_setting() -> None:
    from evosyn.agents.teacher.base import mistake_rate

    assert mistake_rate(_load("agents.teacher.mistake_rate=0.2")) == 0.2
    assert mistake_rate(_load("agents.teacher.kind=llm")) == 0.0
    assert _error("agents.teacher.kind=llm", "agents.teacher.mistake_rate=0.2").startswith(
        "config error: agents.teacher: 'mistake_rate' is a setting of kind 'programmatic', "
        "not of kind 'llm'"
    )


def test_a_resume_compares_the_kinds_settings_and_lets_the_dispatch_change() -> None:
    stored = _load("agents.learner.kind=sft").model_dump(mode="json")
    waits = _load("agents.learner.kind=sft", "agents.learner.worker_wait_s=5")
    assert config_changes(stored, waits) == []
    port = _load("agents.learner.kind=sft", "agents.learner.serve_port=9000")
    assert config_changes(stored, port) == ["agents.learner.serve_port: 8000 -> 9000"]


def test_a_learner_from_an_entry_point_registers_with_its_own_settings(echo_plugin: None) -> None:
    assert "echo" in LEARNERS.names()
    cfg = _load("agents.learner.kind=echo", "agents.learner.loudness=3")
    learner = build_roles(cfg).learner
    assert learner.name == "echo" and learner.loudness == 3
    assert cfg.agents.learner.model_dump()["loudness"] == 3
    assert _error("agents.learner.kind=echo", "agents.learner.loudnes=3") == (
        "config error: agents.learner: unknown key 'loudnes' for kind 'echo'; it accepts "
        "checkpoint_prefix, concurrency, dispatch, infra_retries, kind, loudness, max_steps, "
        "run_timeout_s, trials, worker_wait_s"
    )
    assert _error("agents.learner.kind=broken") == (
        "config error: agents.learner.kind: entry point 'broken' of evosyn.learner "
        "(evosyn_no_such_module) failed to load: ModuleNotFoundError: No module named "
        "'evosyn_no_such_module' (got 'broken')"
    )
