"""Controllability on airline: asking for a factor value yields it, measured on verified data.

The space is the seed space plus the factors the Reflector may promote (``num_write``,
``num_read``, ``computation``); the Planner uses the Generator's feasibility rule, and every
figure is recomputed from the verified trajectories by the realized-feature extraction.
``policy_or_constraint_focus`` is not measured: the rule a task hinges on is not visible in
its tool calls.
"""

from __future__ import annotations

import collections
from typing import Any

import pytest
from synthesis_checks import PROMOTED, Run, plan_and_synthesize

from evosyn.agents.reflector import REALIZABLE
from evosyn.environments import get_domain
from evosyn.environments.airline.generator import AirlineGenerator, infeasible
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.features import UNDERIVABLE_PATTERNS, realized_features

MEASURED = ("task_family", "difficulty_profile", "tool_use_pattern", *PROMOTED)


def synthesize_report(count: int, seed: int, promoted: bool = True) -> dict[str, Any]:
    """Plan ``count`` blueprints, synthesize them, and the figures as a dict (printed)."""
    measured = MEASURED if promoted else MEASURED[:3]
    generator = AirlineGenerator()
    run = plan_and_synthesize(
        "airline",
        count,
        seed,
        promoted=promoted,
        infeasible=infeasible,
        generator=generator,
        teacher=AirlineTeacher(),
    )
    batch = run.batch
    verified = run.verified
    report = {
        "blueprints": len(run.blueprints),
        "generated": len(batch.tasks),
        "verified": len(verified),
        "verified_share_of_blueprints": len(verified) / len(run.blueprints),
        "verified_share_of_generated": len(verified) / max(1, len(batch.verifications)),
        "rejections": dict(run.stages),
        "rejection_reasons": collections.Counter(
            r.reason.split(":")[0] for r in batch.rejections
        ).most_common(6),
        "controllability": run.controllability_figures(),
        **run.yield_figures(generator.skips),
        "tool_use_pattern_per_value": _pattern_match(run),
        "policy_or_constraint_focus": "not derivable from tool calls (not measured)",
    }
    print(report)
    # Every promoted value is asked for and delivered somewhere in the batch.
    run.check(report, measured, REALIZABLE["computation"].values if promoted else [])
    return report


def _pattern_match(run: Run) -> dict[str, str]:
    """Share of verified samples whose requested (derivable) patterns all show, and per value."""
    domain = get_domain("airline")
    whole = [0, 0]
    per_value: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for wanted, messages in run.requested_patterns():
        wanted -= UNDERIVABLE_PATTERNS
        if not wanted:
            continue
        shown = set(realized_features(domain, messages).tool_use_patterns or [])
        whole[0] += wanted <= shown
        whole[1] += 1
        for value in wanted:
            per_value[value][0] += value in shown
            per_value[value][1] += 1
    out = {"all requested": f"{whole[0]}/{whole[1]}"}
    out |= {v: f"{m}/{t}" for v, (m, t) in sorted(per_value.items())}
    return out


def test_100_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(100, seed=11)
    # Requested challenges a task gives no occasion for (a change of mind where nothing is
    # proposed) are rejected at "realize"; 0.83 measured on this seed.
    assert report["verified_share_of_blueprints"] >= 0.8


@pytest.mark.slow
def test_1000_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=2024)
    assert report["verified_share_of_blueprints"] >= 0.85  # realize rejections included
    assert report["distinct_decisive_signatures"] >= 30


@pytest.mark.slow
def test_1000_seed_space_blueprints_realize_every_requested_factor() -> None:
    report = synthesize_report(1000, seed=2024, promoted=False)
    assert report["verified_share_of_blueprints"] >= 0.85  # realize rejections included
