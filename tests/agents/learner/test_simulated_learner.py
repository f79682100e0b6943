"""The simulated learner: planted weaknesses, mastery with exposure, seeded evaluation."""

from __future__ import annotations

from evosyn.agents.learner import (
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    SimulatedLearner,
    TrainingData,
)
from evosyn.buckets import difficulty_of
from evosyn.config import LearnerSection, Weakness
from evosyn.records import Training, Verification

SETTINGS = LearnerSection(
    weaknesses=[Weakness(feature="num_write", values=["3-4", "5+"], penalty=0.7)]
)


def _train(
    learner: SimulatedLearner, n_weak: int, n_other: int, round: int = 1, training_id: str = "t"
) -> Training:
    data = TrainingData(campaign_id="c", verified=_verified(n_weak, n_other), held_out=0)
    return learner.train(data, round, training_id).training


def _evaluate(
    learner: SimulatedLearner, training: Training, items: list[DiagnosticItem]
) -> Evaluation:
    return learner.evaluate(training, items, EvalInputs())


def _verified(n_weak: int, n_other: int) -> list[Verification]:
    return [
        Verification(
            campaign_id="c",
            round=1,
            task_id=f"t{i}",
            trajectory_id=f"t{i}",
            passed=True,
            reward=1.0,
            realized={"num_write": "3-4" if i < n_weak else "1"},
        )
        for i in range(n_weak + n_other)
    ]


def _items(n: int, writes: str) -> list[DiagnosticItem]:
    return [
        DiagnosticItem(
            task_id=f"{writes}-{i}",
            split="diagnostic",
            realized={"num_write": writes, "difficulty_profile": "medium"},
        )
        for i in range(n)
    ]


def _rate(results: list) -> float:  # type: ignore[type-arg]
    return sum(r.success for r in results) / len(results)


def test_weak_region_fails_until_trained_on_it() -> None:
    learner = SimulatedLearner(SETTINGS, seed=0)
    untrained = _train(learner, 0, 50, 1, "train-1")
    assert untrained.learner == "simulated" and untrained.recipe["simulated"] is True
    weak, strong = (
        _rate(_evaluate(learner, untrained, _items(400, "5+")).results),
        _rate(_evaluate(learner, untrained, _items(400, "1")).results),
    )
    assert weak < 0.4 and strong > 0.75
    trained = _train(learner, 120, 50, 2, "train-2")
    assert trained.recipe["exposure"] == [120]
    assert _rate(_evaluate(learner, trained, _items(400, "5+")).results) > 0.7


def test_mastery_has_diminishing_returns() -> None:
    learner = SimulatedLearner(SETTINGS, seed=0)
    item = {"num_write": "5+", "difficulty_profile": "hard"}
    p = [learner.success_probability(_train(learner, n, 0, 1, "t"), item) for n in (0, 30, 60, 90)]
    assert p[0] < p[1] < p[2] < p[3] <= 0.75
    assert p[1] - p[0] > p[2] - p[1] > p[3] - p[2]


def test_evaluation_is_seeded_and_labelled() -> None:
    training = _train(SimulatedLearner(SETTINGS, seed=3), 5, 5, 1, "t")
    a = _evaluate(SimulatedLearner(SETTINGS, seed=3), training, _items(50, "3-4")).results
    assert a == _evaluate(SimulatedLearner(SETTINGS, seed=3), training, _items(50, "3-4")).results
    assert a != _evaluate(SimulatedLearner(SETTINGS, seed=4), training, _items(50, "3-4")).results
    assert all("simulated" in (r.failure_reason or "simulated") for r in a)
    assert [difficulty_of(n) for n in (2, 3, 4, 5, 6, 9)] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
        "hard",
    ]


def test_trials_give_one_row_per_task_and_trial_with_their_own_draws() -> None:
    three = LearnerSection(weaknesses=SETTINGS.weaknesses, trials=3)
    training = _train(SimulatedLearner(three, seed=1), 0, 5, 1, "t")
    results = _evaluate(SimulatedLearner(three, seed=1), training, _items(40, "3-4")).results
    assert len(results) == 120
    assert {r.task_id for r in results[:3]} == {"3-4-0#trial0", "3-4-0#trial1", "3-4-0#trial2"}
    # trials are independent draws: some task succeeds in one trial and fails in another
    by_task: dict[str, set[bool]] = {}
    for r in results:
        by_task.setdefault(r.task_id.split("#")[0], set()).add(r.success)
    assert any(len(outcomes) == 2 for outcomes in by_task.values())
    single = _evaluate(SimulatedLearner(SETTINGS, seed=1), training, _items(2, "3-4")).results
    assert [r.task_id for r in single] == ["3-4-0", "3-4-1"]
