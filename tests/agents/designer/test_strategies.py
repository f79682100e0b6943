"""Strategies: EvoSyn and the R-Zero / AutoPlay baselines, chosen by name from the config."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evosyn.agents.designer import ProgrammaticDesigner
from evosyn.agents.designer.strategies import (
    STRATEGIES,
    FrontierDesigner,
    NoveltyDesigner,
    get_strategy,
    initial_space,
)
from evosyn.agents.roles import build_roles
from evosyn.config import ConfigError, load_config
from evosyn.environments.airline.generator import infeasible
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.records import Direction, EvalResult, Feedback, GenerationPlan, ValueFeedback
from evosyn.space import seed_space


def _result(i: int, family: str, difficulty: str, success: bool) -> EvalResult:
    return EvalResult(
        campaign_id="c",
        round=1,
        training_id="t",
        task_id=f"official:{i}",
        split="diagnostic",
        success=success,
        reward=float(success),
        realized={"task_family": family, "difficulty_profile": difficulty, "num_write": "3-4"},
    )


def _budget(plan: GenerationPlan, factor: str, key: str = "preferred") -> Counter[str]:
    out: Counter[str] = Counter()
    for d in plan.directions:
        for v in getattr(d, key).get(factor, []):
            out[v] += d.budget
    return out


FAILURES = [
    *(_result(i, "flight_cancellation", "hard", False) for i in range(6)),
    *(_result(10 + i, "flight_booking", "easy", False) for i in range(2)),
    *(_result(20 + i, "flight_change", "medium", True) for i in range(20)),
]


def _request_space() -> object:
    return initial_space(get_strategy("r_zero"), seed_space("airline", "c"), REALIZABLE)


def test_the_registry_names_the_paper_arms_and_refuses_unknown_names() -> None:
    assert {"evosyn", "r_zero", "autoplay"} <= set(STRATEGIES)
    assert get_strategy("evosyn").revises_space
    assert not get_strategy("r_zero").revises_space and not get_strategy("autoplay").revises_space
    with pytest.raises(ConfigError, match=r"campaign\.strategy: unknown strategy 'rzero'"):
        get_strategy("rzero")


def _frontier_results() -> list[EvalResult]:
    # flight_cancellation: 2 of 4 succeed (p = 0.5, the frontier); flight_booking: 1 of 4;
    # flight_change: 4 of 4 (solved, nothing to learn); write-heavy cancellations: 3 of 6.
    out = []
    for i, (family, wins, n, writes) in enumerate(
        [
            ("flight_cancellation", 2, 4, "1"),
            ("flight_booking", 1, 4, "1"),
            ("flight_change", 4, 4, "1"),
            ("flight_cancellation", 3, 6, "5+"),
        ]
    ):
        for k in range(n):
            r = _result(10 * i + k, family, "medium", k < wins)
            out.append(r.model_copy(update={"realized": {**r.realized, "num_write": writes}}))
    return out


def test_r_zero_proposes_tasks_at_the_learners_uncertainty_frontier() -> None:
    space = _request_space()
    asked: list[tuple[str, int]] = []

    def results(cid: str, round: int) -> list[EvalResult]:
        asked.append((cid, round))
        return _frontier_results()

    plan = FrontierDesigner(results, infeasible).design(
        space,  # type: ignore[arg-type]
        Feedback(campaign_id="c", round=1),
        "c",
        2,
        60,
    )
    assert asked == [("c", 1)]
    assert sum(d.budget for d in plan.directions) == 60
    family = _budget(plan, "task_family", "allowed")
    # reward 1 - 2|p - 1/2|: 1 at p = 0.5, 0.5 at p = 0.25, 0 at p = 1 (never asked)
    assert family["flight_cancellation"] == pytest.approx(2 * family["flight_booking"], abs=2)
    assert "flight_change" not in family
    # the request space names write counts: the frontier asks for write-heavy tasks
    assert _budget(plan, "num_write", "allowed")["5+"] > 0


def test_baselines_plan_in_the_generators_whole_request_space() -> None:
    seed = seed_space("airline", "c")
    assert initial_space(get_strategy("evosyn"), seed, REALIZABLE) == seed
    for name in ("r_zero", "autoplay"):
        space = initial_space(get_strategy(name), seed, REALIZABLE)
        added = [f for f in space.factors if f.name not in {g.name for g in seed.factors}]
        assert {f.name for f in added} == {"num_write", "num_read", "computation"}
        assert space.version == 1 and all(f.round_introduced == 0 for f in added)
        assert "5+" in space.factor("num_write").values


def test_baselines_start_like_evosyn_in_the_space_they_plan_in() -> None:
    space = _request_space()
    evosyn = ProgrammaticDesigner(infeasible).design(space, None, "c", 1, 60)  # type: ignore[arg-type]
    for designer in (
        FrontierDesigner(lambda c, r: [], infeasible),
        NoveltyDesigner(infeasible),
    ):
        assert designer.design(space, None, "c", 1, 60) == evosyn  # type: ignore[arg-type]


def test_autoplay_explores_toward_the_least_covered_values_without_reading_success() -> None:
    space = seed_space("airline", "c")
    values = [
        ValueFeedback(
            campaign_id="c",
            round=1,
            factor=f.name,
            value=v,
            coverage=0.1,
            n_verified=0 if v == "flight_booking" else 40,
            # A learner signal that must not matter.
            success=0.0 if v == "flight_change" else 1.0,
            n_diagnostic=10,
        )
        for f in space.active_factors
        for v in f.values
    ]
    fb = Feedback(campaign_id="c", round=1, values=values)
    plan = NoveltyDesigner(infeasible).design(space, fb, "c", 2, 60)
    family = _budget(plan, "task_family", "allowed")
    assert family["flight_booking"] == max(family.values()) and family["flight_booking"] > 0
    blind = [v.model_copy(update={"success": 0.5}) for v in values]
    same = NoveltyDesigner(infeasible).design(
        space, Feedback(campaign_id="c", round=1, values=blind), "c", 2, 60
    )
    assert same == plan


def _cfg(tmp_path: Path, strategy: str):  # type: ignore[no-untyped-def]
    return load_config(
        Path("deployments/campaigns/airline-offline.yaml"),
        [f"lake.root={tmp_path}", f"campaign.strategy={strategy}", "campaign.id=c"],
        environ={},
    )


@pytest.mark.parametrize(
    ("strategy", "designer", "reflects"),
    [
        ("evosyn", "programmatic", True),
        ("r_zero", "r_zero", False),
        ("autoplay", "autoplay", False),
    ],
)
def test_config_selects_the_strategy_and_nothing_else_changes(
    tmp_path: Path, strategy: str, designer: str, reflects: bool
) -> None:
    roles = build_roles(_cfg(tmp_path, strategy), failures=lambda campaign_id, round: [])
    assert roles.designer is not None and getattr(roles.designer, "name", "") == designer
    assert (roles.reflector is not None) is reflects
    base = build_roles(_cfg(tmp_path, "evosyn"))
    for role in ("planner", "generator", "teacher", "verifier", "learner"):
        assert type(getattr(roles, role)) is type(getattr(base, role))


def test_an_unknown_strategy_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"campaign\.strategy"):
        build_roles(_cfg(tmp_path, "nope"))


def test_r_zero_built_without_a_source_of_evaluations_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"r_zero strategy reads the learner's evaluations"):
        build_roles(_cfg(tmp_path, "r_zero"))


def test_r_zero_reads_the_campaigns_evaluations_from_the_lake(tmp_path: Path) -> None:
    from evosyn.storage import Lake
    from evosyn.tasks.loop import roles_for

    cfg = _cfg(tmp_path, "r_zero")
    Lake(str(tmp_path)).write(_frontier_results(), batch="diagnostic")
    roles = roles_for(cfg)
    assert roles.designer is not None
    plan = roles.designer.design(
        _request_space(),  # type: ignore[arg-type]
        Feedback(campaign_id="c", round=1),
        "c",
        2,
        60,
    )
    assert any(isinstance(d, Direction) and d.allowed for d in plan.directions)
    assert _budget(plan, "task_family", "allowed")["flight_cancellation"] > 0
