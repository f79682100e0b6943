"""One registry pattern for every role: implementations registered by name, built from config.

Each role has a :class:`Registry` beside its protocol (``DESIGNERS`` in
``agents/designer/base.py``, ...). An implementation registers a builder under the name a
campaign config selects it by (``agents.<role>.kind``), next to its own code::

    @DESIGNERS.register("programmatic")
    def _programmatic(cfg: CampaignConfig) -> Designer:
        return ProgrammaticDesigner(domain_plugin(cfg.campaign.domain).infeasible)

A builder whose implementation pulls in heavy modules (litellm, τ²-bench's orchestrator)
imports them inside its body, so registering it costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from evosyn.config import ConfigError

if TYPE_CHECKING:
    from evosyn.config import CampaignConfig

T = TypeVar("T")
Builder = Callable[["CampaignConfig"], T]
"""Builds an implementation from the whole campaign config (its arguments)."""


@dataclass(frozen=True)
class Implementation(Generic[T]):
    """One registered implementation of a role."""

    name: str
    build: Builder[T]
    models: tuple[str, ...] = ()
    """The ``llm`` roles whose models it calls (each must have a model configured)."""
    gpu: bool = False
    """Whether it needs a GPU (it then runs on the ``gpu`` work pool by default)."""
    grounded: bool = False
    """A Generator that builds tasks with the domain's own builders: it can honour only the
    factors the domain registered (``DomainPlugin.realizable``); any other may be asked any."""


@dataclass(frozen=True)
class Registry(Generic[T]):
    """The implementations of one role, by name."""

    key: str
    """The config key that selects one, e.g. ``agents.designer.kind``."""
    _entries: dict[str, Implementation[T]] = field(default_factory=dict)

    def register(
        self,
        name: str,
        *,
        models: tuple[str, ...] = (),
        gpu: bool = False,
        grounded: bool = False,
    ) -> Callable[[Builder[T]], Builder[T]]:
        """Register the decorated builder as implementation ``name``."""

        def decorator(build: Builder[T]) -> Builder[T]:
            if name in self._entries:
                raise ValueError(f"{self.key}: {name!r} is registered twice")
            self._entries[name] = Implementation(name, build, models, gpu, grounded)
            return build

        return decorator

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def get(self, name: str) -> Implementation[T]:
        """Implementation ``name``; ConfigError naming the config key if there is none."""
        try:
            return self._entries[name]
        except KeyError:
            raise ConfigError(
                f"config error: {self.key}: unknown implementation {name!r}; "
                f"choose one of {self.names()}"
            ) from None

    def build(self, name: str, cfg: CampaignConfig) -> T:
        """A new implementation ``name`` for the campaign ``cfg``."""
        return self.get(name).build(cfg)
