"""The configuration reference in docs/ names every key the config model accepts.

A role's keys are its section's; each kind's own settings are listed under the kind's heading.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from evosyn.agents.roles import REGISTRIES
from evosyn.config import CampaignConfig

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def _keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _keys(annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_every_config_key_is_documented() -> None:
    text = DOC.read_text("utf-8")
    missing = [key for key in _keys(CampaignConfig) if f"`{key}`" not in text]
    assert not missing, f"docs/configuration.md lacks {missing}"


def test_every_kinds_own_settings_are_documented_under_the_kind() -> None:
    text = DOC.read_text("utf-8")
    missing = []
    for role, registry in REGISTRIES.items():
        for name in registry.names():
            settings = registry.get(name).settings
            if settings is None:
                continue
            heading = f"### `agents.{role}.kind: {name}`"
            assert heading in text, f"docs/configuration.md lacks the heading {heading}"
            listed = text.split(heading, 1)[1].split("\n#", 1)[0]
            missing += [
                f"{heading}: agents.{role}.{key}"
                for key in _keys(settings)
                if f"`agents.{role}.{key}`" not in listed
            ]
    assert not missing, f"docs/configuration.md lacks {missing}"
