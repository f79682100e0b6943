"""The domain registry: every domain is one folder, ``environments/<name>/``, registered once.

A domain package's ``__init__.py`` calls :func:`register` with its :class:`DomainPlugin`: the
τ²-bench loaders, the seed ontology beside it, the policy model, the feasibility rule and its
sentences, and the programmatic Generator and Teacher built on :mod:`evosyn.environments.kit`.
Everything else (config checks, seed spaces, roles, the verifier's policy check) asks this
module.

:data:`DOMAIN_PACKAGES` is the one place a domain's name is written down. It is a plain tuple
rather than an entry-point group so that checking a config's domain imports nothing (no
τ²-bench, no installed metadata that an editable install would have to refresh), and a domain
package is imported, and so registered, only when something asks for it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from tau2.environment.db import DB
    from tau2.environment.environment import Environment

    from evosyn.environments.base import Tau2Domain
    from evosyn.environments.information_flow import FlowRules
    from evosyn.environments.kit.rules import Checks, Conflict, Rule
    from evosyn.environments.kit.screen import Screen
    from evosyn.records import Attempt, Blueprint, Factor, SynthTask, Trajectory

DOMAIN_PACKAGES: tuple[str, ...] = ("airline", "retail", "telecom", "mock")
"""The domain packages under ``environments/``, each registering a domain of its name."""

Feasibility = Callable[[Mapping[str, Sequence[str]]], str | None]
"""A domain's feasibility rule: the reason a combination of selections is infeasible, or None."""

Conflicts = Callable[[Mapping[str, Sequence[str]]], "Sequence[Conflict]"]
"""A domain's feasibility rule, every rule a combination of selections breaks (none: feasible)."""

PolicyCheck = Callable[["DB", str, Mapping[str, object]], str | None]
"""A domain's policy model: the rule an assistant write (tool, arguments) would break on the
live database, or None."""

DBT = TypeVar("DBT", bound="DB")


def policy_on(
    model: type[DBT], check: Callable[[DBT, str, Mapping[str, object]], str | None]
) -> PolicyCheck:
    """``check``, written against the domain's database ``model``, as a :data:`PolicyCheck`.

    Raises:
        TypeError: From the returned check, given a database that is not a ``model``.
    """

    def checked(db: DB, tool: str, arguments: Mapping[str, object]) -> str | None:
        if not isinstance(db, model):
            raise TypeError(f"the policy checks a {model.__name__}, not a {type(db).__name__}")
        return check(db, tool, arguments)

    return checked


class DomainGenerator(Protocol):
    """What a domain's programmatic Generator offers (the Generator role's protocol)."""

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """A task for ``blueprint`` that ``screen`` lets through; GeneratorRejection if none."""
        ...


class DomainTeacher(Protocol):
    """What a domain's programmatic Teacher offers (the Teacher role's protocol)."""

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        """The trajectory of ``task``; ``previous`` is the failed attempt a Repair starts from."""
        ...


class TeacherBuilder(Protocol):
    """Builds a domain's programmatic Teacher with a share of seeded mistakes."""

    def __call__(self, *, mistake_rate: float = 0.0) -> DomainTeacher:
        """The Teacher."""
        ...


@dataclass(frozen=True)
class DomainPlugin:
    """Everything EvoSyn knows about one domain, registered by the domain's package."""

    name: str
    """The domain's name: the package's, and the campaign config's ``campaign.domain``."""
    make_domain: Callable[[], Tau2Domain]
    """Loads the τ²-bench domain (databases, tools, tasks, splits) with its knowledge."""
    stock_environment: Callable[..., Environment]
    """τ²-bench's own environment constructor (what its registry holds), for cross-checks."""
    ontology: Traversable
    """The seed synthesis space O_0 (``ontology.yaml`` beside the package)."""
    violation: PolicyCheck | None
    """The policy model the replay verifier checks assistant writes against, if any."""
    checks: Checks
    """The feasibility rule as checks: every rule a selection breaks, each with its id (the
    LLM Planner's repair turn names them all)."""
    rules: Callable[[], Sequence[Rule]]
    """``checks`` in sentences, every rule id stated (the LLM Designer's and Planner's
    prompts show them)."""
    generator: Callable[[], DomainGenerator]
    """Builds the programmatic Generator."""
    teacher: TeacherBuilder
    """Builds the programmatic Teacher."""
    realizable: Mapping[str, Factor]
    """Factors beyond the seed ontology the programmatic Generator honours, by name."""
    flow: FlowRules | None = None
    """The user's choices, money-moving writes and internal ids the information-flow gate
    checks (:mod:`~evosyn.environments.information_flow`); None: grounding only."""

    @property
    def infeasible(self) -> Feasibility:
        """Why a combination of factor values cannot be planned, or None (Designer, Planner).

        The reason of the first conflict ``checks`` finds.
        """
        return self.checks.first


_REGISTERED: dict[str, DomainPlugin] = {}


def register(plugin: DomainPlugin) -> DomainPlugin:
    """Register ``plugin`` (a domain package calls this once, at import); returns it.

    Raises:
        ValueError: If the package is not listed in :data:`DOMAIN_PACKAGES`, or a different
            plugin already holds the name.
    """
    if plugin.name not in DOMAIN_PACKAGES:
        raise ValueError(f"domain {plugin.name!r} is not in DOMAIN_PACKAGES")
    held = _REGISTERED.setdefault(plugin.name, plugin)
    if held is not plugin:
        raise ValueError(f"domain {plugin.name!r} is registered twice")
    return plugin


def list_domains() -> list[str]:
    """Names of the domains EvoSyn supports (imports none of them)."""
    return list(DOMAIN_PACKAGES)


def domain_plugin(name: str) -> DomainPlugin:
    """The registration of domain ``name`` (importing its package registers it).

    Raises:
        ValueError: If no such domain exists.
    """
    if name not in DOMAIN_PACKAGES:
        raise ValueError(f"unknown domain {name!r}; known: {', '.join(DOMAIN_PACKAGES)}")
    importlib.import_module(f"{__package__}.{name}")
    return _REGISTERED[name]


@functools.cache
def get_domain(name: str) -> Tau2Domain:
    """The domain called ``name`` (one instance per process: databases are parsed once).

    Raises:
        ValueError: If no such domain exists.
    """
    return domain_plugin(name).make_domain()
