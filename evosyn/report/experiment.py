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
- **factor recovery**: the share of seeds whose Reflector added the planted weakness's feature
  (or the factor its probe stands for, ``num_numeric_args`` -> ``computation``) to the
  synthesis space, with a Wilson 95% interval over seeds. Only additions count: a factor the
  arm's first space already held (a seed factor, or a baseline's request space) is not a
  recovery.
- **gap–allocation alignment**: Spearman ρ between a slice's capability gap after round r and
  the change of its share of verified data from round r to r + 1, pairs pooled over the arm's
  transitions and seeds; percentile bootstrap 95% interval and permutation p-value. On the
  gaps the Designer read, a no-weakness null passes it too: the Designer follows the gaps it
  measured, noise and real difficulty included. So given a null experiment (the same arms with
  no planted weakness, ``null``) it is also measured where a null has nothing to find: on
  **held-out** gaps (the simulated learner's episodes drawn again on a stream no role reads,
  :func:`held_out_results`) in **excess** of the null's mean held-out gap of the same arm,
  slice and round over its other seeds. Each arm's ρ stands beside the same arm's under the
  null, computed the same way.
- **realized controllability**: per factor, the share of verified samples whose realized value
  is the requested one, pooled over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
from scipy import stats

from evosyn.agents.learner.diagnostic import is_official
from evosyn.agents.learner.simulated import held_out_results, in_weakness
from evosyn.agents.reflector.programmatic import PROBE_TO_FACTOR
from evosyn.records import (
    Campaign,
    EvalResult,
    ExperimentArm,
    RoundSummary,
    SynthesisSpace,
    Training,
)
from evosyn.report import metrics as m
from evosyn.report.data import ORDINAL, CampaignData, ReportError, load_campaign, realized_values
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
    alignment_null: m.Alignment | None = None
    """The same arm's pooled ρ in the null experiment."""
    held_out: m.Alignment | None = None
    """ρ on held-out gaps in excess of the null's (needs a null and the simulated learner)."""
    held_out_null: m.Alignment | None = None
    """The same in the null experiment, each seed against the null's other seeds."""
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
    null: str | None = None
    """The null experiment the alignment is compared with, if any."""


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
            "planted": [any(in_weakness(r.realized, w) for w in weaknesses) for r in results],
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


def recovering_factors(feature: str) -> set[str]:
    """Factors whose addition recovers a weakness planted on realized ``feature``."""
    return {feature, PROBE_TO_FACTOR.get(feature, feature)}


def added_factors(lake: Lake, campaign_id: str) -> dict[str, int]:
    """Factors the campaign's Reflector added (absent from its first space) -> round added."""
    spaces = sorted(lake.read(SynthesisSpace, campaign_id), key=lambda s: s.version)
    if not spaces:
        return {}
    first = {f.name for f in spaces[0].factors}
    added: dict[str, int] = {}
    for space in spaces[1:]:
        for f in space.factors:
            if f.name not in first:
                added[f.name] = min(added.get(f.name, f.round_introduced), f.round_introduced)
    return added


def _recovery(
    lake: Lake, rows: Sequence[ExperimentArm], features: Sequence[str]
) -> tuple[m.Rate | None, list[int]]:
    if not features:
        return None, []
    wanted = set().union(*(recovering_factors(f) for f in features))
    hits, rounds = 0, []
    for row in rows:
        found = [r for name, r in added_factors(lake, row.campaign_id).items() if name in wanted]
        if found:
            hits += 1
            rounds.append(min(found))
    return m.wilson_interval(hits, len(rows)), sorted(rounds)


Gaps = list[tuple[int, m.Slice, float, float]]
"""One campaign's (round r, slice, gap after r, share change r -> r + 1) per transition."""


def _gaps(data: CampaignData) -> Gaps:
    return [(t.before, s, gap, shift) for t in transitions(data) for s, gap, shift, _ in t.slices]


