"""The domain registry: every domain is one folder, ``environments/<name>/``, registered once.

A domain package's ``__init__.py`` calls :func:`register` with its :class:`DomainPlugin`. The
required part is declarative: the τ²-bench loaders (tools, database, policy, tasks) and the
seed ontology beside them. Everything else is a capability a domain may add: the choice
parameters of the information-flow gate, rule sentences, a policy model, a feasibility rule,
and a programmatic Generator and Teacher built on :mod:`evosyn.environments.kit`. A domain
without a programmatic Generator or Teacher registers none; asking it for one raises
:class:`MissingCapability`, one line that names the domain, the capability and the setting to
use instead. Everything else (config checks, seed spaces, roles, the verifier's policy check)
asks this module.

:data:`DOMAIN_PACKAGES` is the one place a domain's name is written down. It is a plain tuple
rather than an entry-point group so that checking a config's domain imports nothing (no
τ²-bench, no installed metadata that an editable install would have to refresh), and a domain
package is imported, and so registered, only when something asks for it.

A domain's ``ontology.yaml`` may declare, beside its seed ``factors``, ``candidates``: factors
its programmatic Generator honours that the seed space leaves out (airline's ``trip_shape``,
telecom's ``fault_kind``), each with what every value means and the sentences of the
feasibility rules that govern it. Registration adds them to the plugin's ``realizable``
factors (the Reflector may add one) and its rule sentences (the Designer's and Planner's
prompts); :func:`declared_meanings` gives their values' meanings to every prompt.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evosyn.environments.feasibility import Checks, Conflict, Rule

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from tau2.environment.db import DB
    from tau2.environment.environment import Environment

    from evosyn.environments.base import Tau2Domain
    from evosyn.environments.information_flow import FlowRules
    from evosyn.environments.kit.screen import Screen
    from evosyn.records import Attempt, Blueprint, Factor, SynthTask, Trajectory

DOMAIN_PACKAGES: tuple[str, ...] = ("airline", "retail", "telecom", "mock", "library")
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

    @functools.wraps(check)
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


class MissingCapability(ValueError):
    """A domain was asked for a capability it does not register."""


@dataclass(frozen=True)
class Lacking:
    """Stands in for a programmatic capability a domain does not register.

    Calling it raises :class:`MissingCapability`, so every place that builds the capability
    fails with the same one line, whichever role asked.
    """

    capability: str
    """What is missing ("programmatic generator")."""
    instead: str
    """What to configure instead ("set agents.generator.kind: llm")."""
    domain: str = ""
    """The domain that lacks it (filled in by :class:`DomainPlugin`)."""

    @property
    def message(self) -> str:
        """The one-line error: the domain, the missing capability, what to set instead."""
        return f"domain {self.domain!r} has no {self.capability}: {self.instead}"

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        """Raises :class:`MissingCapability` with :attr:`message`."""
        raise MissingCapability(self.message)


NO_GENERATOR = Lacking("programmatic generator", "set agents.generator.kind: llm")
"""A domain's ``generator`` when it registers none."""
NO_TEACHER = Lacking("programmatic teacher", "set agents.teacher.kind: llm")
"""A domain's ``teacher`` when it registers none."""


def _no_rules() -> Sequence[Rule]:
    return ()


@dataclass(frozen=True)
class DomainPlugin:
    """Everything EvoSyn knows about one domain, registered by the domain's package.

    ``name``, ``make_domain``, ``stock_environment`` and ``ontology`` are required; every other
    field is a capability with a default that means "not offered" (see :meth:`offers`).
    """

    name: str
    """The domain's name: the package's, and the campaign config's ``campaign.domain``."""
    make_domain: Callable[[], Tau2Domain]
    """Loads the τ²-bench domain (databases, tools, tasks, splits) with its knowledge."""
    stock_environment: Callable[..., Environment]
    """τ²-bench's own environment constructor (what its registry holds), for cross-checks."""
    ontology: Traversable
    """The seed synthesis space O_0 (``ontology.yaml`` beside the package)."""
    violation: PolicyCheck | None = None
    """The policy model the replay verifier checks assistant writes against, if any."""
    checks: Checks = field(default_factory=Checks)
    """The feasibility rule as checks: every rule a selection breaks, each with its id (the
    LLM Planner's repair turn names them all). None registered: every selection is feasible."""
    rules: Callable[[], Sequence[Rule]] = _no_rules
    """Rule sentences for the LLM Designer's and Planner's prompts: ``checks`` in words, every
    rule id stated, plus any guidance sentence (a rule of no check, with no ids)."""
    generator: Callable[[], DomainGenerator] = NO_GENERATOR
    """Builds the programmatic Generator (:data:`NO_GENERATOR` raises: none registered)."""
    teacher: TeacherBuilder = NO_TEACHER
    """Builds the programmatic Teacher (:data:`NO_TEACHER` raises: none registered)."""
    realizable: Mapping[str, Factor] = field(default_factory=dict)
    """Factors beyond the seed ontology the programmatic Generator honours, by name."""
    flow: FlowRules | None = None
    """The user's choices, money-moving writes and internal ids the information-flow gate
    checks (:mod:`~evosyn.environments.information_flow`); None: grounding only."""
    people: tuple[str, ...] = ()
    """The database tables whose records are the people a task is about, the first one the
    database has wins; none: the prompts sample records from every table alike."""
    payment_rules: Sequence[str] = ()
    """How the amounts of the write tools must add up, for the prompts of roles that write
    gold tool calls; none: the prompts state no such rule."""

    def __post_init__(self) -> None:
        # The shared stand-ins learn whose capability they stand in for.
        for name in ("generator", "teacher"):
            value = getattr(self, name)
            if isinstance(value, Lacking) and value.domain != self.name:
                object.__setattr__(self, name, replace(value, domain=self.name))
        # The ontology's candidate factors join what the Generator honours and the rules the
        # prompts state; their checks are the domain's own (``checks``).
        candidates = ontology_candidates(self.ontology.read_text("utf-8"))
        if candidates and not self.offers("generator"):
            raise ValueError(
                f"domain {self.name!r} declares candidate factors but no programmatic generator"
            )
        if candidates:
            factors = {c.name: c.factor() for c in candidates}
            object.__setattr__(self, "realizable", {**self.realizable, **factors})
            object.__setattr__(self, "rules", _with_rules(self.rules, candidates))

    @property
    def infeasible(self) -> Feasibility:
        """Why a combination of factor values cannot be planned, or None (Designer, Planner).

        The reason of the first conflict ``checks`` finds.
        """
        return self.checks.first

    def offers(self, capability: str) -> bool:
        """Whether the domain registers ``capability``.

        One of ``generator``, ``teacher``, ``checks`` (a feasibility rule), ``violation`` (a
        policy model) or ``flow`` (choice parameters).

        Raises:
            ValueError: If ``capability`` is none of these.
        """
        if capability in ("generator", "teacher"):
            return not isinstance(getattr(self, capability), Lacking)
        if capability == "checks":
            return bool(self.checks.ids)
        if capability in ("violation", "flow"):
            return getattr(self, capability) is not None
        raise ValueError(f"unknown domain capability {capability!r}")

    def lacking(self, capability: str) -> str | None:
        """Why the domain cannot give ``capability`` (``generator``, ``teacher``), or None.

        The reason is :class:`MissingCapability`'s one line.
        """
        value = getattr(self, capability)
        return value.message if isinstance(value, Lacking) else None


