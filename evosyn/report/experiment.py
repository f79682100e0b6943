"""``evosyn report --experiment``: the paper's Table 1 and mechanism analyses over an experiment.

Every figure is computed from lake records of the experiment's finished arms
(``experiment_arms``), each arm a campaign per seed:

- **success**: the final round's learner on the fixed diagnostic set (the official diagnostic
  split, the same tasks and trials in every arm and round), one rate per seed; the table shows
  the mean over seeds with a 95% Student-t interval across seeds.
- **paired difference**: per seed, the arm's success minus the reference arm's on the same
  episodes (same task, same trial), then the mean over seeds with a 95% t interval and a paired
  t-test p-value.
- **planted slice**: the same, restricted to the fixed-set episodes in a planted weakness of
  the simulated learner (``agents.learner.weaknesses``).
- **factor recovery**: the share of seeds whose synthesis space gained the planted weakness's
  feature as a factor, with a Wilson 95% interval over seeds.
- **gap–allocation alignment**: Spearman ρ between a slice's capability gap after round r and
  the change of its share of verified data from round r to r + 1, pairs pooled over the arm's
  transitions and seeds; percentile bootstrap 95% interval and permutation p-value.
- **realized controllability**: per factor, the share of verified samples whose realized value
  is the requested one, pooled over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from scipy import stats

from evosyn.agents.learner.diagnostic import is_official
from evosyn.records import Campaign, EvalResult, ExperimentArm, RoundSummary, SynthesisSpace
from evosyn.report import metrics as m
from evosyn.report.data import ORDINAL, ReportError, load_campaign
from evosyn.report.tables import transitions
from evosyn.storage.lake import Lake


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with a two-sided 95% Student-t interval (none from one seed)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    p_value: float | None = None


def seed_interval(values: Sequence[float], level: float = 0.95) -> Estimate:
    """Mean of per-seed ``values`` with a t interval; a one-sample t-test p against 0."""
    xs = [float(v) for v in values if v is not None and not math.isnan(v)]
    n = len(xs)
    if n == 0:
        return Estimate(None, None, None, 0)
    mean = sum(xs) / n
    if n == 1:
        return Estimate(mean, None, None, 1)
    sd = float(pd.Series(xs).std(ddof=1))
    if sd == 0.0:
        return Estimate(mean, mean, mean, n, None if mean == 0 else 0.0)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    p = float(stats.ttest_1samp(xs, 0.0).pvalue)
    return Estimate(mean, mean - half, mean + half, n, p)


@dataclass
class ArmResult:
    """One arm's figures over its seeds."""

    arm: str
    seeds: list[int]
    success: Estimate
    episodes: int
    diff: Estimate | None
    planted: Estimate
    planted_diff: Estimate | None
    verified: float
    recovered: m.Rate | None
    recovery_rounds: list[int]
    alignment: m.Alignment
    seconds: float
    test: Estimate | None = None
    """Success on the official test split (every trial), mean over seeds."""
    pass_k: dict[int, Estimate] = field(default_factory=dict)
    """pass^k on the test split for k = 1..trials, mean over seeds."""


@dataclass
class ExperimentReport:
    """The whole comparison."""

    name: str
    reference: str
    planted: list[str]
    arms: list[ArmResult]
    controllability: dict[str, dict[str, m.Control]] = field(default_factory=dict)
    seconds: float = 0.0


def _episodes(lake: Lake, row: ExperimentArm) -> pd.DataFrame:
    """The final round's fixed-set episodes of one arm run: task, success, planted."""
    campaign = lake.read(Campaign, row.campaign_id)
    weak = campaign[0].config.get("agents", {}).get("learner", {}) if campaign else {}
    weaknesses = weak.get("weaknesses", []) if weak.get("kind") == "simulated" else []
    results = [
        r
        for r in lake.read(EvalResult, row.campaign_id, row.rounds)
        if r.split == "diagnostic" and is_official(r.task_id)
    ]
    return pd.DataFrame(
        {
            "task_id": [r.task_id for r in results],
            "success": [float(r.success) for r in results],
            "planted": [
                any(r.realized.get(w["feature"]) in w["values"] for w in weaknesses)
                for r in results
            ],
        }
    )


