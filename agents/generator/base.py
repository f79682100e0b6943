"""The Generator role's protocol."""

from __future__ import annotations

from typing import Protocol

from evosyn.environments.kit.screen import GeneratorRejection, Screen
from evosyn.records import Blueprint, SynthTask

__all__ = ["Generator", "GeneratorRejection", "Screen"]


class Generator(Protocol):
    """Grounds blueprints into tasks whose gold actions realize the requested values."""

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """A task for ``blueprint`` that ``screen`` lets through.

        Raises:
            GeneratorRejection: If the database cannot realize the blueprint, or no candidate
                passes ``screen``.
        """
        ...
