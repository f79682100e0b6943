"""Shared pieces of the programmatic synthesis tests: hand-built blueprints, planned runs.

The airline, retail and telecom Generator tests measure controllability the same way: the
seed space plus the factors the Reflector may promote, planned with the Generator's
feasibility rule, synthesized, and the realized values recomputed from the verified
trajectories. What each domain checks beyond that (its procedure rules, its pattern
vocabulary) stays in the domain's test module.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, controllability, synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, Direction, SynthesisSpace, SynthTask
from evosyn.space import add_factor, seed_space

#: Factors the Reflector may promote, added to the seed space in this order.
PROMOTED = ("num_write", "num_read", "computation")
#: Least share of requests a measured factor must realize.
MIN_RATE = 0.99


def hand_blueprint(
    family: str,
    outcome: str,
    *,
    focus: Sequence[str],
    patterns: Sequence[str],
    challenges: Sequence[str] = (),
    controls: Mapping[str, str] | None = None,
    difficulty: str = "medium",
    blueprint_id: str | None = None,
    index: int = 0,
) -> Blueprint:
    """A hand-built blueprint for one family and outcome.

    ``controls`` are selected values too; ``num_write`` / ``num_read`` among them are also
    the blueprint's difficulty controls. The id is ``bp-{family}-{outcome}-{index}`` unless
    ``blueprint_id`` is given.
    """
    controls = controls or {}
    selections = {
        "task_family": [family],
        "expected_outcome": [outcome],
        "policy_or_constraint_focus": list(focus),
        "tool_use_pattern": list(patterns),
        "interaction_challenge": list(challenges),
        "difficulty_profile": [difficulty],
    } | {k: [v] for k, v in controls.items()}
    return Blueprint(
        campaign_id="test",
        round=1,
        blueprint_id=blueprint_id or f"bp-{family}-{outcome}-{index}",
        direction_id="d0",
        space_version=1,
        selections=selections,
        intent="test",
        difficulty_controls={k: v for k, v in controls.items() if k in ("num_write", "num_read")},
        seed=0,
    )


def promoted_space(domain: str) -> SynthesisSpace:
    """The domain's seed space with the factors its Generator realizes added (``PROMOTED``)."""
    realizable = domain_plugin(domain).realizable
    space = seed_space(domain, "ctl")
    for round_, name in enumerate((n for n in PROMOTED if n in realizable), start=1):
        space = add_factor(space, realizable[name], round=round_)
    return space


def exploration(
    space: SynthesisSpace,
    budget: int,
    *,
    direction_id: str = "explore",
    campaign_id: str | None = None,
) -> Direction:
    """A round-1 exploration direction over ``space`` (its campaign unless ``campaign_id``).

    Blueprint ids, and the wording seeded from them, follow ``direction_id``.
    """
    return Direction(
        campaign_id=campaign_id or space.campaign_id,
        round=1,
        direction_id=direction_id,
        space_version=space.version,
        objective="exploration",
        budget=budget,
    )


@dataclass
class Run:
    """A planned and synthesized batch, with what the reports are computed from."""

    blueprints: list[Blueprint]
    batch: SynthesisBatch
    seconds: float
    #: Rejections per stage.
    stages: collections.Counter[str]
    #: Controllability per factor.
    rates: dict[str, Any]

    @property
    def verified(self) -> list[Any]:
        return self.batch.verified

    def controllability_figures(self) -> dict[str, str]:
        """Each factor's rate, as printed: ``rate (matched/total, N underivable)``."""
        return {
            name: f"{c.rate:.4f} ({c.matched}/{c.total}, {c.underivable} underivable)"
            for name, c in sorted(self.rates.items())
        }

    def outcome_figures(self) -> dict[str, Any]:
        """The report's head: blueprints, verified samples, rejections, controllability."""
        return {
            "blueprints": len(self.blueprints),
            "verified": len(self.verified),
            "verified_share_of_blueprints": len(self.verified) / len(self.blueprints),
            # A blueprint whose every candidate repeats a kept task finds the database spent,
            # not the Generator wanting: the share of the others is what it controls.
            "verified_share_of_fresh_blueprints": len(self.verified)
            / max(1, len(self.blueprints) - self.stages.get("duplicate", 0)),
            "rejections": dict(self.stages),
            "controllability": self.controllability_figures(),
        }

    def yield_figures(self, skips: int) -> dict[str, Any]:
        """Diversity, contamination, skipped candidates, computation mix and throughput."""
        verified = self.verified
        return {
            "distinct_decisive_signatures": len(
                {v.realized["decisive_signature"] for v in verified}
            ),
            "contamination_rejections": self.stages.get("contamination", 0),
            "candidates_skipped": skips,
            "computation_mix": dict(
                collections.Counter(v.realized["computation"] for v in verified)
            ),
            "verified_tasks_per_second": len(verified) / self.seconds,
        }

    def requested_patterns(self) -> Iterator[tuple[set[str], list[Any]]]:
        """(requested ``tool_use_pattern`` values, messages) of every verified sample."""
        by_task = {t.task_id: t.blueprint_id for t in self.batch.tasks}
        by_id = {b.blueprint_id: b for b in self.blueprints}
        trajectories = {t.trajectory_id: t for t in self.batch.trajectories}
        for verdict in self.batch.verified:
            wanted = set(by_id[by_task[verdict.task_id]].selections.get("tool_use_pattern", []))
            yield wanted, trajectories[verdict.trajectory_id].messages

    def check(self, report: Mapping[str, Any], measured: Sequence[str], mix: Sequence[str]) -> None:
        """The checks every domain's report passes.

        Every ``measured`` factor is requested and realized at :data:`MIN_RATE`, every
        computation kind in ``mix`` is delivered somewhere, nothing fails verification, and
        every rejection says why in one line.
        """
        assert set(measured) <= set(self.rates), sorted(self.rates)
        for name in measured:
            assert self.rates[name].total > 0, name
            assert self.rates[name].rate >= MIN_RATE, (name, report["controllability"][name])
        for value in mix:
            assert report["computation_mix"].get(value, 0) > 0, value
        rejections = self.batch.rejections
        failed = [(r.blueprint_id, r.reason) for r in rejections if r.stage == "verify"]
        assert not failed, failed[:5]
        assert all(r.reason.strip() and "\n" not in r.reason for r in rejections)


def plan_and_synthesize(
    domain: str,
    count: int,
    seed: int,
    *,
    promoted: bool,
    infeasible: Callable[[Mapping[str, Sequence[str]]], str | None],
    generator: Any,
    teacher: Any,
) -> Run:
    """Plan ``count`` blueprints (the promoted or the seed space) and synthesize them."""
    space = promoted_space(domain) if promoted else seed_space(domain, "ctl")
    blueprints = ProgrammaticPlanner(infeasible).plan(space, exploration(space, count), seed)
    start = time.perf_counter()
    batch = synthesize(
        blueprints,
        generator,
        teacher,
        ReplayVerifier(domain),
        seed=seed,
    )
    seconds = time.perf_counter() - start
    return Run(
        blueprints=blueprints,
        batch=batch,
        seconds=seconds,
        stages=collections.Counter(r.stage for r in batch.rejections),
        rates={c.factor: c for c in controllability(blueprints, batch)},
    )


def verified_rollout(task: SynthTask, teacher: Any, verifier: ReplayVerifier) -> tuple[Any, Any]:
    """The verdict and messages of ``teacher``'s rollout (seed 1) of ``task``, which passes."""
    messages = teacher.rollout(task, seed=1).messages
    verdict = verifier.verify(task.task, messages)
    assert verdict.passed, verdict.reasons
    return verdict, messages