def _test(lake: Lake, row: ExperimentArm) -> tuple[float | None, dict[int, float]]:
    """Success and pass^k of one run's last round on the official test split."""
    results = [r for r in lake.read(EvalResult, row.campaign_id, row.rounds) if r.split == "test"]
    if not results:
        return None, {}
    by_task: dict[str, list[bool]] = {}
    for r in results:
        by_task.setdefault(r.task_id.split("#")[0], []).append(r.success)
    trials = [(len(v), sum(v)) for v in by_task.values()]
    most = max(n for n, _ in trials)
    passes = {k: m.pass_hat_k(trials, k) for k in range(1, most + 1)}
    success = sum(r.success for r in results) / len(results)
    return success, {k: v for k, v in passes.items() if v is not None}


def _paired(
    mine: dict[int, pd.DataFrame], theirs: dict[int, pd.DataFrame], planted: bool = False
) -> Estimate:
    diffs = []
    for seed in sorted(set(mine) & set(theirs)):
        a, b = mine[seed], theirs[seed]
        if planted:
            a, b = a[a.planted], b[b.planted]
        both = a.merge(b, on="task_id", suffixes=("", "_ref"))
        if len(both):
            diffs.append(float((both.success - both.success_ref).mean()))
    return seed_interval(diffs)


def _rate(frames: dict[int, pd.DataFrame], planted: bool = False) -> Estimate:
    values = []
    for frame in frames.values():
        part = frame[frame.planted] if planted else frame
        if len(part):
            values.append(float(part.success.mean()))
    return seed_interval(values)


def _recovery(
    lake: Lake, rows: Sequence[ExperimentArm], features: Sequence[str]
) -> tuple[m.Rate | None, list[int]]:
    if not features:
        return None, []
    hits, rounds = 0, []
    for row in rows:
        spaces = lake.read(SynthesisSpace, row.campaign_id)
        found = [f for s in spaces for f in s.factors if f.name in features]
        if found:
            hits += 1
            rounds.append(min(f.round_introduced for f in found))
    return m.wilson_interval(hits, len(rows)), sorted(rounds)


