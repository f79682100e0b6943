"""One registry pattern for every role: implementations registered by name, built from config.

Each role has a :class:`Registry` beside its protocol (``DESIGNERS`` in
``agents/designer/base.py``, ...). An implementation registers a builder under the name a
campaign config selects it by (``agents.<role>.kind``), next to its own code::

    @DESIGNERS.register("programmatic")
    def _programmatic(cfg: CampaignConfig) -> Designer:
        return ProgrammaticDesigner(domain_plugin(cfg.campaign.domain).infeasible)

A builder whose implementation pulls in heavy modules (litellm, τ²-bench's orchestrator)
imports them inside its body, so registering it costs nothing.

An implementation may declare its own settings, a pydantic model with ``extra="forbid"``
(``@LEARNERS.register("sft", settings=SFTSettings)``). Users write them flat in the role's
section beside the keys every implementation shares (``agents.learner.recipe``); the section
validates them with the chosen kind's model (:meth:`Registry.settings`), and the implementation
reads them typed (:meth:`evosyn.config.RoleSection.kind_settings`).

Implementations outside the repository register from the Python entry-point group
``evosyn.<role>`` (:attr:`Registry.group`, e.g. ``evosyn.learner``): an entry point named as
the kind, whose module registers it when imported, is loaded when a config names that kind and
no implementation in the repository has it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

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
    settings: type[BaseModel] | None = None
    """Its own settings, read from the role's section beside the shared keys; None: none."""


@dataclass(frozen=True)
class Registry(Generic[T]):
    """The implementations of one role, by name."""

    key: str
    """The config key that selects one, e.g. ``agents.designer.kind``."""
    _entries: dict[str, Implementation[T]] = field(default_factory=dict)

    @property
    def group(self) -> str:
        """The entry-point group of implementations outside the repository: ``evosyn.<role>``."""
        return "evosyn." + self.key.removeprefix("agents.").removesuffix(".kind")

    def register(
        self,
        name: str,
        *,
        settings: type[BaseModel] | None = None,
        models: tuple[str, ...] = (),
        gpu: bool = False,
        grounded: bool = False,
    ) -> Callable[[Builder[T]], Builder[T]]:
        """Register the decorated builder as implementation ``name``, with its own ``settings``."""

        def decorator(build: Builder[T]) -> Builder[T]:
            if name in self._entries:
                raise ValueError(f"{self.key}: {name!r} is registered twice")
            self._entries[name] = Implementation(name, build, models, gpu, grounded, settings)
            return build

        return decorator

    def names(self) -> list[str]:
        """The registered names and those of the group's entry points, sorted."""
        return sorted({*self._entries, *(e.name for e in entry_points(group=self.group))})

    def find(self, name: str) -> Implementation[T] | None:
        """Implementation ``name``, loading its entry point if none in the repository has it.

        ValueError in one line if the entry point fails to load (the config check reports it).
        """
        if name not in self._entries:
            for entry in entry_points(group=self.group, name=name):
                try:
                    entry.load()
                except Exception as exc:  # a broken plug-in is a config error, not a crash
                    first = str(exc).splitlines()[0] if str(exc) else ""
                    raise ValueError(
                        f"entry point {name!r} of {self.group} ({entry.value}) failed to load: "
                        f"{type(exc).__name__}: {first}"
                    ) from None
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

    def settings(
        self, name: str, values: Mapping[str, Any], shared: Iterable[str]
    ) -> BaseModel | None:
        """Implementation ``name``'s own settings from ``values``, its section's other keys.

        ValueError naming the first key its settings lack: which kind declares it, or the keys
        the kind accepts (``shared``, the section's own, and its settings'). A key of another
        kind holding that kind's default is dropped: an override that switches the kind can
        clear what the base config set for the old one.
        """
        own = self.get(name).settings
        fields = own.model_fields if own is not None else {}
        kept: dict[str, Any] = {}
        for key, value in values.items():
            if key in fields:
                kept[key] = value
                continue
            owners = {
                other.name: other.settings
                for other in self._entries.values()
                if other.settings is not None and key in other.settings.model_fields
            }
            if not owners:
                accepts = sorted({*shared, *fields})
                raise ValueError(
                    f"unknown key {key!r} for kind {name!r}; it accepts {', '.join(accepts)}"
                )
            if not any(_is_default(model, key, value) for model in owners.values()):
                kinds = " and ".join(repr(owner) for owner in sorted(owners))
                default = json.dumps(owners[min(owners)]().model_dump(mode="json")[key])
                raise ValueError(
                    f"{key!r} is a setting of kind {kinds}, not of kind {name!r} (drop it, or "
                    f"set it to {default}, its default, where an override switches the kind)"
                )
        return own.model_validate(kept) if own is not None else None

    def build(self, name: str, cfg: CampaignConfig) -> T:
        """A new implementation ``name`` for the campaign ``cfg``."""
        return self.get(name).build(cfg)


def _is_default(model: type[BaseModel], key: str, value: Any) -> bool:
    """Whether ``value`` is ``model``'s default of setting ``key``, as the model reads it."""
    try:
        return bool(getattr(model.model_validate({key: value}), key) == getattr(model(), key))
    except ValueError:  # not a value of it, or a model with a setting that has no default
        return False
