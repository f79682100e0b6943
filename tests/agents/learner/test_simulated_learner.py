"""The simulated learner: planted weaknesses, mastery with exposure, seeded evaluation."""

from __future__ import annotations

import hashlib
import random

from evosyn.agents.learner import (
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    SimulatedLearner,
    TrainingData,
    Weakness,
)
from evosyn.agents.learner.simulated import held_out_results, success_probability
from evosyn.buckets import difficulty_of
from evosyn.config import LearnerSection
from evosyn.records import Training, Verification

WEAK = [Weakness(feature="num_write", values=["3-4", "5+"], penalty=0.7)]
SETTINGS = LearnerSection(weaknesses=WEAK)


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
    p = [success_probability(_train(learner, n, 0, 1, "t"), item) for n in (0, 30, 60, 90)]
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
    three = LearnerSection(weaknesses=WEAK, trials=3)
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


FAMILIAR = LearnerSection(
    weaknesses=WEAK, familiarity_penalty=0.2, familiarity_features=["task_family"]
)


def _family_data(families: list[str]) -> TrainingData:
    return TrainingData(
        campaign_id="c",
        verified=[
            Verification(
                campaign_id="c",
                round=1,
                task_id=f"t{i}",
                trajectory_id=f"t{i}",
                passed=True,
                reward=1.0,
                realized={"num_write": "1", "task_family": family},
            )
            for i, family in enumerate(families)
        ],
        held_out=0,
    )


def test_success_grows_with_the_volume_and_variety_of_the_data() -> None:
    learner = SimulatedLearner(FAMILIAR, seed=0)
    task = {"num_write": "1", "difficulty_profile": "medium", "task_family": "booking"}
    p = {
        name: success_probability(learner.train(_family_data(fams), 1, "t").training, task)
        for name, fams in {
            "none": [],
            "other": ["cancel"] * 40,
            "few": ["booking"] * 5,
            "many": ["booking"] * 40,
        }.items()
    }
    assert p["none"] == p["other"] == 0.85 * 0.8  # no sample shows the task's family
    assert p["other"] < p["few"] < p["many"] < 0.85
    # off by default: the same data leaves success at the difficulty's base
    plain = SimulatedLearner(SETTINGS, seed=0)
    assert success_probability(plain.train(_family_data([]), 1, "t").training, task) == 0.85


def test_weakness_on_a_set_feature_matches_any_value_it_shows() -> None:
    settings = LearnerSection(
        weaknesses=[Weakness(feature="tool_use_pattern", values=["x_then_y"], penalty=0.5)]
    )
    learner = SimulatedLearner(settings, seed=0)
    training = learner.train(_family_data([]), 1, "t").training
    shows = {"difficulty_profile": "medium", "tool_use_patterns": "a;x_then_y"}
    lacks = {"difficulty_profile": "medium", "tool_use_patterns": "a;b"}
    assert success_probability(training, shows) == 0.85 * 0.5
    assert success_probability(training, lacks) == 0.85


def test_draw_streams_are_independent_and_the_default_stream_is_shared() -> None:
    def outcomes(stream: str) -> list[bool]:
        settings = LearnerSection(weaknesses=WEAK, draw_stream=stream)
        learner = SimulatedLearner(settings, seed=2)
        training = _train(learner, 0, 5, 1, "t")
        return [r.success for r in _evaluate(learner, training, _items(200, "3-4")).results]

    assert outcomes("a") == outcomes("a")
    a, b = outcomes("a"), outcomes("b")
    assert a != b
    # independent, not merely shuffled: about p^2 + (1-p)^2 of the episodes agree (p ~ 0.26)
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    assert 0.5 < agree < 0.75
    # the default stream keeps the draws of single campaigns: keyed by (seed, round, task) only
    p = 0.85 * 0.3
    keyed = [
        random.Random(hashlib.sha256(f"2|r1|3-4-{i}".encode()).digest()).random() < p
        for i in range(200)
    ]
    assert outcomes("") == keyed != a


def test_held_out_results_redraw_the_same_episodes_independently() -> None:
    learner = SimulatedLearner(LearnerSection(weaknesses=WEAK, draw_stream="arm"), seed=2)
    training = _train(learner, 0, 5, 1, "t")
    seen = _evaluate(learner, training, _items(400, "3-4")).results
    held = held_out_results(training, seen, seed=2)
    assert held == held_out_results(training, seen, seed=2)
    assert [r.task_id for r in held] == [r.task_id for r in seen]
    # the same learner (the same chance, p ~ 0.26), fresh draws: about p^2 + (1-p)^2 agree
    agree = sum(a.success == b.success for a, b in zip(seen, held, strict=True)) / len(seen)
    assert 0.5 < agree < 0.75
    assert abs(_rate(held) - 0.85 * 0.3) < 0.07
    assert all((r.failure_reason is None) == r.success for r in held)
