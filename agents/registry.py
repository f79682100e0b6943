"""One registry pattern for every role: implementations registered by name, built from config.

Each role has a :class:`Registry` beside its protocol (``DESIGNERS`` in
``agents/designer/base.py``, ...). An implementation registers a builder under the name of its
kind, which a campaign config selects it by (``agents.<role>.kind``), next to its own code::

    @DESIGNERS.register("programmatic")
    def _programmatic(cfg: CampaignConfig) -> Designer:
        return ProgrammaticDesigner(domain_plugin(cfg.campaign.domain).infeasible)

A builder whose implementation pulls in heavy modules (litellm, τ²-bench's orchestrator)
imports them inside its body, so registering it costs nothing.

What the rest of the system knows of a kind without building it (the models it calls, whether
it needs a GPU, its own settings) is declared in the catalog of :mod:`evosyn.kinds`, which the
config is validated against without importing any role; a registration takes it from there.
A kind from outside the repository is declared there and registered here by a module named in
the entry-point group ``evosyn.<role>`` (e.g. ``evosyn.learner``), loaded when a config names
that kind and the repository has none of that name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from evosyn import kinds
from evosyn.config import ConfigError
from evosyn.kinds import Kind

if TYPE_CHECKING:
    from evosyn.config import CampaignConfig

T = TypeVar("T")
Builder = Callable[["CampaignConfig"], T]
"""Builds an implementation from the whole campaign config (its arguments)."""


@dataclass(frozen=True, kw_only=True)
class Implementation(Kind, Generic[T]):
    """One registered implementation of a role: its declared kind, and the builder of it."""

    build: Builder[T]


@dataclass(frozen=True)
class Registry(Generic[T]):
    """The implementations of one role, by name."""

    key: str
    """The config key that selects one, e.g. ``agents.designer.kind``."""
    _entries: dict[str, Implementation[T]] = field(default_factory=dict)

    @property
    def role(self) -> str:
        """The role its kinds are declared under in :mod:`evosyn.kinds`, e.g. ``designer``."""
        return self.key.removeprefix("agents.").removesuffix(".kind")

    def register(self, name: str) -> Callable[[Builder[T]], Builder[T]]:
        """Register the decorated builder as the implementation of declared kind ``name``.

        ValueError if the catalog declares no such kind, or one is registered under it already.
        """
        declared = kinds.find(self.role, name)
        if declared is None:
            raise ValueError(
                f"{self.key}: {name!r} is not a declared kind (evosyn/kinds.py; a kind from "
                "outside the repository declares itself with evosyn.kinds.declare)"
            )

        def decorator(build: Builder[T]) -> Builder[T]:
            if name in self._entries:
                raise ValueError(f"{self.key}: {name!r} is registered twice")
            self._entries[name] = Implementation(**vars(declared), build=build)
            return build

        return decorator

    def names(self) -> list[str]:
        """The names of its role's kinds, declared or from entry points (:func:`kinds.names`)."""
        return kinds.names(self.role)

    def find(self, name: str) -> Implementation[T] | None:
        """Implementation ``name``, loading its entry point if the repository has no such kind.

        ValueError in one line if the entry point fails to load (the config check reports it).
        """
        if name not in self._entries:
            kinds.find(self.role, name)  # loading a kind's entry point registers it here
        return self._entries.get(name)

    def get(self, name: str) -> Implementation[T]:
        """Implementation ``name``; ConfigError naming the config key if there is none."""
        found = self.find(name)
        if found is None:
            raise ConfigError(
                f"config error: {self.key}: unknown implementation {name!r}; "
                f"choose one of {self.names()}"
            )
        return found

    def build(self, name: str, cfg: CampaignConfig) -> T:
        """A new implementation ``name`` for the campaign ``cfg``."""
        return self.get(name).build(cfg)