def experiment_report(lake: Lake, name: str) -> ExperimentReport:
    """Compare the finished arms of experiment ``name`` in ``lake``.

    Raises:
        ReportError: the lake holds no finished arm of ``name``.
    """
    rows = [r for r in lake.read(ExperimentArm) if r.experiment == name]
    if not rows:
        known = sorted({r.experiment for r in lake.read(ExperimentArm)})
        raise ReportError(
            f"experiment {name!r} has no finished arm in the lake at {lake.location}; "
            f"experiments there: {', '.join(known) or 'none'}"
        )
    by_arm: dict[str, list[ExperimentArm]] = {}
    for row in rows:
        by_arm.setdefault(row.arm, []).append(row)
    reference = "evosyn" if "evosyn" in by_arm else next(iter(by_arm))
    first = lake.read(Campaign, rows[0].campaign_id)
    learner = first[0].config.get("agents", {}).get("learner", {}) if first else {}
    planted = (
        sorted({w["feature"] for w in learner.get("weaknesses", [])})
        if learner.get("kind") == "simulated"
        else []
    )
    episodes = {arm: {r.seed: _episodes(lake, r) for r in rs} for arm, rs in by_arm.items()}
    results: list[ArmResult] = []
    controls: dict[str, dict[str, m.Control]] = {}
    for arm, arm_rows in by_arm.items():
        pairs: list[tuple[float, float]] = []
        pooled: dict[str, list[tuple[str, str]]] = {}
        verified = []
        for row in arm_rows:
            data = load_campaign(lake, row.campaign_id)
            for t in transitions(data):
                pairs += [(gap, shift) for _, gap, shift, _ in t.slices]
            for factor, got in data.controls.items():
                pooled.setdefault(factor, []).extend(got)
            verified.append(sum(s.n_verified for s in lake.read(RoundSummary, row.campaign_id)))
        for c in m.controllability(pooled, ORDINAL):
            controls.setdefault(c.factor, {})[arm] = c
        recovered, recovery_rounds = _recovery(lake, arm_rows, planted)
        frames = episodes[arm]
        is_reference = arm == reference
        tests = [_test(lake, r) for r in arm_rows]
        tested = [t for t in tests if t[0] is not None]
        ks = sorted({k for _, passes in tested for k in passes})
        results.append(
            ArmResult(
                arm=arm,
                seeds=sorted(r.seed for r in arm_rows),
                success=_rate(frames),
                episodes=int(sum(len(f) for f in frames.values()) / max(1, len(frames))),
                diff=None if is_reference else _paired(frames, episodes[reference]),
                planted=_rate(frames, planted=True),
                planted_diff=None
                if is_reference or not planted
                else _paired(frames, episodes[reference], planted=True),
                verified=sum(verified) / len(verified),
                recovered=recovered,
                recovery_rounds=recovery_rounds,
                alignment=m.spearman_alignment([g for g, _ in pairs], [s for _, s in pairs]),
                seconds=sum(r.seconds for r in arm_rows) / len(arm_rows),
                test=seed_interval([s for s, _ in tested if s is not None]) if tested else None,
                pass_k={k: seed_interval([p[k] for _, p in tested if k in p]) for k in ks},
            )
        )
    # Reference first, then the others by mean success, best first.
    results.sort(key=lambda a: (a.arm != reference, -(a.success.mean or 0.0), a.arm))
    return ExperimentReport(
        name=name,
        reference=reference,
        planted=planted,
        arms=results,
        controllability=controls,
        seconds=sum(r.seconds for r in rows),
    )


# --------------------------------------------------------------------------- rendering


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _est(e: Estimate | None, signed: bool = False) -> str:
    if e is None or e.mean is None:
        return "–"
    sign = "+" if signed and e.mean > 0 else ""
    if e.low is None or e.high is None:
        return f"{sign}{_pct(e.mean)}"
    return f"{sign}{_pct(e.mean)} [{_pct(e.low)}, {_pct(e.high)}]"


def _p(e: Estimate | None) -> str:
    if e is None or e.p_value is None:
        return "–"
    return f"{e.p_value:.3f}" if e.p_value >= 0.001 else "<0.001"


def _rho(a: m.Alignment) -> str:
    if a.rho is None:
        return f"– ({a.n} pairs)"
    ci = "" if a.ci_low is None or a.ci_high is None else f" [{a.ci_low:.2f}, {a.ci_high:.2f}]"
    return f"{a.rho:.2f}{ci}, p={a.p_value:.3f} ({a.n} pairs)"


def _recovered(arm: ArmResult) -> str:
    if arm.recovered is None:
        return "–"
    r = arm.recovered
    rounds = (
        f", added before round {'/'.join(map(str, arm.recovery_rounds))}"
        if arm.recovery_rounds
        else ""
    )
    return f"{r.successes}/{r.n} [{_pct(r.low)}, {_pct(r.high)}]{rounds}"


def table_rows(report: ExperimentReport) -> tuple[list[str], list[list[str]]]:
    """Table 1: header and one row per arm (percentages)."""
    ref = report.reference
    header = [
        "arm",
        "seeds",
        "success % [95% CI]",
        f"Δ vs {ref}, points [95% CI]",
        "p",
        "planted slice % [95% CI]",
        f"planted Δ vs {ref}",
        "verified / seed",
    ]
    rows = [
        [
            a.arm,
            str(len(a.seeds)),
            _est(a.success),
            _est(a.diff, signed=True),
            _p(a.diff),
            _est(a.planted),
            _est(a.planted_diff, signed=True),
            f"{a.verified:.0f}",
        ]
        for a in report.arms
    ]
    return header, rows


