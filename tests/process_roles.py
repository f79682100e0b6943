"""Role sources for the process-pool tests, importable by name in a worker process.

A worker builds its roles from a picklable source it finds by module and name, so a test's own
stand-ins live here, on the tests' import path, not in a test module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from evosyn.agents.synthesis_pool import CampaignRoles, SynthesisRoles
from evosyn.records import Blueprint, SynthTask


@dataclass(frozen=True)
class FailingOn:
    """A campaign's roles whose Generator raises on every blueprint whose id ends in ``suffix``."""

    campaign: CampaignRoles
    suffix: str

    def __call__(self) -> SynthesisRoles:
        built = self.campaign()
        generator = _Failing(built.generator, self.suffix)
        return SynthesisRoles(generator, built.teacher, built.verifier)


class _Failing:
    def __init__(self, inner: object, suffix: str) -> None:
        self.inner = inner
        self.suffix = suffix

    def generate(self, blueprint: Blueprint, seed: int, screen: object = None) -> SynthTask:
        if blueprint.blueprint_id.endswith(self.suffix):
            raise RuntimeError(f"no task for {blueprint.blueprint_id} in this process")
        return self.inner.generate(blueprint, seed, screen=screen)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Dying:
    """Roles whose building ends the worker process at once, as the out-of-memory killer would."""

    def __call__(self) -> SynthesisRoles:
        os._exit(1)