def _held_out(lake: Lake, data: CampaignData, seed: int) -> Gaps | None:
    """``data``'s gaps measured on held-out draws; None where its learner is not simulated."""
    trainings = {t.training_id: t for t in lake.read(Training, data.campaign_id)}
    results = [r for r in lake.read(EvalResult, data.campaign_id) if r.split == "diagnostic"]
    if not results or any(
        r.training_id not in trainings or not trainings[r.training_id].recipe.get("simulated")
        for r in results
    ):
        return None
    by_training: dict[str, list[EvalResult]] = {}
    for r in results:
        by_training.setdefault(r.training_id, []).append(r)
    held = [h for t, rs in by_training.items() for h in held_out_results(trainings[t], rs, seed)]
    evaluations: dict[int, list[tuple[dict[str, tuple[str, ...]], bool, dict[str, str]]]] = {}
    for h in sorted(held, key=lambda h: (h.round, h.task_id)):
        evaluations.setdefault(h.round, []).append(
            (realized_values(h.realized), h.success, h.realized)
        )
    return _gaps(replace(data, evaluations=evaluations))


def _alignment(pairs: Sequence[tuple[float, float]]) -> m.Alignment:
    return m.spearman_alignment([g for g, _ in pairs], [s for _, s in pairs])


def _excess(seeds: dict[int, Gaps], null: dict[int, Gaps]) -> m.Alignment:
    """ρ of each slice's gap minus the null's mean gap of it after the same round, vs its shift.

    The null's mean leaves out the seed's own null campaign, so that a null measured against
    itself is calibrated the same way as a planted campaign is.
    """
    pairs = []
    for seed, gaps in seeds.items():
        sums: dict[tuple[int, m.Slice], list[float]] = {}
        for other, null_gaps in null.items():
            if other != seed:
                for r, s, gap, _ in null_gaps:
                    sums.setdefault((r, s), []).append(gap)
        pairs += [
            (gap - sum(sums[r, s]) / len(sums[r, s]), shift)
            for r, s, gap, shift in gaps
            if (r, s) in sums
        ]
    return _alignment(pairs)


@dataclass
class _Measured:
    """One experiment arm's per-seed gaps: as the Designer read them, and held out."""

    seen: dict[int, Gaps] = field(default_factory=dict)
    held_out: dict[int, Gaps] | None = field(default_factory=dict)

    def add(self, lake: Lake, data: CampaignData, seed: int) -> None:
        self.seen[seed] = _gaps(data)
        held = _held_out(lake, data, seed)
        if held is None or self.held_out is None:
            self.held_out = None
        else:
            self.held_out[seed] = held

    def alignment(self) -> m.Alignment:
        return _alignment([(g, s) for gaps in self.seen.values() for _, _, g, s in gaps])


def _arm_rows(lake: Lake, name: str) -> dict[str, list[ExperimentArm]]:
    rows = [r for r in lake.read(ExperimentArm) if r.experiment == name]
    if not rows:
        known = sorted({r.experiment for r in lake.read(ExperimentArm)})
        raise ReportError(
            f"experiment {name!r} has no finished arm in the lake at {lake.location}; "
            f"experiments there: {', '.join(known) or 'none'}"
        )
    by_arm: dict[str, list[ExperimentArm]] = {}
    for row in sorted(rows, key=lambda r: (r.arm, r.seed)):
        by_arm.setdefault(row.arm, []).append(row)
    return by_arm


def experiment_report(lake: Lake, name: str, null: str | None = None) -> ExperimentReport:
    """Compare the finished arms of experiment ``name`` in ``lake``.

    ``null``: a no-weakness experiment with the same arms in the same lake; each arm's
    gap–allocation ρ is then compared with the same arm's there, and measured on held-out
    gaps in excess of the null's.

    Raises:
        ReportError: the lake holds no finished arm of ``name`` (or of ``null``).
    """
    by_arm = _arm_rows(lake, name)
    rows = [r for rs in by_arm.values() for r in rs]
    nulls: dict[str, _Measured] = {}
    if null is not None:
        for arm, arm_rows in _arm_rows(lake, null).items():
            nulls[arm] = _Measured()
            for row in arm_rows:
                nulls[arm].add(lake, load_campaign(lake, row.campaign_id), row.seed)
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
        measured = _Measured()
        pooled: dict[str, list[tuple[str, str]]] = {}
        verified = []
        for row in arm_rows:
            data = load_campaign(lake, row.campaign_id)
            measured.add(lake, data, row.seed)
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
                alignment=measured.alignment(),
                seconds=sum(r.seconds for r in arm_rows) / len(arm_rows),
                alignment_null=nulls[arm].alignment() if arm in nulls else None,
                held_out=_held_out_excess(measured, nulls.get(arm)),
                held_out_null=_held_out_excess(nulls.get(arm), nulls.get(arm)),
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
        null=null,
    )


