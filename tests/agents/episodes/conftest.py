"""Verified task sets made by the programmatic pipeline, shared by the episode tests."""

from __future__ import annotations

import pytest
from synthesis_checks import exploration

from evosyn.agents.episodes import TaskSet
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, synthesize
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments.registry import domain_plugin
from evosyn.space import seed_space

#: Airline (agent tools only) and telecom (the user has tools too).
DOMAINS = ("airline", "telecom")


def synthesized(domain: str, budget: int, seed: int, mistake_rate: float = 0.0) -> SynthesisBatch:
    """One uniform round of the programmatic Planner, Generator, Teacher and Verifier."""
    plugin = domain_plugin(domain)
    space = seed_space(domain, f"ep-{domain}", round=1)
    direction = exploration(space, budget, direction_id="r1-uniform")
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed=seed)
    teacher = plugin.teacher(mistake_rate=mistake_rate)
    return synthesize(blueprints, plugin.generator(), teacher, ReplayVerifier(domain), seed)


@pytest.fixture(scope="session")
def batches() -> dict[str, SynthesisBatch]:
    """A synthesized round per domain, with some seeded mistakes among the trajectories."""
    return {d: synthesized(d, budget=40, seed=5, mistake_rate=0.2) for d in DOMAINS}


@pytest.fixture(scope="session")
def task_sets(batches: dict[str, SynthesisBatch]) -> dict[str, TaskSet]:
    """The verified tasks of each domain's round."""
    return {
        d: TaskSet.from_records(b.tasks, b.trajectories, b.verifications)
        for d, b in batches.items()
    }
