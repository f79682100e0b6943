"""Every metric against values worked out by hand on small fixtures, edge cases included."""

from __future__ import annotations

import math

import pytest

from evosyn.report import metrics as m
from evosyn.report.data import realized_values, sample_values

H_21 = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))  # entropy of a 2:1 split


def s(r: int = 1, pattern: str = "none", seq: tuple[str, ...] = (), **values: str) -> m.Sample:
    return m.Sample(
        round=r,
        values={k: tuple(v.split(",")) for k, v in values.items()},
        pattern=pattern,
        sequence=seq,
        decisive=seq,
    )


SAMPLES = [
    s(task_family="a", outcome="x"),
    s(task_family="a", outcome="x"),
    s(task_family="b", outcome="x"),
]
REF = {"task_family": ["a", "b", "c", "d"], "outcome": ["x", "y"]}


def test_factor_coverage_is_mean_share_of_reference_values() -> None:
    scored = m.factor_coverage(SAMPLES, REF)
    assert scored.parts == {"task_family": 0.5, "outcome": 0.5}
    assert scored.value == 0.5


def test_factor_coverage_ignores_values_outside_the_reference() -> None:
    scored = m.factor_coverage([s(task_family="a,zzz")], {"task_family": ["a", "b"]})
    assert scored.value == 0.5


def test_factor_balance_is_normalised_entropy() -> None:
    scored = m.factor_balance(SAMPLES, REF)
    assert scored.parts["task_family"] == pytest.approx(H_21 / math.log(4))
    assert scored.parts["outcome"] == 0.0  # one of two values: all mass on it
    assert scored.value == pytest.approx(H_21 / math.log(4) / 2)


def test_edge_cases_one_value_and_empty_factor() -> None:
    ref = {"only": ["v"], "empty": ["p", "q"]}
    samples = [s(only="v"), s(only="v")]
    assert m.factor_coverage(samples, ref).parts == {"only": 1.0, "empty": 0.0}
    assert m.factor_balance(samples, ref).parts == {"only": 1.0, "empty": 0.0}
    assert m.factor_coverage([], ref).value == 0.0
    assert m.factor_balance([], {}).value == 0.0


def test_uniform_distribution_has_balance_one() -> None:
    samples = [s(f=v) for v in "abcd"]
    assert m.factor_balance(samples, {"f": list("abcd")}).value == pytest.approx(1.0)


def test_interaction_coverage_counts_observed_pairs() -> None:
    scored = m.interaction_coverage(SAMPLES, REF, [("task_family", "outcome")])
    assert scored.parts == {"task_family x outcome": 2 / 8}
    multi = [s(a="1,2", b="x")]  # a multi-valued factor contributes every pair
    assert m.interaction_coverage(multi, {"a": ["1", "2"], "b": ["x"]}, [("a", "b")]).value == 1.0


def test_combinatorial_coverage_uses_the_union_of_cells() -> None:
    runs = {
        "A": [s(task_family="a", outcome="x"), s(task_family="b", outcome="x")],
        "B": [s(task_family="a", outcome="x"), s(task_family="c", outcome="y")],
        "C": [s(task_family="a", outcome="x")],
    }
    got = m.combinatorial_coverage(runs, ["task_family", "outcome"])
    assert got == {"A": 2 / 3, "B": 2 / 3, "C": 1 / 3}


def test_trajectory_diversity_against_the_union() -> None:
    samples = [s(pattern="read-write"), s(pattern="read-write"), s(pattern="read")]
    union = {"read-write", "read", "write", "none"}
    assert m.trajectory_diversity(samples, union) == pytest.approx(H_21 / math.log(4))
    # A single pattern has no diversity, however the union is sized.
    assert m.trajectory_diversity([s(pattern="read")], {"read"}) == 0.0
    assert m.trajectory_diversity([s(pattern="read")] * 3, union) == 0.0


def test_structural_support_cumulative_by_round() -> None:
    samples = [
        s(1, seq=("A", "B")),
        s(1, seq=("A", "B")),
        s(1, seq=("A",)),
        s(2, seq=("A", "C")),
        s(3, seq=("A",)),
    ]
    assert m.cumulative_support(samples) == {1: 2, 2: 3, 3: 3}


def test_size_matched_support() -> None:
    seqs = [("A",), ("A",), ("B",), ("C",)]
    assert m.size_matched_support(seqs, 10) == 3.0  # no subsampling when the run is smaller
    assert m.size_matched_support(seqs, 1) == 1.0
    matched = m.size_matched_support(seqs, 2, draws=400)
    # Of the 6 pairs, only {A, A} has one distinct sequence: expectation 2 - 1/6.
    assert matched == pytest.approx(2 - 1 / 6, abs=0.06)


