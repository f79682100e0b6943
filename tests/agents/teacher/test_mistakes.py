"""Seeded teacher mistakes: the Verifier rejects the slip and Repair makes it right."""

from __future__ import annotations

from synthesis_checks import exploration

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments.airline.generator import AirlineGenerator
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.space import seed_space


def _batch(rate: float):
    space = seed_space("airline", "m", round=1)
    direction = exploration(space, 40, direction_id="r1-uniform")
    blueprints = ProgrammaticPlanner().plan(space, direction, seed=5)
    teacher = AirlineTeacher(mistake_rate=rate)
    return synthesize(blueprints, AirlineGenerator(), teacher, ReplayVerifier("airline"), seed=5)


def test_slips_are_caught_and_repaired() -> None:
    clean, slipping = _batch(0.0), _batch(0.5)
    assert all(v.repair_attempts == 0 for v in clean.verified)
    repaired = [v for v in slipping.verified if v.repair_attempts > 0]
    assert repaired, "a slip must fail verification and a repair pass it"
    # Repair recovers the slips: the same tasks end verified as without mistakes, or at
    # worst a few of them after three slips in a row.
    assert len(slipping.verified) >= len(clean.verified) - 3
