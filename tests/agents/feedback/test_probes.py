"""Feedback and probes find a planted weakness and ignore noise."""

from __future__ import annotations

import random

import pytest

from evosyn.agents.feedback import compute_feedback, conditional_mutual_information, probe
from evosyn.records import EvalResult, Verification
from evosyn.space import seed_space

FAMILIES = ["flight_booking", "flight_change", "flight_cancellation"]
WRITES = ["0", "1", "2", "3-4", "5+"]


def _diagnostic(n: int = 300, seed: int = 0) -> list[EvalResult]:
    """Failure planted on num_write 3-4 and 5+; num_read is independent noise."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        writes = rng.choice(WRITES)
        p_fail = 0.8 if writes in ("3-4", "5+") else 0.15
        out.append(
            EvalResult(
                campaign_id="c",
                round=1,
                training_id="t",
                task_id=str(i),
                split="diagnostic",
                success=rng.random() >= p_fail,
                reward=0.0,
                realized={
                    "task_family": rng.choice(FAMILIES),
                    "num_write": writes,
                    "num_read": rng.choice(WRITES),
                },
            )
        )
    return out


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
    fb2 = compute_feedback(space, evals, verified, requested, "c", 2, previous=fb1)
    assert {(v.factor, v.value): v.success_delta for v in fb2.values}[
        ("task_family", "flight_change")
    ] == 0.0