def test_unique_support_fraction() -> None:
    ours = {("x",), ("y",), ("z",)}
    assert m.unique_support_fraction(ours, {("x",), ("q",)}) == pytest.approx(2 / 3)
    assert m.unique_support_fraction(set(), {("x",)}) == 0.0
    assert m.unique_support_fraction(ours, ours) == 0.0


def test_contrastive_support_counts_compositions_with_two_orders() -> None:
    seqs = [("w1", "w2"), ("w2", "w1"), ("w1", "w2"), ("w1", "w3"), ("w1",)]
    assert m.contrastive_support(seqs) == 0.5
    assert m.contrastive_support([("w1",), ()]) == 0.0


def test_slice_success_shares_and_allocation_change() -> None:
    rows = [({"f": ("a",)}, True), ({"f": ("a",)}, False), ({"f": ("b",)}, True)]
    assert m.slice_success(rows) == {("f", "a"): 0.5, ("f", "b"): 1.0}
    before = m.slice_shares([s(f="a"), s(f="a"), s(f="b"), s(f="b")], ["f"])
    after = m.slice_shares([s(f="a"), s(f="a"), s(f="a"), s(f="c")], ["f"])
    assert before == {("f", "a"): 0.5, ("f", "b"): 0.5}
    assert m.allocation_change(before, after) == {
        ("f", "a"): 0.25,
        ("f", "b"): -0.5,
        ("f", "c"): 0.25,
    }


def test_targeted_improvement_rate() -> None:
    shift = {("f", "a"): 0.2, ("f", "b"): 0.1, ("f", "c"): -0.3, ("f", "d"): 0.4}
    before = {("f", "a"): 0.2, ("f", "b"): 0.5, ("f", "c"): 0.1, ("f", "d"): 0.3}
    after = {("f", "a"): 0.6, ("f", "b"): 0.4, ("f", "c"): 0.9}  # d is not measured after
    assert m.targeted_improvement(shift, before, after) == (1, 2)


def test_spearman_alignment_monotone_and_degenerate() -> None:
    a = m.spearman_alignment([1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12], resamples=500)
    assert a.rho == pytest.approx(1.0)
    assert a.ci_low == pytest.approx(1.0) and a.ci_high == pytest.approx(1.0)
    assert a.p_value is not None and a.p_value < 0.02  # only 2 of 720 orders reach |rho| = 1
    inverse = m.spearman_alignment([1, 2, 3, 4], [4, 3, 2, 1])
    assert inverse.rho == pytest.approx(-1.0)
    assert m.spearman_alignment([1, 2], [1, 2]).rho is None
    assert m.spearman_alignment([1, 2, 3], [5, 5, 5]).rho is None


def test_marginal_gain_per_thousand_examples() -> None:
    got = m.marginal_gain({1: 0.5, 2: 0.6, 3: 0.55}, {1: 100, 2: 200, 3: 0})
    assert got[2] == pytest.approx(0.5)
    assert got[3] is None  # nothing added: no ratio
    assert 1 not in got


def test_controllability_exact_match_and_spearman() -> None:
    pairs = {"difficulty_profile": [("easy", "easy"), ("hard", "hard"), ("medium", "hard")]}
    [c] = m.controllability(pairs, {"difficulty_profile": ["easy", "medium", "hard"]})
    assert c.exact == pytest.approx(2 / 3)
    # Ranks (1, 3, 2) vs (1, 2.5, 2.5): covariance 1.5 over sqrt(2 * 1.5).
    assert c.spearman == pytest.approx(1.5 / math.sqrt(3))
    [u] = m.controllability({"task_family": [("a", "a"), ("a", "b")]}, {})
    assert (u.exact, u.spearman, u.n) == (0.5, None, 2)


def test_tertiles_and_information() -> None:
    assert m.tertiles([0, 1, 2, 3, 4, 5]) == ["low", "low", "mid", "mid", "high", "high"]
    assert m.tertiles([]) == []
    fail = [True, True, False, False]
    z = ["a", "a", "b", "b"]
    info = m.factor_information(fail, z, ["*"] * 4, z)
    assert info.cmi_space == pytest.approx(math.log(2))
    assert info.nmi_complexity == pytest.approx(1.0)
    assert info.mi_fail_complexity == pytest.approx(math.log(2))
    assert info.cmi_complexity == pytest.approx(0.0)  # g already tells everything z does
    constant = m.factor_information(fail, ["a"] * 4, ["*"] * 4, ["low"] * 4)
    assert constant.cmi_space == 0.0 and constant.nmi_complexity == 0.0


def test_entropy_edge_cases() -> None:
    assert m.entropy({}) == 0.0
    assert m.normalised_entropy({"a": 3}, 1) == 1.0
    assert m.normalised_entropy({}, 3) == 0.0
    assert m.normalised_entropy({"a": 1, "b": 1}, 2) == pytest.approx(1.0)


