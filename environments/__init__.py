"""Benchmark domains behind one contract: τ²-bench airline, retail, telecom and mock.

Use :func:`get_domain` for a domain, :func:`domain_plugin` for everything registered with it,
:mod:`evosyn.environments.features` for the realized features of a trajectory and
:mod:`evosyn.environments.trajectories` for gold trajectories.

The names below load on first use, so that :mod:`evosyn.environments.registry` (which a config
check reads) imports no τ²-bench.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evosyn.environments.base import (
        DIAGNOSTIC_SPLIT,
        TEST_SPLIT,
        Domain,
        DomainKnowledge,
        DomainState,
        FunctionalSymbol,
        Tau2Domain,
        ToolSpec,
    )
    from evosyn.environments.registry import domain_plugin, get_domain, list_domains

_LAZY = {
    **dict.fromkeys(
        (
            "DIAGNOSTIC_SPLIT",
            "TEST_SPLIT",
            "Domain",
            "DomainKnowledge",
            "DomainState",
            "FunctionalSymbol",
            "Tau2Domain",
            "ToolSpec",
        ),
        "base",
    ),
    **dict.fromkeys(("domain_plugin", "get_domain", "list_domains"), "registry"),
}

__all__ = [
    "DIAGNOSTIC_SPLIT",
    "TEST_SPLIT",
    "Domain",
    "DomainKnowledge",
    "DomainState",
    "FunctionalSymbol",
    "Tau2Domain",
    "ToolSpec",
    "domain_plugin",
    "get_domain",
    "list_domains",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
