"""Benchmark domains behind one contract: τ²-bench airline, retail and telecom.

Use :func:`get_domain` for a domain, :mod:`evosyn.environments.features` for the realized
features of a trajectory and :mod:`evosyn.environments.trajectories` for gold trajectories.
"""

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
from evosyn.environments.registry import get_domain, list_domains

__all__ = [
    "DIAGNOSTIC_SPLIT",
    "TEST_SPLIT",
    "Domain",
    "DomainKnowledge",
    "DomainState",
    "FunctionalSymbol",
    "Tau2Domain",
    "ToolSpec",
    "get_domain",
    "list_domains",
]
