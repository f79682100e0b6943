"""The Reflector role's protocol and its registry."""

from __future__ import annotations

from typing import Protocol

from evosyn.agents.registry import Registry
from evosyn.records import Feedback, ReflectorDecision, SynthesisSpace


class Reflector(Protocol):
    """Reviews the space against feedback; reallocates or adds at most one factor."""

    def reflect(
        self, space: SynthesisSpace, feedback: Feedback, round: int
    ) -> tuple[ReflectorDecision, SynthesisSpace]:
        """The decision for the next round and the space it runs in."""
        ...


REFLECTORS: Registry[Reflector | None] = Registry("agents.reflector.kind")
"""Reflector implementations by name (``None``: the space is never revised)."""
