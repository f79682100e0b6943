"""The programmatic Designer: spread at cold start, budget toward gaps, new factors covered."""

from __future__ import annotations

from collections import Counter

from evosyn.agents.designer import ProgrammaticDesigner
from evosyn.agents.planner import ProgrammaticPlanner
from evosyn.records import Factor, Feedback, ObjectiveType, Probe, SynthesisSpace, ValueFeedback
from evosyn.space import add_factor, seed_space


def _feedback(space: SynthesisSpace, weak: tuple[str, str], *, round: int = 1) -> Feedback:
    """Even coverage and high success everywhere except one weak, rarely covered value."""
    values = []
    for f in space.active_factors:
        for v in f.values:
            is_weak = (f.name, v) == weak
            values.append(
                ValueFeedback(
                    campaign_id="c",
                    round=round,
                    factor=f.name,
                    value=v,
                    coverage=0.01 if is_weak else 1 / len(f.values),
                    n_verified=1 if is_weak else 20,
                    success=0.1 if is_weak else 0.97,
                    n_diagnostic=10,
                )
            )
    return Feedback(campaign_id="c", round=round, values=values)


def _budget_by_value(plan_dirs: list, factor: str) -> Counter[str]:  # type: ignore[type-arg]
    out: Counter[str] = Counter()
    for d in plan_dirs:
        for v in d.allowed.get(factor, []):
            out[v] += d.budget
    return out


def test_cold_start_spreads_budget_over_task_families() -> None:
    space = seed_space("airline", "c")
    plan = ProgrammaticDesigner().design(space, None, "c", 1, 60)
    assert plan.total_budget == 60 and sum(d.budget for d in plan.directions) == 60
    by_family = _budget_by_value(plan.directions, "task_family")
    assert set(by_family) == set(space.factor("task_family").values)
    assert max(by_family.values()) - min(by_family.values()) <= 1
    assert any(d.objective == ObjectiveType.EXPLORATION and not d.allowed for d in plan.directions)


def test_budget_moves_toward_the_large_gap_and_away_from_mastery() -> None:
    space = seed_space("airline", "c")
    plan = ProgrammaticDesigner().design(
        space, _feedback(space, ("task_family", "flight_booking")), "c", 2, 100
    )
    top = max(plan.directions, key=lambda d: d.budget)
    assert top.allowed == {"task_family": ["flight_booking"]}
    assert top.objective == ObjectiveType.FAILURE_TARGETED
    assert top.budget >= 30, "the weak slice gets the biggest share"
    assert "success 0.10" in top.rationale


