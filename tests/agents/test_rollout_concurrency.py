"""A chunk's conversations on a model run at once and give the rows of one after another (#38).

``roll_out_each`` rolls a chunk's tasks out together when its teacher or Verifier calls a
model (has ``gateways``), up to the process's bound of conversations per model; programmatic
roles keep rolling out one task after another.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest
from synthesis_checks import exploration

from evosyn.agents import synthesis
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import (
    CONVERSATIONS_PER_SLOT,
    SynthesisBatch,
    conversation_slots,
    generate,
    roll_out_each,
)
from evosyn.agents.teacher import Attempt
from evosyn.config import load_config
from evosyn.environments.registry import domain_plugin
from evosyn.records import SynthTask, Trajectory
from evosyn.space import seed_space
from evosyn.tasks.loop import roles_for

SEED = 7
CLOCKS = {"created_at", "started_at", "finished_at", "seconds", "latency_s"}


@dataclass(frozen=True)
class _Settings:
    model: str
    concurrency: int


@dataclass(frozen=True)
class _Gateway:
    settings: _Settings


class OnModel:
    """The programmatic teacher as a model-backed one looks: ``gateways``, and slow turns."""

    def __init__(self, inner: Any, model: str, concurrency: int, turn_s: float = 0.02) -> None:
        self.inner = inner
        self.gateways = [_Gateway(_Settings(model, concurrency))]
        self.turn_s = turn_s
        self.in_flight = 0
        self.most = 0
        self.lock = threading.Lock()

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            time.sleep(self.turn_s)  # waiting on the model
            return self.inner.rollout(task, seed, attempt=attempt, previous=previous)
        finally:
            with self.lock:
                self.in_flight -= 1


def _rows(batch: SynthesisBatch) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [r.model_dump(mode="json", exclude=CLOCKS) for r in getattr(batch, name)]
        for name in ("trajectories", "verifications", "rejections")
    }


@pytest.fixture(scope="module")
def made() -> tuple[Any, list[SynthTask]]:
    # The teacher slips, so Repair (a second rollout of a task) is compared too.
    cfg = load_config(None, ["agents.teacher.mistake_rate=0.2"], environ={})
    roles = roles_for(cfg)
    space = seed_space("airline", "concurrent")
    direction = exploration(space, 24, direction_id="now")
    blueprints = ProgrammaticPlanner(domain_plugin("airline").infeasible).plan(
        space, direction, SEED
    )
    tasks = generate(blueprints, roles.generator, SEED).tasks
    assert len(tasks) >= 12
    return roles, tasks


def test_conversations_on_a_model_run_at_once_with_the_rows_of_one_after_another(
    made: tuple[Any, list[SynthTask]],
) -> None:
    roles, tasks = made
    serial = roll_out_each(tasks, roles.teacher, roles.verifier, SEED, tries=2)
    teacher = OnModel(roles.teacher, "test/at-once", concurrency=4)
    done: list[int] = []
    at_once = roll_out_each(tasks, teacher, roles.verifier, SEED, progress=done.append, tries=2)
    assert _rows(at_once) == _rows(serial)
    assert sum(done) == len(tasks)
    assert any(v.repair_attempts for v in at_once.verifications) or at_once.rejections
    # Together, and never more than the bound: CONVERSATIONS_PER_SLOT x concurrency.
    assert 1 < teacher.most <= CONVERSATIONS_PER_SLOT * 4


def test_programmatic_roles_roll_out_one_after_another(
    made: tuple[Any, list[SynthTask]],
) -> None:
    roles, tasks = made
    assert conversation_slots([roles.teacher, roles.verifier]) is None
    teacher = OnModel(roles.teacher, "test/serial", concurrency=4)
    teacher.gateways = []  # no model: the programmatic path
    roll_out_each(tasks[:6], teacher, roles.verifier, SEED)
    assert teacher.most == 1


def test_chunks_share_the_bound_of_their_model(made: tuple[Any, list[SynthTask]]) -> None:
    """Two chunks rolling out at once on one model hold at most the bound between them."""
    roles, tasks = made
    teacher = OnModel(roles.teacher, "test/shared", concurrency=1)
    bound = CONVERSATIONS_PER_SLOT * 1
    assert conversation_slots([teacher]) is conversation_slots([OnModel(None, "test/shared", 1)])
    halves = [tasks[: len(tasks) // 2], tasks[len(tasks) // 2 :]]
    threads = [
        threading.Thread(target=roll_out_each, args=(half, teacher, roles.verifier, SEED))
        for half in halves
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert teacher.most == bound


def test_a_budget_stop_propagates(made: tuple[Any, list[SynthTask]]) -> None:
    """The campaign's spend cap stops the chunk, as it does one task after another."""
    from evosyn.agents.gateway.errors import BudgetExceeded

    roles, tasks = made

    class Capped(OnModel):
        def rollout(self, task: SynthTask, seed: int, **kw: Any) -> Trajectory:
            if task.task_id == tasks[2].task_id:
                raise BudgetExceeded("teacher", 1.0, 1.5)
            return super().rollout(task, seed, **kw)

    with pytest.raises(BudgetExceeded):
        roll_out_each(tasks[:6], Capped(roles.teacher, "test/capped", 4), roles.verifier, SEED)


def test_slots_are_per_model_and_concurrency() -> None:
    one = conversation_slots([OnModel(None, "test/a", 2)])
    assert one is not None
    assert conversation_slots([OnModel(None, "test/a", 2)]) is one
    assert conversation_slots([OnModel(None, "test/a", 3)]) is not one
    assert conversation_slots([OnModel(None, "test/b", 2)]) is not one
    assert synthesis.conversation_slots([object()]) is None
