"""The Verifier contract and a registry of named implementations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from tau2.data_model.message import Message
from tau2.data_model.tasks import Task

from evosyn.records import Verification


@runtime_checkable
class Verifier(Protocol):
    """Decides deterministically whether a trajectory solves its task."""

    name: str

    def verify(
        self,
        task: Task,
        messages: Sequence[Message],
        *,
        campaign_id: str = "adhoc",
        round: int = 0,
        trajectory_id: str | None = None,
    ) -> Verification:
        """The verdict on ``messages`` as an attempt at ``task``."""
        ...


VerifierFactory = Callable[..., Verifier]
_REGISTRY: dict[str, VerifierFactory] = {}


def register_verifier(name: str) -> Callable[[VerifierFactory], VerifierFactory]:
    """Class decorator registering a verifier implementation under ``name``."""

    def decorator(factory: VerifierFactory) -> VerifierFactory:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"verifier {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return decorator


def get_verifier(name: str, **kwargs: Any) -> Verifier:
    """A new verifier of the implementation registered as ``name``.

    Raises:
        ValueError: If no implementation has that name.
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown verifier {name!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[name](**kwargs)


def verifier_names() -> list[str]:
    """Names of the registered verifier implementations."""
    return sorted(_REGISTRY)
