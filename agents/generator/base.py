"""The Generator role's protocol."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from tau2.data_model.tasks import Task

from evosyn.records import Blueprint, SynthTask

#: Why a candidate task must not be kept (it overlaps an official task, or repeats one kept
#: already), or None when it may.
Screen = Callable[[Task], str | None]


class GeneratorRejection(Exception):
    """The blueprint cannot be realized; the message says why (one line).

    ``stage`` says where it stopped: ``generate`` (the database or policy cannot realize it),
    ``contamination`` or ``duplicate`` (every candidate repeated an official or a kept task).
    """

    def __init__(
        self, message: str, stage: Literal["generate", "contamination", "duplicate"] = "generate"
    ) -> None:
        super().__init__(message)
        self.stage = stage


class Generator(Protocol):
    """Grounds blueprints into tasks whose gold actions realize the requested values."""

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """A task for ``blueprint`` that ``screen`` lets through.

        Raises:
            GeneratorRejection: If the database cannot realize the blueprint, or no candidate
                passes ``screen``.
        """
        ...
