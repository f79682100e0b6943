"""Does the closed loop find the planted weakness, and does feedback pay? (issue 6's targets)

A plain script (not a pytest test):

    python tests/benchmarks/loop_discovery.py [--seeds 5] [--config deployments/campaigns/...]
        [--set campaign.budget_per_round=200]

Runs the offline campaign (programmatic roles, simulated learner with a planted weakness) for
each seed under three conditions: the full loop (``feedback``), ``ablations.no_feedback`` and
``ablations.fixed_state``, each in its own temporary lake, and prints per seed and in total:

- the round after which the Reflector added the planted feature as a factor (targets: after
  round 1 or 2 in at least 4 of 5 seeds with feedback, in at most 1 of 5 without);
- the verified share of the planted buckets and the learner's success on the official
  diagnostic tasks in them, in the round of the addition and the next (both should rise);
- across interaction slices (the values of the space's factors that the diagnostic set
  measures, i.e. its ``feedback`` rows with a success: task family, difficulty and tool-use
  pattern in airline; plus the planted feature's buckets, measured before it was a factor),
  the Spearman correlation between the pre-round capability gap ``1 - success`` and the next
  round's change in allocation, for the transition right after the addition (target at least
  0.7). Allocation is measured twice: as the share of blueprints that select the value (what
  the Designer and Planner asked for) and as the share of verified data realizing it (what the
  learner received). The report's loop table (``evosyn report``) measures the same correlation
  over a wider, fixed set of realized properties, including probes outside the space
  (``num_read``, ``computation``) whose shares no Designer controls;
- final diagnostic success with feedback, without it and with ``fixed_state`` (feedback must
  exceed ``fixed_state`` on average), on the official diagnostic tasks (the same tasks in every
  condition) and on the whole diagnostic set (official plus each campaign's own held-out tasks).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

from scipy.stats import spearmanr

from evosyn.agents.learner import SimulatedSettings
from evosyn.config import CampaignConfig, load_config
from evosyn.environments.features import factor_values
from evosyn.flows.campaign import campaign_flow
from evosyn.records import (
    Blueprint,
    EvalResult,
    ReflectorDecision,
    RoundSummary,
    ValueFeedback,
    Verification,
)
from evosyn.storage import Lake

CONDITIONS = {
    "feedback": [],
    "no_feedback": ["ablations.no_feedback=true"],
    "fixed_state": ["ablations.fixed_state=true"],
}


@dataclass
class Measured:
    """What one campaign did."""

    added_after: int | None
    seconds: float
    final_official: float
    final_all: float
    share: tuple[float, float] | None = None
    weak_success: tuple[float | None, float | None] | None = None
    rho_planned: float = math.nan
    rho_verified: float = math.nan
    n_slices: int = 0


def _share(verified: list[Verification], feature: str, value: str) -> float:
    return _share_in(verified, feature, {value})


def _share_in(verified: list[Verification], feature: str, values: set[str]) -> float:
    hits = sum(bool(values & set(factor_values(v.realized, feature))) for v in verified)
    return hits / max(1, len(verified))


def _selected(blueprints: list[Blueprint], factor: str, value: str) -> float:
    # Share of a round's blueprints the Designer and Planner asked to realize the value.
    return sum(value in b.selections.get(factor, []) for b in blueprints) / max(1, len(blueprints))


def _success(results: list[EvalResult]) -> float | None:
    return sum(r.success for r in results) / len(results) if results else None


def _rho(x: list[float], y: list[float]) -> float:
    if len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    return float(spearmanr(x, y).statistic)


def _fmt(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x:.3f}"


def _planted_slices(
    results: list[EvalResult], feature: str, known: list[ValueFeedback]
) -> list[ValueFeedback]:
    # The planted feature's buckets are interaction slices too, measured before it was a factor.
    if any(v.factor == feature for v in known):
        return []
    out = []
    for value in sorted({e.realized[feature] for e in results if feature in e.realized}):
        rows = [e for e in results if e.realized.get(feature) == value]
        out.append(
            ValueFeedback(
                campaign_id=rows[0].campaign_id,
                round=rows[0].round,
                factor=feature,
                value=value,
                coverage=0.0,
                n_verified=0,
                success=_success(rows),
                n_diagnostic=len(rows),
            )
        )
    return out


def measure(cfg: CampaignConfig, root: Path, cid: str) -> Measured:
    """Run one campaign and measure it."""
    weakness = cfg.agents.learner.kind_settings(SimulatedSettings).weaknesses[0]
    feature, planted = weakness.feature, set(weakness.values)
    started = time.perf_counter()
    campaign_flow(cfg, cid)
    seconds = time.perf_counter() - started
    lake = Lake(root)
    rounds = sorted(s.round for s in lake.read(RoundSummary, cid))
    passed = {r: [v for v in lake.read(Verification, cid, r) if v.passed] for r in rounds}
    evaluated = {r: lake.read(EvalResult, cid, r) for r in rounds}
    official = {r: [e for e in evaluated[r] if e.task_id.startswith("official:")] for r in rounds}
    added = [
        d.round
        for d in lake.read(ReflectorDecision, cid)
        if d.new_factor is not None and d.new_factor.name == feature
    ]
    out = Measured(
        added_after=min(added) if added else None,
        seconds=seconds,
        final_official=_success(official[rounds[-1]]) or 0.0,
        final_all=_success(evaluated[rounds[-1]]) or 0.0,
    )
    a = out.added_after
    if a is None or a + 1 not in passed:
        return out
    out.share = (_share_in(passed[a], feature, planted), _share_in(passed[a + 1], feature, planted))
    weak = [[e for e in official[r] if e.realized.get(feature) in planted] for r in (a, a + 1)]
    out.weak_success = (_success(weak[0]), _success(weak[1]))
    # Pre-round gap of every measured slice vs the next round's change in allocation.
    slices = [
        v for v in lake.read(ValueFeedback, cid, a) if v.success is not None and v.n_diagnostic
    ]
    slices += _planted_slices(evaluated[a], feature, slices)
    planned = {r: lake.read(Blueprint, cid, r) for r in (a, a + 1)}
    selected = {f for b in planned[a] for f in b.selections}
    gaps = [1.0 - (v.success or 0.0) for v in slices]
    # A value of a factor no blueprint could select yet was asked for as often as it realized.
    asked = [
        _selected(planned[a + 1], v.factor, v.value)
        - (
            _selected(planned[a], v.factor, v.value)
            if v.factor in selected
            else _share(passed[a], v.factor, v.value)
        )
        for v in slices
    ]
    got = [
        _share(passed[a + 1], v.factor, v.value) - _share(passed[a], v.factor, v.value)
        for v in slices
    ]
    out.rho_planned, out.rho_verified = _rho(gaps, asked), _rho(gaps, got)
    out.n_slices = len(slices)
    return out


def main() -> None:
    """Run every seed and condition and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--config", default="deployments/campaigns/airline-offline.yaml")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for every campaign, e.g. campaign.budget_per_round=200",
    )
    args = parser.parse_args()
    results: dict[str, list[Measured]] = {c: [] for c in CONDITIONS}
    with tempfile.TemporaryDirectory(prefix="evosyn-bench-") as tmp:
        for seed in range(args.seeds):
            for condition, extra in CONDITIONS.items():
                root = Path(tmp) / f"{condition}-{seed}"
                cid = f"bench-{condition.replace('_', '-')}-{seed}"
                cfg = load_config(
                    Path(args.config),
                    [
                        f"lake.root={root}",
                        f"campaign.seed={seed}",
                        f"campaign.id={cid}",
                        *args.set,
                        *extra,
                    ],
                    environ={},
                )
                results[condition].append(measure(cfg, root, cid))
    overrides = f" ({', '.join(args.set)})" if args.set else ""
    print(f"config {args.config}{overrides}, seeds 0..{args.seeds - 1}, learner: simulated")
    print(
        f"{'condition':<12} {'seed':>4} {'added':>5} {'planted share':>13} "
        f"{'planted success':>15} {'rho plan':>8} {'rho verif':>9} {'final off.':>10} "
        f"{'final all':>9} {'s':>4}"
    )
    for condition, rows in results.items():
        for seed, r in enumerate(rows):
            share = f"{r.share[0]:.2f}->{r.share[1]:.2f}" if r.share else "-"
            weak = (
                f"{_fmt(r.weak_success[0])}->{_fmt(r.weak_success[1])}" if r.weak_success else "-"
            )
            added = "-" if r.added_after is None else str(r.added_after)
            print(
                f"{condition:<12} {seed:>4} {added:>5} {share:>13} {weak:>15} "
                f"{_fmt(r.rho_planned):>8} {_fmt(r.rho_verified):>9} "
                f"{r.final_official:>10.3f} {r.final_all:>9.3f} {r.seconds:>4.0f}"
            )
    print()
    n = args.seeds
    for condition, rows in results.items():
        early = sum(1 for r in rows if r.added_after in (1, 2))
        print(f"{condition}: planted factor added after round 1 or 2 in {early}/{n} seeds")
    rises = [r for r in results["feedback"] if r.share and r.weak_success]
    share_up = sum(1 for r in rises if r.share and r.share[1] > r.share[0])
    weak_up = sum(
        1
        for r in rises
        if r.weak_success
        and None not in r.weak_success
        and (r.weak_success[1] or 0.0) > (r.weak_success[0] or 0.0)
    )
    print(
        f"feedback: after the addition, planted-bucket verified share rose in {share_up}/"
        f"{len(rises)}, learner success on them (official tasks) rose in {weak_up}/{len(rises)}"
    )
    for label, values in (
        ("blueprint selections", [r.rho_planned for r in rises]),
        ("verified data", [r.rho_verified for r in rises]),
    ):
        finite = [v for v in values if v == v]
        if finite:
            print(
                f"feedback: Spearman(pre-round gap, next-round change in {label}) "
                f"mean {statistics.mean(finite):.3f}, min {min(finite):.3f}, "
                f">= 0.7 in {sum(v >= 0.7 for v in finite)}/{len(finite)}"
            )
    for label, pick in (
        ("official diagnostic", lambda r: r.final_official),
        ("all diagnostic", lambda r: r.final_all),
    ):
        means = {c: statistics.mean(pick(r) for r in rows) for c, rows in results.items()}
        print(f"final success ({label}): " + ", ".join(f"{c} {m:.3f}" for c, m in means.items()))


if __name__ == "__main__":
    main()