def test_structural_values_come_from_the_realized_features() -> None:
    realized = {
        "task_family": "flight_change",
        "num_write": "2",
        "tool_use_patterns": "lookup_verify_then_modify;multi_entity_retrieval",
        "functional_pattern": "read-write",
        "difficulty_profile": "hard",
    }
    requested = {
        "task_family": ["flight_booking"],
        "tool_use_pattern": ["policy_check_before_action"],
        "expected_outcome": ["fulfill"],
    }
    values = sample_values(realized, requested)
    assert values["task_family"] == ("flight_change",)  # never the plan's value
    assert values["tool_use_pattern"] == ("lookup_verify_then_modify", "multi_entity_retrieval")
    assert values["expected_outcome"] == ("fulfill",)  # not derivable: as the task states it
    assert values["state_change"] == ("multiple",)
    assert "functional_pattern" not in values
    assert realized_values({"tool_use_patterns": "none", "num_write": "0"}) == {
        "tool_use_pattern": (),
        "num_write": ("0",),
        "state_change": ("none",),
    }


def test_conditional_mutual_information_agrees_with_the_probes() -> None:
    from evosyn.agents.feedback.probes import conditional_mutual_information as probe_cmi

    fail = [True, False, True, True, False, False, True, False, True]
    z = ["0", "1", "3-4", "3-4", "1", "0", "3-4", "1", "0"]
    strata = ["a", "a", "a", "b", "b", "b", "b", "a", "b"]
    got = m.conditional_mutual_information(fail, z, strata)
    assert got > 0
    assert got == pytest.approx(probe_cmi(fail, z, strata))
    assert m.conditional_mutual_information([], [], []) == 0.0


def test_information_table_marks_the_promoted_factor() -> None:
    from evosyn.records import Factor, FactorOrigin, FactorStatus
    from evosyn.report.data import CampaignData, realized_values
    from evosyn.report.tables import information_table

    def task(write: str, ok: bool) -> tuple[dict[str, tuple[str, ...]], bool, dict[str, str]]:
        realized = {k: "0" for k in ("num_read", "num_tool_calls", "num_numeric_args")}
        realized |= {"num_write": write, "num_compute": "0", "computation": "none"}
        realized |= {"task_family": "f", "difficulty_profile": "easy", "tool_use_patterns": "x"}
        return realized_values(realized), ok, realized

    new = Factor(
        name="num_write",
        values=["0", "1", "2", "3-4", "5+"],
        origin=FactorOrigin.FAILURE_DRIVEN,
        status=FactorStatus.EXPERIMENTAL,
        round_introduced=2,
    )
    rows = [task("3-4", False), task("3-4", False), task("1", True), task("1", True)]
    data = CampaignData("c", "airline", [new], [], {1: rows, 2: rows}, {}, {})
    table = information_table(data)
    by = {(r[0], r[1]): dict(zip(table.columns, r, strict=True)) for r in table.rows}
    first = by[(1, "num_write")]
    assert first["promoted"] == "yes"  # promoted from the evaluation after round 1
    assert first["I(fail; z | O_r)"] == pytest.approx(math.log(2))
    assert (2, "num_write") not in by  # once in the space it is a stratum, not a candidate
    assert by[(1, "num_read")]["I(fail; z | O_r)"] == 0.0  # constant: no information


def test_wilson_interval_matches_published_values_and_stays_in_bounds() -> None:
    # 8 of 10 at 95%: [0.4902, 0.9433] (Wilson 1927; Newcombe 1998, table I).
    r = m.wilson_interval(8, 10)
    assert r.value == 0.8 and r.n == 10
    assert (round(r.low, 4), round(r.high, 4)) == (0.4902, 0.9433)
    none, every = m.wilson_interval(0, 10), m.wilson_interval(10, 10)
    assert none.low == 0.0 and round(none.high, 4) == 0.2775
    assert every.high == 1.0 and round(every.low, 4) == 0.7225
    assert m.wilson_interval(0, 0).value is None
    narrow, wide = m.wilson_interval(400, 500), m.wilson_interval(8, 10, level=0.99)
    assert narrow.high - narrow.low < r.high - r.low < wide.high - wide.low
    with pytest.raises(ValueError, match="successes"):
        m.wilson_interval(11, 10)


def test_pass_hat_k_is_the_chance_that_k_trials_all_succeed() -> None:
    # Task A: 3 of 3; task B: 2 of 3 (pass^2 = C(2,2)/C(3,2) = 1/3); task C: 1 trial, left out.
    trials = [(3, 3), (3, 2), (1, 1)]
    assert m.pass_hat_k(trials, 1) == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert m.pass_hat_k(trials, 2) == pytest.approx((1 + 1 / 3) / 2)
    assert m.pass_hat_k(trials, 3) == pytest.approx((1 + 0) / 2)
    assert m.pass_hat_k(trials, 4) is None
    with pytest.raises(ValueError, match="k must"):
        m.pass_hat_k(trials, 0)
