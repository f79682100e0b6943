"""The Generator step of synthesis: repeats of kept tasks are skipped, or rejected with a reason."""

from __future__ import annotations

from synthesis_checks import hand_blueprint

from evosyn.agents.generator.base import Screen
from evosyn.agents.synthesis import generate
from evosyn.environments.dedup import SeenTasks, exact_key
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.records import Attempt, Blueprint, SynthTask, Trajectory


def _blueprints(count: int, family: str = "billing_issue") -> list[Blueprint]:
    return [
        hand_blueprint(
            family,
            "fulfill",
            focus=("eligibility_check",),
            patterns=("multi_hop_retrieval",),
            index=i,
        )
        for i in range(count)
    ]


class _Copier:
    """A Generator that ignores the screen and grounds every blueprint in one task."""

    def __init__(self, template: SynthTask) -> None:
        self.template = template

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        task = self.template.task.model_copy(update={"id": f"{blueprint.blueprint_id}-task"})
        return self.template.model_copy(
            update={"task": task, "task_id": task.id, "blueprint_id": blueprint.blueprint_id}
        )


def test_a_repeat_from_a_generator_that_ignores_the_screen_is_rejected_naming_the_first() -> None:
    [first_bp, *rest] = _blueprints(3)
    template = TelecomGenerator().generate(first_bp, 0)
    for window in (1, 2):
        batch = generate([first_bp, *rest], _Copier(template), seed=0, window=window)
        assert [t.blueprint_id for t in batch.tasks] == [first_bp.blueprint_id]
        assert [r.stage for r in batch.rejections] == ["duplicate", "duplicate"]
        assert all(first_bp.blueprint_id in r.reason for r in batch.rejections)


def test_the_programmatic_generator_moves_to_other_entities_and_keeps_no_repeat() -> None:
    generator = TelecomGenerator()
    blueprints = _blueprints(12)
    batch = generate(blueprints, generator, seed=3)
    keys = [exact_key("telecom", t.task) for t in batch.tasks]
    assert len(keys) == len(set(keys))
    assert len(batch.tasks) + len(batch.rejections) == len(blueprints)
    assert {r.stage for r in batch.rejections} <= {"duplicate", "generate"}
    assert all(r.reason.strip() and "\n" not in r.reason for r in batch.rejections)
    # Tasks kept earlier (another round, another campaign) are repeats too: the same
    # blueprints' first candidates repeat them, so the Generator moves on.
    seen = SeenTasks("telecom")
    for task in batch.tasks:
        seen.add(task.task)
    later = TelecomGenerator()
    again = generate(blueprints, later, seed=3, seen=seen)
    assert later.skips > 0
    assert all(exact_key("telecom", t.task) not in keys for t in again.tasks)


def test_generation_is_the_same_for_the_same_window_whatever_the_timing() -> None:
    blueprints = _blueprints(8)
    runs = [generate(blueprints, TelecomGenerator(), seed=1, window=4) for _ in range(2)]
    assert runs[0].model_dump() == runs[1].model_dump()


class _Forgetful:
    """The airline Teacher, forgetting the requested challenges in its first attempt."""

    def __init__(self) -> None:
        from evosyn.environments.airline.teacher import AirlineTeacher

        self.inner = AirlineTeacher()

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        if attempt == 0:
            task = task.model_copy(
                update={"requested": {**task.requested, "interaction_challenge": []}}
            )
        return self.inner.rollout(task, seed, attempt, previous)


def test_a_realize_miss_goes_to_repair_with_its_reason() -> None:
    from synthesis_checks import exploration

    from evosyn.agents.planner.programmatic import ProgrammaticPlanner
    from evosyn.agents.synthesis import synthesize
    from evosyn.agents.verifier.replay import ReplayVerifier
    from evosyn.environments.airline.generator import AirlineGenerator
    from evosyn.space import seed_space

    space = seed_space("airline", "r", round=1)
    blueprints = ProgrammaticPlanner().plan(space, exploration(space, 30, direction_id="d"), 6)
    wanted = [b for b in blueprints if b.selections.get("interaction_challenge")][:4]
    assert wanted
    batch = synthesize(wanted, AirlineGenerator(), _Forgetful(), ReplayVerifier("airline"), 6)
    repaired = [v for v in batch.verified if v.repair_attempts > 0]
    assert repaired, [r.reason for r in batch.rejections]
    for verdict in repaired:
        assert verdict.repaired_from[0].startswith("requested interaction_challenge not acted")
    assert not [r for r in batch.rejections if r.stage == "realize"]