def _held_out_excess(mine: _Measured | None, null: _Measured | None) -> m.Alignment | None:
    if mine is None or null is None or mine.held_out is None or null.held_out is None:
        return None
    return _excess(mine.held_out, null.held_out)


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


def _rho_or_none(a: m.Alignment | None) -> str:
    return "–" if a is None else _rho(a)


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


def mechanism_rows(
    report: ExperimentReport, timing: bool = True
) -> tuple[list[str], list[list[str]]]:
    """Mechanism analyses: recovery, gap–allocation alignment (and its null), wall time.

    ``timing``: with the seconds per campaign, the one figure that depends on the machine.
    """
    feature = "/".join(report.planted) or "planted factor"
    header = [
        "arm",
        f"{feature} added by the Reflector (seeds) [95% CI]",
        "gap–allocation Spearman ρ on the gaps the Designer read [95% CI], p",
    ]
    if report.null is not None:
        header += [
            f"the same under the null ({report.null})",
            "ρ on held-out gaps in excess of the null's [95% CI], p",
            "the same under the null",
        ]
    if timing:
        header.append("s / campaign")
    rows = []
    for a in report.arms:
        row = [a.arm, _recovered(a), _rho(a.alignment)]
        if report.null is not None:
            row += [_rho_or_none(a.alignment_null), _rho_or_none(a.held_out)]
            row.append(_rho_or_none(a.held_out_null))
        rows.append([*row, f"{a.seconds:.0f}"] if timing else row)
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
        "Recovery: seeds whose Reflector added the planted weakness's feature as a factor "
        "(Wilson interval); a factor the arm's first space held does not count. ρ: capability "
        "gap of a slice after round r vs the change of its share of verified data into round "
        "r + 1, pairs pooled over transitions and seeds (bootstrap interval, permutation p); "
        "on the gaps the Designer read, its p says only that allocation follows the measured "
        "gaps, noise and real difficulty included."
        + (
            f" Beside it, the same arm's ρ in the no-weakness null ({report.null}); then ρ on "
            "held-out gaps (the episodes drawn again on a stream no role reads) minus the "
            "null's mean held-out gap of the slice after the same round over its other seeds, "
            "in this experiment and in the null itself: only that one speaks for allocation "
            "that follows a real weakness, and the null should not pass it."
            if report.null is not None
            else " Without a null experiment (--null) it is no evidence of a real weakness."
        ),
        "",
        "## Realized controllability (exact match, %)",
        "",
        _markdown(*control_rows(report)),
        "",
        f"Wall time of all arms: {report.seconds:.0f} s.",
        "",
    ]
    return "\n".join(parts)


def docs_blocks(report: ExperimentReport) -> dict[str, str]:
    """Part -> Markdown of the figures a page may quote (evosyn.report.docs), no wall times."""
    return {
        "table": _markdown(*table_rows(report)) + "\n",
        "test": _markdown(*test_rows(report)) + "\n",
        "mechanisms": _markdown(*mechanism_rows(report, timing=False)) + "\n",
        "controllability": _markdown(*control_rows(report)) + "\n",
    }


def write_experiment_report(
    lake: Lake, name: str, out: Path | None, null: str | None = None
) -> tuple[ExperimentReport, Path | None]:
    """Compute the report; with ``out``, write ``experiment-NAME.md`` there."""
    report = experiment_report(lake, name, null)
    if out is None:
        return report, None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"experiment-{name}.md"
    path.write_text(report_markdown(report), "utf-8")
    return report, path
