"""Named domains: one instance per process, so databases and tasks are parsed once."""

from __future__ import annotations

import functools
import importlib

from evosyn.environments.base import Tau2Domain

DOMAIN_NAMES: tuple[str, ...] = ("airline", "retail", "telecom")


def list_domains() -> list[str]:
    """Names of the domains EvoSyn supports."""
    return list(DOMAIN_NAMES)


@functools.cache
def get_domain(name: str) -> Tau2Domain:
    """The domain called ``name`` (shared per process).

    Raises:
        ValueError: If no such domain exists.
    """
    if name not in DOMAIN_NAMES:
        raise ValueError(f"unknown domain {name!r}; known: {', '.join(DOMAIN_NAMES)}")
    module = importlib.import_module(f"evosyn.environments.{name}")
    domain: Tau2Domain = module.make_domain()
    return domain