class CandidateRule(BaseModel):
    """One sentence of the feasibility rule over a candidate factor, as the ontology states it."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The rule as a prompt states it.")
    ids: list[str] = Field(
        min_length=1, description="The ids of the Generator's checks the sentence states."
    )


class CandidateFactor(BaseModel):
    """A factor a domain's programmatic Generator honours beyond its seed space (ontology)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Snake-case factor name.")
    guidance: str = Field(description="What the factor asks of a task, in one line.")
    values: list[str] = Field(min_length=1, description="Its values.")
    meanings: dict[str, str] = Field(
        description="What each value asks of a task's gold (every value has one)."
    )
    rules: list[CandidateRule] = Field(
        default_factory=list, description="The feasibility rules over it, in sentences."
    )

    def factor(self) -> Factor:
        """The factor the Reflector may add to the space (values and guidance)."""
        from evosyn.records import Factor  # the records import nothing of the domains

        return Factor(name=self.name, values=self.values, guidance=self.guidance)

    @model_validator(mode="after")
    def _every_value_means(self) -> CandidateFactor:
        if set(self.meanings) != set(self.values):
            raise ValueError(
                f"candidate factor {self.name!r}: meanings {sorted(self.meanings)} are not for "
                f"its values {sorted(self.values)}"
            )
        return self


def ontology_candidates(text: str) -> list[CandidateFactor]:
    """The ``candidates`` an ``ontology.yaml``'s ``text`` declares (none: an empty list)."""
    return [CandidateFactor(**raw) for raw in yaml.safe_load(text).get("candidates") or []]


def _with_rules(
    rules: Callable[[], Sequence[Rule]], candidates: Sequence[CandidateFactor]
) -> Callable[[], Sequence[Rule]]:
    """``rules`` followed by the candidates' sentences."""

    def combined() -> Sequence[Rule]:
        return (
            *rules(),
            *(Rule(r.text, tuple(r.ids)) for c in candidates for r in c.rules),
        )

    return combined


@functools.cache
def declared_meanings() -> Mapping[str, Mapping[str, str]]:
    """Factor -> value -> meaning, over the candidates every domain's ontology declares.

    Read from the files beside the packages, so no domain is imported. A factor two domains
    declare (airline's and retail's ``write_mix``) has one meaning per value.

    Raises:
        ValueError: If two domains give one value of a factor different meanings.
    """
    here = Path(__file__).parent
    out: dict[str, dict[str, str]] = {}
    for name in DOMAIN_PACKAGES:
        for candidate in ontology_candidates((here / name / "ontology.yaml").read_text("utf-8")):
            held = out.setdefault(candidate.name, {})
            for value, meaning in candidate.meanings.items():
                if held.setdefault(value, meaning) != meaning:
                    raise ValueError(
                        f"{name}: {candidate.name}={value} means something else in another domain"
                    )
    return out


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


def domains_offering(capability: str) -> list[str]:
    """Names of the domains that register ``capability`` (see :meth:`DomainPlugin.offers`).

    Imports every domain package. A test of a programmatic Generator or Teacher runs on these;
    every domain offers its environment (tools, database, policy, official tasks).
    """
    return [name for name in DOMAIN_PACKAGES if domain_plugin(name).offers(capability)]


@functools.cache
def get_domain(name: str) -> Tau2Domain:
    """The domain called ``name`` (one instance per process: databases are parsed once).

    Raises:
        ValueError: If no such domain exists.
    """
    return domain_plugin(name).make_domain()
