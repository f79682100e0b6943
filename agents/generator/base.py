"""The Generator role's protocol."""

from __future__ import annotations

from typing import Protocol

from evosyn.records import Blueprint, SynthTask


class GeneratorRejection(Exception):
    """The blueprint cannot be realized in the database; the message says why (one line)."""


class Generator(Protocol):
    """Grounds blueprints into tasks whose gold actions realize the requested values."""

    def generate(self, blueprint: Blueprint, seed: int) -> SynthTask:
        """A task for ``blueprint``; GeneratorRejection if the database cannot realize it."""
        ...
