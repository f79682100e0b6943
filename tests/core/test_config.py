"""Campaign config: YAML, EVOSYN_* variables and --set overrides, with one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.resume import stored_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text, "utf-8")
    return path


def test_defaults_need_no_file() -> None:
    cfg = load_config(environ={})
    assert cfg.campaign.domain == "airline" and cfg.lake.root == "lake"
    assert cfg.agents.planner.kind == "programmatic" and cfg.agents.learner.kind == "simulated"


def test_precedence_file_then_environment_then_set(tmp_path: Path) -> None:
    path = _write(tmp_path, "campaign: {rounds: 2, budget_per_round: 10, domain: retail}\n")
    env = {"EVOSYN_CAMPAIGN__ROUNDS": "4", "EVOSYN_LAKE__ROOT": "s3://b/p", "HOME": "/root"}
    cfg = load_config(path, ["campaign.rounds=5", "llm.roles.planner.temperature=0.7"], environ=env)
    assert cfg.campaign.rounds == 5
    assert cfg.campaign.budget_per_round == 10 and cfg.campaign.domain == "retail"
    assert cfg.lake.root == "s3://b/p"
    assert cfg.llm.roles["planner"].temperature == 0.7
    assert load_config(path, environ=env).campaign.rounds == 4


@pytest.mark.parametrize(
    ("text", "overrides", "env", "message"),
    [
        (
            "campaign: {rounds: many}\n",
            [],
            {},
            "config error: campaign.rounds: Input should be a valid integer",
        ),
        ("campaign: {colour: red}\n", [], {}, "config error: unknown key 'campaign.colour'"),
        ("nonsense: 1\n", [], {}, "unknown key 'nonsense'"),
        ("", ["campaign.domain=car"], {}, "campaign.domain: unknown domain 'car'"),
        (
            "",
            ["agents.planner.kind=magic"],
            {},
            "agents.planner.kind: unknown planner implementation 'magic'; "
            "choose one of ['llm', 'programmatic'] (got 'magic')",
        ),
        ("", ["campaign.rounds"], {}, "must look like key.path=value"),
        ("", [], {"EVOSYN_CAMPAIGN__SEED": "x"}, "campaign.seed: Input should be a valid integer"),
        ("", ["campaign.id=../etc"], {}, "campaign.id: must be letters"),
        ("- a list\n", [], {}, "must hold a mapping"),
        ("campaign: {rounds: [1\n", [], {}, "is not valid YAML"),
        (
            "",
            ["campaign.rounds=0"],
            {},
            "campaign.rounds: Input should be greater than or equal to 1",
        ),
    ],
)
def test_bad_config_is_one_line_naming_the_field(
    tmp_path: Path, text: str, overrides: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text), overrides, environ=env)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml", environ={})
    path = tmp_path / "b.yaml"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path, environ={})


def test_campaign_id_defaults_to_name_and_time() -> None:
    from datetime import UTC, datetime

    cfg = load_config(overrides=["campaign.name=nightly"], environ={})
    assert (
        cfg.campaign.resolved_id(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
        == "nightly-20260102-030405"
    )
    assert (
        load_config(overrides=["campaign.id=fixed"], environ={}).campaign.resolved_id() == "fixed"
    )


def test_misspelt_llm_role_is_named() -> None:
    with pytest.raises(ConfigError, match=r"llm\.roles.*unknown role 'teachr'"):
        load_config(overrides=["llm.roles.teachr.model=openai/x"])


def _flat_sections(cfg: CampaignConfig, **old: dict[str, Any]) -> dict[str, Any]:
    # A config as a campaign stored it while role sections were flat: every key of the role.
    stored = cfg.model_dump(mode="json")
    for role, keys in old.items():
        stored["agents"][role] |= keys
    return stored


def test_a_stored_config_drops_what_another_kind_owns_and_a_users_config_refuses_it(
    tmp_path: Path,
) -> None:
    chosen = load_config(None, ["agents.teacher.kind=llm", "agents.learner.kind=sft"], environ={})
    stored = _flat_sections(
        chosen, teacher={"mistake_rate": 0.1}, learner={"draw_stream": "evosyn"}
    )
    resumed = stored_config(stored)
    assert resumed.model_dump() == chosen.model_dump()
    assert stored["agents"]["teacher"]["mistake_rate"] == 0.1  # read, not changed
    # The same keys in a file a user writes are still one-line errors.
    path = _write(tmp_path, "agents: {teacher: {kind: llm, mistake_rate: 0.1}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(
        "config error: agents.teacher: 'mistake_rate' is a setting of kind 'programmatic', "
        "not of kind 'llm'"
    )
    with pytest.raises(ConfigError, match="'draw_stream' is a setting of kind 'simulated'"):
        load_config(
            path,
            [
                "agents.teacher.mistake_rate=0.0",
                "agents.learner.kind=sft",
                "agents.learner.draw_stream=evosyn",
            ],
            environ={},
        )
    # A key no kind owns is not another kind's: a stored config holding one no longer loads.
    with pytest.raises(ConfigError, match=r"stored config no longer loads \(agents.learner\)"):
        stored_config(_flat_sections(chosen, learner={"recpie": {}}))


def test_a_config_naming_every_kind_loads_without_importing_a_role() -> None:
    # The check reads the catalog of kinds (evosyn/kinds.py), so a read command given such a
    # config starts as fast as one without (the roles pull in τ²-bench, litellm, the prompts).
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from evosyn.config import load_config; "
            "load_config(None, ['agents.designer.kind=llm', 'agents.teacher.mistake_rate=0.1', "
            "'agents.learner.kind=sft', 'agents.learner.serve_port=9000', "
            "'agents.verifier.realize_judge.kind=llm'], environ={}).model_dump(); "
            "print(sorted(m for m in sys.modules if m.startswith('evosyn.agents')))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert loaded.stdout.strip() == "[]"
