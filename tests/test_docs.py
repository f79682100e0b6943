"""The configuration reference in docs/ names every key the config model accepts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

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