def test_new_factor_gets_budget_over_its_whole_range_mostly_to_empty_values() -> None:
    base = seed_space("airline", "c")
    space = add_factor(base, Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"]), round=2)
    fb = _feedback(base, ("task_family", "flight_change"))
    fb.values += [
        ValueFeedback(
            campaign_id="c", round=1, factor="num_write", value=v, coverage=c, n_verified=n
        )
        for v, c, n in [
            ("0", 0.2, 12),
            ("1", 0.7, 40),
            ("2", 0.1, 6),
            ("3-4", 0.0, 0),
            ("5+", 0.0, 0),
        ]
    ]
    plan = ProgrammaticDesigner().design(space, fb, "c", 2, 100)
    writes = _budget_by_value(plan.directions, "num_write")
    assert set(writes) == {"0", "1", "2", "3-4", "5+"}
    assert writes["3-4"] > writes["1"] and writes["5+"] > writes["0"]
    assert sum(writes.values()) >= 50
    # the plan is executable: every direction grounds into blueprints of the new space
    for d in plan.directions:
        for b in ProgrammaticPlanner().plan(space, d, seed=0):
            b.validate_against(space)


def _shares(space: SynthesisSpace, directions: list, factor: str) -> dict[str, float]:  # type: ignore[type-arg]
    """Share of each value of ``factor`` in the blueprints the programmatic Planner plans."""
    from evosyn.environments.airline.generator import infeasible

    planner = ProgrammaticPlanner(infeasible)
    drawn = [b for d in directions for b in planner.plan(space, d, seed=1)]
    counts = Counter(v for b in drawn for v in b.selections[factor])
    return {v: counts[v] / len(drawn) for v in space.factor(factor).values}


def test_other_factors_are_weighted_toward_their_gaps() -> None:
    space = seed_space("airline", "c")
    fb = _feedback(space, ("task_family", "flight_booking"))
    for v in fb.values:
        if (v.factor, v.value) == ("difficulty_profile", "hard"):
            v.success = 0.4
    plan = ProgrammaticDesigner().design(space, fb, "c", 2, 100)
    by_slice = {(f, vs[0]): d for d in plan.directions for f, vs in d.allowed.items()}
    weights = by_slice[("task_family", "flight_booking")].weights["difficulty_profile"]
    assert weights["hard"] == 1.0 > max(weights["easy"], weights["medium"])
    assert "task_family" not in by_slice[("task_family", "flight_booking")].weights
    explore = [d for d in plan.directions if not d.allowed]
    assert explore and all(not d.weights and not d.preferred for d in explore)
    # The weak values' shares of the round rise above their coverage, the others' fall.
    difficulty = _shares(space, plan.directions, "difficulty_profile")
    assert difficulty["hard"] > 0.5 and max(difficulty["easy"], difficulty["medium"]) < 1 / 3


def test_weights_make_up_for_what_the_domain_couples() -> None:
    from evosyn.environments.airline.generator import infeasible

    # After num_write is added, its write-heavy directions can only be ``hard`` in airline;
    # the learner fails most on ``medium``, so the rest of the round must make up for them.
    base = seed_space("airline", "c")
    space = add_factor(base, Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"]), round=2)
    fb = _feedback(base, ("difficulty_profile", "medium"))
    plan = ProgrammaticDesigner(infeasible).design(space, fb, "c", 2, 120)
    assert _budget_by_value(plan.directions, "num_write")["3-4"] >= 10
    fitted = _shares(space, plan.directions, "difficulty_profile")
    unweighted = [d.model_copy(update={"weights": {}}) for d in plan.directions]
    assert fitted["medium"] > _shares(space, unweighted, "difficulty_profile")["medium"] + 0.1
    assert fitted["medium"] > 1 / 3 > fitted["easy"]


def test_new_factor_budget_follows_the_gap_its_probe_measured() -> None:
    base = seed_space("airline", "c")
    space = add_factor(base, Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"]), round=2)
    fb = _feedback(base, ("task_family", "flight_change"))
    fb.probes = [
        Probe(
            campaign_id="c",
            round=1,
            name="num_write",
            distribution={"0": 50, "1": 45, "2": 12, "3-4": 12},
            failure_rate={"0": 0.1, "1": 0.1, "2": 0.1, "3-4": 0.8},
            coverage={"0": 0.25, "1": 0.7, "2": 0.05, "3-4": 0.0, "5+": 0.0},
            cmi=0.1,
            p_value=0.005,
        )
    ]
    plan = ProgrammaticDesigner().design(space, fb, "c", 2, 100)
    writes = _budget_by_value(plan.directions, "num_write")
    # Outside its own directions the new factor keeps the mix the verified data had.
    others = [d for d in plan.directions if d.allowed and "num_write" not in d.allowed]
    assert others and all(
        d.weights["num_write"] == {"0": 0.3571, "1": 1.0, "2": 0.1, "3-4": 0.1, "5+": 0.1}
        for d in others
    )
    assert set(writes) == {"0", "1", "2", "3-4", "5+"}
    # the failing, empty bucket gets the most
    assert writes["3-4"] == max(writes.values())
    assert writes["2"] > writes["1"]  # the same gap, but under-covered
    # most of it to the empty or under-covered buckets
    assert writes["2"] + writes["3-4"] + writes["5+"] > writes["0"] + writes["1"]


def test_a_value_no_feasible_blueprint_can_have_gets_no_budget() -> None:
    from evosyn.environments.airline.generator import infeasible

    base = seed_space("airline", "c")
    space = add_factor(base, Factor(name="num_read", values=["0", "1", "2", "3-4", "5+"]), round=2)
    fb = _feedback(base, ("task_family", "flight_change"))
    assert (
        _budget_by_value(
            ProgrammaticDesigner().design(space, fb, "c", 2, 100).directions, "num_read"
        )["0"]
        > 0
    )
    plan = ProgrammaticDesigner(infeasible).design(space, fb, "c", 2, 100)
    by_value = _budget_by_value(plan.directions, "num_read")
    assert "0" not in by_value and sum(d.budget for d in plan.directions) == 100
    # num_read=1 passes the rule alone but fits no airline task: the dry run finds that too.
    assert infeasible({"num_read": ["1"]}) is None and "1" not in by_value
    assert set(by_value) == {"2", "3-4", "5+"}
    for d in plan.directions:
        ProgrammaticPlanner(infeasible).plan(space, d, seed=0)


def test_no_weight_on_a_difficulty_the_directions_pin_cannot_reach() -> None:
    from evosyn.environments.airline.generator import infeasible

    # Three or more writes make an airline task hard whatever its family; the rule cannot say
    # so for a pin on num_write alone (the family is open), so the weights were given to
    # easy and medium too, where the Planner only spent tries (and an LLM Planner was told to
    # draw them).
    base = seed_space("airline", "c")
    space = add_factor(base, Factor(name="num_write", values=["0", "1", "2", "3-4", "5+"]), round=2)
    fb = _feedback(base, ("difficulty_profile", "medium"))
    plan = ProgrammaticDesigner(infeasible).design(space, fb, "c", 2, 120)
    heavy = [d for d in plan.directions if d.allowed.get("num_write") in (["3-4"], ["5+"])]
    assert heavy
    assert infeasible({"num_write": ["3-4"], "difficulty_profile": ["easy"]}) is None
    for d in heavy:
        assert set(d.weights["difficulty_profile"]) == {"hard"}, d.weights
    # Every weighted difficulty of every direction is one its pin can reach.
    planner = ProgrammaticPlanner(infeasible)
    for d in plan.directions:
        for value in d.weights.get("difficulty_profile", {}):
            pinned = {**d.allowed, "difficulty_profile": [value]}
            planner.plan(space, d.model_copy(update={"allowed": pinned, "budget": 1}), seed=0)
