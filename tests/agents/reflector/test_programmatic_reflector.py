"""The programmatic Reflector adds at most one evidenced, realizable factor and reviews the rest."""

from __future__ import annotations

import random

from evosyn.agents.feedback import compute_feedback
from evosyn.agents.reflector import REALIZABLE, ProgrammaticReflector
from evosyn.records import EvalResult, FactorStatus, Feedback, Probe, ValueFeedback
from evosyn.space import add_factor, check_revision, seed_space

WRITES = ["0", "1", "2", "3-4", "5+"]


def _evals(planted: bool, seed: int = 0, n: int = 300) -> list[EvalResult]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        writes, reads = rng.choice(WRITES), rng.choice(WRITES)
        p_fail = (0.85 if writes in ("3-4", "5+") else 0.1) if planted else 0.3
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
                    "task_family": rng.choice(["flight_change", "flight_booking"]),
                    "num_write": writes,
                    "num_read": reads,
                    "num_numeric_args": rng.choice(["0", "1"]),
                },
            )
        )
    return out


def test_planted_write_weakness_adds_num_write_failure_driven() -> None:
    space = seed_space("airline", "c")
    feedback = compute_feedback(space, _evals(True), [], {}, "c", 1)
    decision, nxt = ProgrammaticReflector().reflect(space, feedback, round=1)
    assert decision.action == "add_factor" and decision.new_factor is not None
    assert (
        decision.new_factor.name == "num_write" and decision.new_factor.origin == "failure_driven"
    )
    assert (
        decision.new_factor.status == FactorStatus.EXPERIMENTAL
        and decision.new_factor.round_introduced == 2
    )
    assert "nats" in decision.evidence
    assert nxt.version == 2 == decision.next_space_version and len(nxt.factors) == 7
    check_revision(space, nxt)
    # the next round, num_write is in the space: it is never proposed twice
    decision2, nxt2 = ProgrammaticReflector().reflect(
        nxt, compute_feedback(nxt, _evals(True), [], {}, "c", 2), 2
    )
    assert decision2.new_factor is None or decision2.new_factor.name != "num_write"
    assert len(nxt2.factors) <= len(nxt.factors) + 1


def test_no_signal_means_reallocate() -> None:
    space = seed_space("airline", "c")
    feedback = compute_feedback(space, _evals(False), [], {}, "c", 1)
    decision, nxt = ProgrammaticReflector().reflect(space, feedback, round=1)
    assert decision.action == "reallocate" and nxt == space


def test_experimental_factors_are_promoted_kept_or_deprecated_on_evidence() -> None:
    space = add_factor(
        add_factor(seed_space("airline", "c"), REALIZABLE["num_write"], round=2),
        REALIZABLE["num_read"],
        round=2,
    )
    rows = [
        ValueFeedback(
            campaign_id="c",
            round=2,
            factor="num_write",
            value=v,
            coverage=0.2,
            n_verified=10,
            success=s,
            n_diagnostic=10,
        )
        for v, s in zip(WRITES, [0.9, 0.9, 0.8, 0.5, 0.3], strict=True)
    ]
    rows += [
        ValueFeedback(
            campaign_id="c", round=2, factor="num_read", value=v, coverage=0.0, n_verified=0
        )
        for v in WRITES
    ]
    decision, nxt = ProgrammaticReflector().reflect(
        space, Feedback(campaign_id="c", round=2, values=rows), 2
    )
    actions = {r.factor: r.action for r in decision.reviews}
    assert actions == {"num_write": "promote", "num_read": "deprecate"}
    assert nxt.factor("num_write").status == FactorStatus.STANDARD
    assert nxt.factor("num_read").status == FactorStatus.DEPRECATED
    assert all(f.status == FactorStatus.SEED for f in nxt.factors[:6])


def _probe(name: str, p_value: float, cmi: float, null: float) -> Probe:
    return Probe(
        campaign_id="c",
        round=1,
        name=name,
        distribution={"0": 20, "3-4": 10},
        failure_rate={"0": 0.1, "3-4": 0.8},
        coverage={"0": 1.0, "3-4": 0.0},
        cmi=cmi,
        cmi_null=null,
        p_value=p_value,
    )


def test_candidates_rank_by_p_value_then_residual_information() -> None:
    space = seed_space("airline", "c")
    feedback = Feedback(campaign_id="c", round=1)
    # num_read carries more raw information but most of it is the estimator's bias
    feedback.probes = [_probe("num_read", 0.005, 0.30, 0.25), _probe("num_write", 0.005, 0.2, 0.05)]
    decision, _ = ProgrammaticReflector().reflect(space, feedback, round=1)
    assert decision.new_factor is not None and decision.new_factor.name == "num_write"
    # a smaller p-value wins over a larger residual
    feedback.probes = [_probe("num_read", 0.005, 0.1, 0.05), _probe("num_write", 0.03, 0.3, 0.05)]
    decision, _ = ProgrammaticReflector().reflect(space, feedback, round=1)
    assert decision.new_factor is not None and decision.new_factor.name == "num_read"