def test_rows(report: ExperimentReport) -> tuple[list[str], list[list[str]]]:
    """The final test: success and pass^k on the official test split, per arm (percentages)."""
    ks = sorted({k for a in report.arms for k in a.pass_k})
    header = ["arm", "seeds", "test success % [95% CI]", *(f"pass^{k} %" for k in ks)]
    rows = [
        [a.arm, str(len(a.seeds)), _est(a.test), *(_est(a.pass_k.get(k)) for k in ks)]
        for a in report.arms
    ]
    return header, rows


def mechanism_rows(report: ExperimentReport) -> tuple[list[str], list[list[str]]]:
    """Mechanism analyses: recovery, gap–allocation alignment, wall time, per arm."""
    feature = "/".join(report.planted) or "planted factor"
    header = [
        "arm",
        f"{feature} recovered (seeds) [95% CI]",
        "gap–allocation Spearman ρ [95% CI], p",
        "s / campaign",
    ]
    rows = [[a.arm, _recovered(a), _rho(a.alignment), f"{a.seconds:.0f}"] for a in report.arms]
    return header, rows


def control_rows(report: ExperimentReport) -> tuple[list[str], list[list[str]]]:
    """Realized controllability: exact-match share per factor and arm."""
    arms = [a.arm for a in report.arms]
    header = ["factor", *arms]
    rows = []
    for factor in sorted(report.controllability):
        cells = report.controllability[factor]
        rows.append(
            [factor]
            + [f"{100 * cells[a].exact:.1f} (n={cells[a].n})" if a in cells else "–" for a in arms]
        )
    return header, rows


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def report_markdown(report: ExperimentReport) -> str:
    """The report as Markdown: Table 1, mechanism analyses, controllability."""
    n_seeds = max(len(a.seeds) for a in report.arms)
    episodes = report.arms[0].episodes
    parts = [
        f"# Experiment {report.name}",
        "",
        f"Final-round success of the learner on the fixed diagnostic set ({episodes} episodes "
        f"per seed: the same tasks and trials in every arm), mean over {n_seeds} seeds with a "
        f"95% t interval across seeds; Δ: paired difference with {report.reference} on the "
        "same episodes, per seed, then averaged (t interval, paired t-test p).",
        "",
        _markdown(*table_rows(report)),
        "",
        "## Final test",
        "",
        _markdown(*test_rows(report)),
        "",
        "The last round's learner on the domain's official test split, three trials per task "
        "at temperature 1 (evosyn-evaluate with split test); pass^k: the chance that k trials "
        "of a task all succeed (τ-bench), mean over seeds with a 95% t interval. – where the "
        "experiment ran without final_test.",
        "",
        "## Mechanisms",
        "",
        _markdown(*mechanism_rows(report)),
        "",
        "Recovery: seeds whose space gained the planted weakness's feature as a factor (Wilson "
        "interval). ρ: capability gap of a slice after round r vs the change of its share of "
        "verified data into round r + 1, pairs pooled over transitions and seeds (bootstrap "
        "interval, permutation p).",
        "",
        "## Realized controllability (exact match, %)",
        "",
        _markdown(*control_rows(report)),
        "",
        f"Wall time of all arms: {report.seconds:.0f} s.",
        "",
    ]
    return "\n".join(parts)


def write_experiment_report(
    lake: Lake, name: str, out: Path | None
) -> tuple[ExperimentReport, Path | None]:
    """Compute the report; with ``out``, write ``experiment-NAME.md`` there."""
    report = experiment_report(lake, name)
    if out is None:
        return report, None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"experiment-{name}.md"
    path.write_text(report_markdown(report), "utf-8")
    return report, path
