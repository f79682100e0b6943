"""Feedback and probes find a planted weakness and ignore noise."""

from __future__ import annotations

import random

import pytest

from evosyn.agents.feedback import (
    compute_feedback,
    conditional_mutual_information,
    is_labelled,
    probe,
    without_learner_signal,
)
from evosyn.agents.feedback.probes import POOLED, conditioning_factors, pooled_strata, task_of
from evosyn.records import EvalResult, Factor, Verification
from evosyn.space import add_factor, seed_space

FAMILIES = ["flight_booking", "flight_change", "flight_cancellation"]
WRITES = ["0", "1", "2", "3-4", "5+"]


def _diagnostic(n: int = 300, seed: int = 0) -> list[EvalResult]:
    """Failure planted on num_write 3-4 and 5+; num_read is independent noise."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        writes = rng.choice(WRITES)
        p_fail = 0.8 if writes in ("3-4", "5+") else 0.15
        realized = {
            "task_family": rng.choice(FAMILIES),
            "num_write": writes,
            "num_read": rng.choice(WRITES),
        }
        out.append(_result(i, rng.random() >= p_fail, realized))
    return out


def _result(i: int, success: bool, realized: dict[str, str]) -> EvalResult:
    return EvalResult(
        campaign_id="c",
        round=1,
        training_id="t",
        task_id=str(i),
        split="diagnostic",
        success=success,
        reward=0.0,
        realized=realized,
    )


def test_planted_weakness_is_significant_and_noise_is_not() -> None:
    evals = _diagnostic()
    write = probe("num_write", evals, [], ["task_family"], "c", 1)
    read = probe("num_read", evals, [], ["task_family"], "c", 1)
    assert write is not None and read is not None
    assert write.p_value < 0.01 and write.cmi > 0.1
    assert write.spearman is not None and write.spearman > 0.3
    assert write.failure_rate["5+"] > 0.6 > 0.3 > write.failure_rate["0"]
    assert read.p_value > 0.05 and read.cmi < write.cmi / 5
    assert write.suggested is not None and write.suggested.values == WRITES
    assert write.suggested.origin == "failure_driven" and read.suggested is not None
    assert read.suggested.origin == "coverage_gap"


def test_cmi_is_zero_when_the_stratum_explains_failure() -> None:
    fail = [True, True, False, False] * 25
    strata = ["a", "a", "b", "b"] * 25
    probe_values = ["x", "x", "y", "y"] * 25  # same information as the stratum
    assert conditional_mutual_information(fail, probe_values, strata) == pytest.approx(0.0)
    assert conditional_mutual_information(fail, probe_values, ["all"] * 100) == pytest.approx(
        0.6931, abs=1e-3
    )


def test_feedback_reports_coverage_success_and_deltas() -> None:
    space = seed_space("airline", "c")
    evals = _diagnostic(200)
    verified = [
        Verification(
            campaign_id="c",
            round=1,
            task_id=f"s{i}",
            trajectory_id=f"s{i}",
            passed=i % 4 != 0,
            reward=1.0,
            realized={"num_write": "1"},
        )
        for i in range(40)
    ]
    requested = {
        f"s{i}": {"task_family": ["flight_change" if i % 2 else "flight_booking"]}
        for i in range(40)
    }
    fb1 = compute_feedback(space, evals, verified, requested, "c", 1)
    by = {(v.factor, v.value): v for v in fb1.values}
    assert by[("task_family", "flight_change")].coverage == pytest.approx(20 / 30)
    assert by[("task_family", "flight_booking")].n_verified == 10
    assert by[("task_family", "seat_or_baggage_service")].success is None
    assert by[("task_family", "flight_change")].n_diagnostic > 0
    assert {p.name for p in fb1.probes} == {"num_write", "num_read"}
    assert next(p for p in fb1.probes if p.name == "num_write").coverage["1"] == 1.0
    assert by[("task_family", "flight_change")].round_coverage == pytest.approx(20 / 30)
    # Round 2 verified only bookings: its own share differs from the accumulated one.
    verified += [
        v.model_copy(update={"round": 2, "task_id": f"r2-{i}", "passed": True})
        for i, v in enumerate(verified[:10])
    ]
    requested |= {f"r2-{i}": {"task_family": ["flight_booking"]} for i in range(10)}
    fb2 = compute_feedback(space, evals, verified, requested, "c", 2, previous=fb1)
    by2 = {(v.factor, v.value): v for v in fb2.values}
    assert by2[("task_family", "flight_change")].success_delta == 0.0
    assert by2[("task_family", "flight_booking")].round_coverage == 1.0
    assert by2[("task_family", "flight_booking")].coverage == pytest.approx(20 / 40)
    assert by2[("task_family", "flight_change")].round_coverage == 0.0


def _small_diagnostic(seed: int, trials: int = 1) -> list[EvalResult]:
    """A diagnostic set as small as airline's: 45 tasks, 6 of them write-heavy and weak.

    Every task realizes four current factors, so strata of their joint values hold one or two
    tasks each.
    """
    rng = random.Random(seed)
    out = []
    for i in range(45):
        writes = "3-4" if i < 6 else rng.choice(["0", "1", "2"])
        realized = {
            "task_family": rng.choice(FAMILIES),
            "difficulty_profile": rng.choice(["easy", "medium", "hard"]),
            "expected_outcome": rng.choice(["fulfill", "refuse"]),
            "interaction": rng.choice(["a", "b", "c"]),
            "num_write": writes,
            # a noisy proxy of num_write: higher when writes are
            "num_read": "5+" if writes == "3-4" and rng.random() < 0.5 else rng.choice(WRITES),
        }
        p_fail = 0.85 if writes == "3-4" else 0.1
        for t in range(trials):
            out.append(
                EvalResult(
                    campaign_id="c",
                    round=1,
                    training_id="t",
                    task_id=str(i) if trials == 1 else f"{i}#trial{t}",
                    split="diagnostic",
                    success=rng.random() >= p_fail,
                    reward=0.0,
                    realized=realized,
                )
            )
    return out


def test_small_diagnostic_set_with_many_current_factors_still_finds_the_weakness() -> None:
    factors = ["task_family", "difficulty_profile", "expected_outcome", "interaction"]
    found = 0
    for seed in range(5):
        evals = _small_diagnostic(seed, trials=3)
        strata = conditioning_factors(evals, factors)
        assert len(strata) <= 2
        write = probe("num_write", evals, [], strata, "c", 1, seed)
        read = probe("num_read", evals, [], strata, "c", 1, seed)
        assert write is not None and read is not None
        found += write.p_value < 0.05 and write.cmi - write.cmi_null > read.cmi - read.cmi_null
        # all four factors: their strata of one or two tasks are pooled, not left empty
        fine = probe("num_write", evals, [], factors, "c", 1, seed)
        assert fine is not None and fine.cmi > 0
    assert found >= 4


def test_trials_of_one_task_are_permuted_together() -> None:
    # Pure noise, each task repeated 10 times with the same outcome: row-level shuffling would
    # call the probe significant; shuffling whole tasks must not.
    rng = random.Random(1)
    evals = []
    for i in range(30):
        value, success = rng.choice(["0", "1"]), rng.random() < 0.5
        evals += [
            EvalResult(
                campaign_id="c",
                round=1,
                training_id="t",
                task_id=f"{i}#trial{t}",
                split="diagnostic",
                success=success,
                reward=0.0,
                realized={"num_write": value},
            )
            for t in range(10)
        ]
    assert [task_of(e.task_id) for e in evals[:2]] == ["0", "0"]
    noise = probe("num_write", evals, [], [], "c", 1)
    assert noise is not None and noise.p_value > 0.05


def test_small_strata_are_pooled() -> None:
    realized = [{"f": "a"}] * 6 + [{"f": "b"}] * 2 + [{"f": "c"}] * 3
    assert pooled_strata(realized, ["f"]) == ["a"] * 6 + [POOLED] * 5
    # trials of one task count once toward a stratum's size
    tasks = [str(i // 3) for i in range(6)] + ["x", "y", "z", "w", "v"]
    assert pooled_strata(realized, ["f"], tasks)[:6] == [POOLED] * 6


def test_without_learner_signal_keeps_coverage_only() -> None:
    space = seed_space("airline", "c")
    fb = compute_feedback(space, _diagnostic(100), [], {}, "c", 1)
    stripped = without_learner_signal(fb)
    assert stripped.probes == [] and fb.probes
    assert all(v.success is None and v.success_delta is None for v in stripped.values)
    assert [v.coverage for v in stripped.values] == [v.coverage for v in fb.values]


def test_success_per_tool_use_pattern_reads_the_patterns_a_task_shows() -> None:
    space = seed_space("airline", "c")
    patterns = [
        "lookup_verify_then_modify;multi_entity_retrieval",
        "multi_entity_retrieval",
        "none",
    ]
    evals = [
        _result(
            i, i % 3 != 0, {"task_family": "flight_change", "tool_use_patterns": patterns[i % 3]}
        )
        for i in range(30)
    ]
    by = {(v.factor, v.value): v for v in compute_feedback(space, evals, [], {}, "c", 1).values}
    lookup = by[("tool_use_pattern", "lookup_verify_then_modify")]
    assert (lookup.n_diagnostic, lookup.success) == (10, 0.0)
    multi = by[("tool_use_pattern", "multi_entity_retrieval")]
    assert (multi.n_diagnostic, multi.success) == (20, 0.5)
    assert by[("tool_use_pattern", "search_compare_then_book")].success is None


def test_a_labelled_factor_is_read_from_the_values_its_tasks_were_made_with() -> None:
    # An invented factor has no feature: a held-out synthesized task carries the value its
    # blueprint requested (the Generator stated it, the labeller confirmed it); an official
    # task, which no one made with a value, counts for no value.
    invented = Factor(name="passengers", values=["1", "2+"], definition="passengers asked for")
    space = add_factor(seed_space("airline", "c"), invented, round=2)
    held = [
        _result(i, i % 4 != 0, {}).model_copy(update={"task_id": f"s{i}#trial0"}) for i in range(8)
    ]
    official = [
        _result(100 + i, False, {}).model_copy(update={"task_id": f"official:{i}"})
        for i in range(5)
    ]
    requested = {f"s{i}": {"passengers": ["1" if i % 2 else "2+"]} for i in range(8)}
    fb = compute_feedback(space, held + official, [], requested, "c", 2)
    by = {(v.factor, v.value): v for v in fb.values if v.factor == "passengers"}
    assert by[("passengers", "1")].n_diagnostic == 4 and by[("passengers", "1")].success == 1.0
    assert by[("passengers", "2+")].n_diagnostic == 4 and by[("passengers", "2+")].success == 0.5
    # A factor a feature computes is never read from requests.
    assert not is_labelled(invented.model_copy(update={"name": "num_write"}))
    assert not is_labelled(invented.model_copy(update={"definition": ""}))
