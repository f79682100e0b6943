"""A model-backed Generator's next windows start early and give the rows of one window at a time.

``generate(..., window=W)`` screens each window's tasks against what the windows before it
kept. With :data:`~evosyn.agents.synthesis.WINDOWS_AHEAD` windows started early (their first
calls overlap the window being screened), each blueprint still meets the screen its window
would have met starting only once the one before it was consumed (issue #38).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from synthesis_checks import exploration

from evosyn.agents import synthesis
from evosyn.agents.generator import GeneratorRejection
from evosyn.agents.generator.base import Screen
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, generate
from evosyn.config import load_config
from evosyn.environments.dedup import SeenTasks
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, SynthTask
from evosyn.space import seed_space
from evosyn.tasks.loop import roles_for

SEED = 7
WINDOW = 4


class Repeating:
    """A Generator drawing from a few tasks, so that windows screen each other's.

    Blueprint i first proposes task i mod ``len(pool)`` (after a "model call" of ``call_s``);
    while ``screen`` stops it, the next one (a repair turn), until none is left.
    """

    def __init__(self, pool: list[SynthTask], call_s: float = 0.01) -> None:
        self.pool = pool
        self.call_s = call_s
        self.order: dict[str, int] = {}  # blueprint id -> index, set by the test
        self.in_flight = 0
        self.most = 0
        self.lock = threading.Lock()

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            first = self.order[blueprint.blueprint_id]
            for k in range(len(self.pool)):
                time.sleep(self.call_s)  # the model's answer
                synth = self.pool[(first + k) % len(self.pool)]
                if screen is None or screen(synth.task) is None:
                    return synth.model_copy(update={"blueprint_id": blueprint.blueprint_id})
            raise GeneratorRejection("every candidate repeats a kept task")
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture(scope="module")
def drawn() -> tuple[list[Blueprint], list[SynthTask]]:
    roles = roles_for(load_config(None, [], environ={}))
    space = seed_space("airline", "ahead")
    planner = ProgrammaticPlanner(domain_plugin("airline").infeasible)
    blueprints = planner.plan(space, exploration(space, 40, direction_id="now"), SEED)
    pool = generate(blueprints[:8], roles.generator, SEED).tasks[:6]
    assert len(pool) >= 4
    return blueprints, pool


def _rows(batch: SynthesisBatch) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [r.model_dump(mode="json", exclude={"created_at"}) for r in getattr(batch, name)]
        for name in ("tasks", "rejections")
    }


def _generated(
    drawn: tuple[list[Blueprint], list[SynthTask]], ahead: int, seen: SeenTasks | None
) -> tuple[dict[str, Any], int]:
    blueprints, pool = drawn
    generator = Repeating(pool)
    generator.order = {b.blueprint_id: i for i, b in enumerate(blueprints)}
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(synthesis, "WINDOWS_AHEAD", ahead)
        batch = generate(blueprints, generator, SEED, seen=seen, window=WINDOW)
    return _rows(batch), generator.most


@pytest.mark.parametrize("earlier", [False, True])
def test_windows_ahead_give_the_rows_of_one_window_at_a_time(
    drawn: tuple[list[Blueprint], list[SynthTask]], earlier: bool
) -> None:
    def seen() -> SeenTasks | None:
        if not earlier:
            return None
        kept = SeenTasks("airline")
        kept.add(drawn[1][0].task)
        return kept

    one_at_a_time, most_alone = _generated(drawn, 0, seen())
    ahead, most_ahead = _generated(drawn, 3, seen())
    assert ahead == one_at_a_time
    # Screens matter here: some blueprints were repaired or rejected as repeats.
    tasks, rejections = one_at_a_time["tasks"], one_at_a_time["rejections"]
    assert tasks and rejections
    assert len(tasks) + len(rejections) == len(drawn[0])
    assert most_alone <= WINDOW < most_ahead <= WINDOW * 4


def test_an_error_stops_the_windows_ahead(drawn: tuple[list[Blueprint], list[SynthTask]]) -> None:
    """A Generator's error (the budget's stop) propagates; no thread is left waiting."""
    from evosyn.agents.gateway.errors import BudgetExceeded

    blueprints, pool = drawn
    stop = blueprints[2 * WINDOW + 1].blueprint_id

    class Stopping(Repeating):
        def generate(
            self, blueprint: Blueprint, seed: int, screen: Screen | None = None
        ) -> SynthTask:
            if blueprint.blueprint_id == stop:
                raise BudgetExceeded("generator", 1.0, 1.5)
            return super().generate(blueprint, seed, screen)

    generator = Stopping(pool)
    generator.order = {b.blueprint_id: i for i, b in enumerate(blueprints)}
    before = threading.active_count()
    with pytest.raises(BudgetExceeded):
        generate(blueprints, generator, SEED, window=WINDOW)
    assert threading.active_count() <= before
