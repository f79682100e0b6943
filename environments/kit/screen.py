"""How a candidate task is screened and how a Generator says a blueprint cannot be realized."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from tau2.data_model.tasks import Task

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
