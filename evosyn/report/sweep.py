"""``evosyn report --sweep``: detection, false discovery and effect over a blind weakness sweep.

The report opens with the sweep's pre-registered design (:func:`design_markdown`: the
registration seed, the cells, the detection rule and every seed's drawn weaknesses), the same
text ``evosyn experiment run`` prints before its first campaign, and only then gives results.
Every figure is computed from lake records of the cells' finished arms:

- **targeted** (every arm): an arm steered data into a weak region at round r ≥ 2 when the
  region's share of round r's verified samples exceeds its share of round 1's, one-sided
  Fisher exact test at the sweep's ``alpha``; the first such round is the time to detection.
  Rates over (seed, planted region) with a Wilson 95% interval.
- **discovered** (arms whose Reflector may add factors): the Reflector added a factor that
  names a planted region's feature (``num_numeric_args`` -> ``computation``); its round is the
  first round whose data it shapes. A region on a feature no addable factor names (a seed
  factor's value, a tool-call count, a functional pattern) cannot be discovered this way, so
  the rate is also given over the nameable ones.
- **false discoveries**: in the null every targeting and every addition is false. There the
  same targeting test runs on every region drawn for the seed (what a planted cell would have
  looked for), and the share of null campaigns with any addition is the family-wise rate. In
  the planted cells an addition naming no planted weakness is false; FDR = false additions /
  all additions (Wilson interval).
- **Δ vs the strongest baseline**: per cell, the reference arm's final-round success on the
  fixed diagnostic set minus that of the baseline with the highest mean success there, paired
  by seed (same weakness, same tasks), mean over seeds with a t interval and p; the same on
  the planted slice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from scipy.stats import fisher_exact

from evosyn.agents.designer.strategies import get_strategy
from evosyn.agents.learner.simulated import SimulatedSettings
from evosyn.config import CampaignConfig
from evosyn.environments.features import factor_values
from evosyn.records import Campaign, ExperimentArm, Verification
from evosyn.report import metrics as m
from evosyn.report.data import ReportError
from evosyn.report.experiment import (
    Estimate,
    _arm_rows,
    _episodes,
    _est,
    _markdown,
    _p,
    _paired,
    _pct,
    _rate,
    added_factors,
    recovering_factors,
)
from evosyn.storage.lake import Lake
from evosyn.sweep import Draws, Region, Sweep

#: Feature classes, in the order the report lists them.
NAMEABLE, SEED, OUTSIDE = "Reflector can add", "seed-space value", "no factor for it"


def feature_classes(cfg: CampaignConfig, features: Sequence[str]) -> dict[str, str]:
    """Each feature's class: one an addable factor names, a seed factor, or neither."""
    from evosyn.agents.generator import realizable
    from evosyn.environments.kit.grounding import REALIZABLE
    from evosyn.space import seed_space

    seed = {f.name for f in seed_space(cfg.campaign.domain, "sweep").factors}
    addable = set(realizable(cfg) or REALIZABLE) - seed
    out = {}
    for feature in features:
        if feature in seed:
            out[feature] = SEED
        elif recovering_factors(feature) & addable:
            out[feature] = NAMEABLE
        else:
            out[feature] = OUTSIDE
    return out


def can_add(cfg: CampaignConfig) -> bool:
    """Whether an arm's Reflector may add factors (its strategy revises the space)."""
    a = cfg.ablations
    return get_strategy(cfg.campaign.strategy).revises_space and not (
        a.fixed_state or a.no_reflector
    )


def reference_config(sweep: Sweep, draws: Draws, arm: str | None = None) -> CampaignConfig:
    """The config of ``arm`` (the reference by default) at the first seed of the first cell."""
    cells = sweep.cells(draws)
    first = cells[sweep.cell_names()[0]]
    return first.config(arm or sweep.sweep.reference, sweep.sweep.seeds[0])


def in_region(realized: Mapping[str, str], region: Region) -> bool:
    """Whether realized values show the region's value."""
    return region.value in factor_values(realized, region.feature)


def targeted_round(
    by_round: Mapping[int, Sequence[Mapping[str, str]]], region: Region, alpha: float
) -> int | None:
    """First round r ≥ 2 whose verified samples realize ``region`` more than round 1's do.

    One-sided Fisher exact test of the two rounds' shares at ``alpha``; None if no round does.
    """
    rounds = sorted(by_round)
    if len(rounds) < 2:
        return None
    first = by_round[rounds[0]]
    k1 = sum(in_region(r, region) for r in first)
    for rnd in rounds[1:]:
        samples = by_round[rnd]
        k = sum(in_region(r, region) for r in samples)
        if not samples:
            continue
        table = [[k, len(samples) - k], [k1, len(first) - k1]]
        if float(fisher_exact(table, alternative="greater").pvalue) < alpha:
            return rnd
    return None


def discovered_round(added: Mapping[str, int], region: Region) -> int | None:
    """The first round whose data an added factor naming the region's feature shapes."""
    rounds = [r for name, r in added.items() if name in recovering_factors(region.feature)]
    return min(rounds) if rounds else None


@dataclass(frozen=True)
class Detection:
    """One arm run's look at one region: planted there, or drawn for its seed in the null."""

    cell: str
    arm: str
    seed: int
    region: Region
    targeted: int | None
    discovered: int | None


@dataclass(frozen=True)
class Additions:
    """The factors one arm run's Reflector added, and which of them name no planted weakness."""

    cell: str
    arm: str
    seed: int
    added: dict[str, int]
    false: list[str]


@dataclass(frozen=True)
class CellEffect:
    """A cell's success per arm and the reference's paired difference with the best baseline."""

    cell: str
    success: dict[str, Estimate]
    planted: dict[str, Estimate]
    baseline: str
    diff: Estimate
    planted_diff: Estimate


@dataclass
class SweepReport:
    """The whole sweep's figures."""

    sweep: Sweep
    candidates: list[Region]
    draws: Draws
    classes: dict[str, str]
    arms: list[str]
    can_add: dict[str, bool]
    detections: list[Detection] = field(default_factory=list)
    additions: list[Additions] = field(default_factory=list)
    effects: list[CellEffect] = field(default_factory=list)
    campaigns: int = 0
    expected: int = 0
    seconds: float = 0.0


def _verified_by_round(lake: Lake, cid: str) -> dict[int, list[dict[str, str]]]:
    out: dict[int, list[dict[str, str]]] = {}
    for v in lake.read(Verification, cid):
        out.setdefault(v.round, [])
        if v.passed:
            out[v.round].append(v.realized)
    return out


def _check_planted(lake: Lake, row: ExperimentArm, planted: list[dict[str, Any]]) -> None:
    stored = lake.read(Campaign, row.campaign_id)
    weaknesses = stored[0].config.get("agents", {}).get("learner", {}).get("weaknesses", [])
    if stored and weaknesses != planted:
        raise ReportError(
            f"campaign {row.campaign_id} planted {weaknesses}, but the sweep file draws "
            f"{planted}: the file changed after the run (its registration seed, seeds, "
            "features or penalties); report with the file it ran"
        )


def sweep_report(lake: Lake, sweep: Sweep, candidates: list[Region], draws: Draws) -> SweepReport:
    """Detection, false discovery and effect over the sweep's finished arm runs in ``lake``.

    Raises:
        ReportError: no cell has a finished arm run, or a stored run planted other weaknesses
            than the file draws.
    """
    s = sweep.sweep
    cells = sweep.cells(draws)
    ref_cfg = reference_config(sweep, draws)
    report = SweepReport(
        sweep=sweep,
        candidates=candidates,
        draws=draws,
        classes=feature_classes(ref_cfg, s.features),
        arms=list(sweep.arms),
        can_add={arm: can_add(reference_config(sweep, draws, arm)) for arm in sweep.arms},
        expected=len(cells) * len(sweep.arms) * len(s.seeds),
    )
    found = False
    for cell, experiment in cells.items():
        try:
            by_arm = _arm_rows(lake, experiment.name)
        except ReportError:
            continue
        found = True
        frames: dict[str, dict[int, pd.DataFrame]] = {}
        for arm, rows in by_arm.items():
            frames[arm] = {}
            for row in rows:
                report.campaigns += 1
                report.seconds += row.seconds
                planted = experiment.experiment.seed_set.get(row.seed, {}).get(
                    "agents.learner.weaknesses", []
                )
                _check_planted(lake, row, planted)
                frames[arm][row.seed] = _episodes(lake, row)
                if cell == "null":
                    regions = draws.regions(row.seed)
                else:
                    names = {(w["feature"], w["values"][0]) for w in planted}
                    regions = [r for r in draws.regions(row.seed) if (r.feature, r.value) in names]
                verified = _verified_by_round(lake, row.campaign_id)
                added = added_factors(lake, row.campaign_id)
                for region in regions:
                    report.detections.append(
                        Detection(
                            cell=cell,
                            arm=arm,
                            seed=row.seed,
                            region=region,
                            targeted=targeted_round(verified, region, s.alpha),
                            discovered=discovered_round(added, region),
                        )
                    )
                wanted = set().union(*(recovering_factors(r.feature) for r in regions))
                false = sorted(name for name in added if cell == "null" or name not in wanted)
                report.additions.append(Additions(cell, arm, row.seed, added, false))
        report.effects.append(_effect(cell, frames, s.reference))
    if not found:
        raise ReportError(
            f"sweep {sweep.name!r} has no finished arm run in the lake at {lake.location}: "
            f"run `evosyn experiment run` on its file first"
        )
    return report


def _effect(cell: str, frames: dict[str, dict[int, pd.DataFrame]], reference: str) -> CellEffect:
    success = {arm: _rate(f) for arm, f in frames.items()}
    planted = {arm: _rate(f, planted=True) for arm, f in frames.items()}
    baselines = [a for a in frames if a != reference]
    if reference not in frames or not baselines:
        empty = Estimate(None, None, None, 0)
        return CellEffect(cell, success, planted, "–", empty, empty)
    best = max(baselines, key=lambda a: (success[a].mean or 0.0, a))
    mine, theirs = frames[reference], frames[best]
    return CellEffect(
        cell=cell,
        success=success,
        planted=planted,
        baseline=best,
        diff=_paired(mine, theirs),
        planted_diff=_paired(mine, theirs, planted=True),
    )


# --------------------------------------------------------------------------- rendering


def _rate_cell(hits: int, n: int) -> str:
    if n == 0:
        return "–"
    r = m.wilson_interval(hits, n)
    return f"{hits}/{n} [{_pct(r.low)}, {_pct(r.high)}]"


def _rounds(rounds: Sequence[int]) -> str:
    if not rounds:
        return "–"
    counts = Counter(rounds)
    mean = sum(rounds) / len(rounds)
    return f"{mean:.1f} (" + ", ".join(f"r{r}: {counts[r]}" for r in sorted(counts)) + ")"


def _settings(cfg: CampaignConfig) -> str:
    simulated = cfg.agents.learner.kind_settings(SimulatedSettings)
    return (
        f"{cfg.campaign.domain}, {cfg.campaign.rounds} rounds × {cfg.campaign.budget_per_round} "
        f"blueprints, simulated learner ({cfg.agents.learner.trials} trials per diagnostic "
        f"task, mastery scale {simulated.mastery_scale:g}, familiarity penalty "
        f"{simulated.familiarity_penalty:g})"
    )


def design_markdown(
    sweep: Sweep, candidates: list[Region], draws: Draws, heading: bool = True
) -> str:
    """The pre-registered design: seed, cells, arms, rule, candidates and every draw."""
    s = sweep.sweep
    cfg = reference_config(sweep, draws)
    classes = feature_classes(cfg, s.features)
    cells = []
    for p in s.penalties:
        cells.append(f"`p{round(100 * p):02d}`: the seed's single drawn weakness at penalty {p:g}")
    if s.several is not None:
        cells.append(
            f"`several`: {s.several.count} drawn weaknesses at once, penalty "
            f"{s.several.penalty:g} each"
        )
    if s.null_cell:
        cells.append("`null`: no weakness")
    n = len(sweep.cell_names()) * len(sweep.arms) * len(s.seeds)
    lines = [f"## Design of sweep {sweep.name} (pre-registered)", ""] if heading else []
    lines += [
        f"Registration seed **{s.registration_seed}**. It alone, with the seeds and the "
        "candidate values below, draws every planted weakness: a feature uniformly among "
        "those with a candidate, then one of its values; nothing depends on a result. "
        "`evosyn experiment run` prints this before its first campaign.",
        "",
        "- cells: " + "; ".join(cells),
        f"- arms: {', '.join(f'`{a}`' for a in sweep.arms)}; seeds "
        f"{', '.join(map(str, s.seeds))} ({len(s.seeds)} per cell); {n} campaigns",
        f"- every campaign: {_settings(cfg)}",
        f"- candidates: values realized by {s.min_tasks} or more of the official diagnostic "
        f"tasks and at most {100 * s.max_share:g}% of them, on the features "
        f"{', '.join(s.features)}",
        f"- targeted: the region's share of round r's verified samples (r ≥ 2) exceeds its "
        f"share of round 1's, one-sided Fisher exact p < {s.alpha:g}; the first such r is the "
        "time to detection",
        "- discovered: the Reflector added a factor naming the region's feature; false "
        "discovery: an added factor naming no planted weakness (in the null, any)",
        f"- effect: `{s.reference}` minus the baseline with the highest mean success in the "
        "cell, paired by seed, on the fixed diagnostic set and on its planted slice",
        "",
        "| feature | class | candidate values (official diagnostic tasks) |",
        "|---|---|---|",
    ]
    by_feature: dict[str, list[Region]] = {}
    for r in candidates:
        by_feature.setdefault(r.feature, []).append(r)
    for feature in s.features:
        values = ", ".join(f"{r.value} ({r.tasks})" for r in by_feature.get(feature, []))
        lines.append(f"| {feature} | {classes[feature]} | {values or 'none qualifies'} |")
    lines += ["", "| seed | single weakness | class | several at once |", "|---|---|---|---|"]
    for seed in s.seeds:
        single = draws.single[seed]
        several = ", ".join(r.label for r in draws.several.get(seed, [])) or "–"
        lines.append(f"| {seed} | {single.label} | {classes[single.feature]} | {several} |")
    return "\n".join(lines) + "\n"


def detection_rows(report: SweepReport) -> tuple[list[str], list[list[str]]]:
    """Per planted cell and arm: targeted and discovered rates, time to detection."""
    header = [
        "cell",
        "arm",
        "targeted [95% CI]",
        "round targeted: mean (counts)",
        "discovered by the Reflector [95% CI]",
        "of those it can name",
        "round discovered: mean (counts)",
    ]
    rows = []
    for cell in report.sweep.cell_names():
        if cell == "null":
            continue
        for arm in report.arms:
            ds = [d for d in report.detections if d.cell == cell and d.arm == arm]
            if not ds:
                continue
            targeted = [d.targeted for d in ds if d.targeted is not None]
            found = [d.discovered for d in ds if d.discovered is not None]
            nameable = [d for d in ds if report.classes[d.region.feature] == NAMEABLE]
            if report.can_add[arm]:
                disc = _rate_cell(len(found), len(ds))
                named = _rate_cell(sum(d.discovered is not None for d in nameable), len(nameable))
                when = _rounds(found)
            else:
                disc, named, when = "cannot add", "–", "–"
            rows.append(
                [
                    cell,
                    arm,
                    _rate_cell(len(targeted), len(ds)),
                    _rounds(targeted),
                    disc,
                    named,
                    when,
                ]
            )
    return header, rows


def false_rows(report: SweepReport) -> tuple[list[str], list[list[str]]]:
    """Per arm: false targeting and additions in the null; false additions in planted cells."""
    header = [
        "arm",
        "null: regions falsely targeted [95% CI]",
        "null: campaigns with an addition [95% CI]",
        "planted cells: additions (false)",
        "planted cells: FDR [95% CI]",
    ]
    rows = []
    for arm in report.arms:
        null = [d for d in report.detections if d.cell == "null" and d.arm == arm]
        null_adds = [a for a in report.additions if a.cell == "null" and a.arm == arm]
        planted = [a for a in report.additions if a.cell != "null" and a.arm == arm]
        n_added = sum(len(a.added) for a in planted)
        n_false = sum(len(a.false) for a in planted)
        row = [
            arm,
            _rate_cell(sum(d.targeted is not None for d in null), len(null)),
            _rate_cell(sum(bool(a.added) for a in null_adds), len(null_adds))
            if report.can_add[arm]
            else "cannot add",
            f"{n_added} ({n_false})" if report.can_add[arm] else "cannot add",
            _rate_cell(n_false, n_added) if report.can_add[arm] else "–",
        ]
        rows.append(row)
    return header, rows


def effect_rows(report: SweepReport) -> tuple[list[str], list[list[str]]]:
    """Per cell: the reference's success, the strongest baseline's, and their paired Δ."""
    ref = report.sweep.sweep.reference
    header = [
        "cell",
        f"{ref} success % [95% CI]",
        "strongest baseline: success %",
        f"Δ {ref} − baseline, points [95% CI]",
        "p",
        "planted slice Δ, points [95% CI]",
        "p (planted)",
    ]
    rows = []
    for e in report.effects:
        best = e.success.get(e.baseline)
        rows.append(
            [
                e.cell,
                _est(e.success.get(ref)),
                f"{e.baseline}: {_est(best)}",
                _est(e.diff, signed=True),
                _p(e.diff),
                _est(e.planted_diff, signed=True) if e.cell != "null" else "–",
                _p(e.planted_diff) if e.cell != "null" else "–",
            ]
        )
    return header, rows


def class_rows(report: SweepReport) -> tuple[list[str], list[list[str]]]:
    """Single-weakness cells pooled: targeted (and discovered) per feature class and arm."""
    singles = {f"p{round(100 * p):02d}" for p in report.sweep.sweep.penalties}
    header = ["feature class", "drawn (seeds)", *(f"{a} targeted" for a in report.arms)]
    adders = [a for a in report.arms if report.can_add[a]]
    header += [f"{a} discovered" for a in adders]
    rows = []
    for cls in (NAMEABLE, SEED, OUTSIDE):
        drawn = sum(
            report.classes[report.draws.single[s].feature] == cls for s in report.sweep.sweep.seeds
        )
        cells = []
        for arm in report.arms:
            ds = [
                d
                for d in report.detections
                if d.cell in singles and d.arm == arm and report.classes[d.region.feature] == cls
            ]
            cells.append(_rate_cell(sum(d.targeted is not None for d in ds), len(ds)))
        for arm in adders:
            ds = [
                d
                for d in report.detections
                if d.cell in singles and d.arm == arm and report.classes[d.region.feature] == cls
            ]
            cells.append(_rate_cell(sum(d.discovered is not None for d in ds), len(ds)))
        rows.append([cls, str(drawn), *cells])
    return header, rows


def draw_rows(report: SweepReport) -> tuple[list[str], list[list[str]]]:
    """Every planted region: per arm, the round it was targeted (T) and discovered (D)."""
    header = ["cell", "seed", "weakness", *report.arms]
    rows = []
    for cell in report.sweep.cell_names():
        for seed in report.sweep.sweep.seeds:
            regions: list[Region] = []
            for x in report.detections:
                if x.cell == cell and x.seed == seed and x.region not in regions:
                    regions.append(x.region)
            for region in regions:
                cells = []
                for arm in report.arms:
                    d = next(
                        (
                            x
                            for x in report.detections
                            if (x.cell, x.seed, x.arm, x.region) == (cell, seed, arm, region)
                        ),
                        None,
                    )
                    if d is None:
                        cells.append("not run")
                        continue
                    marks = [f"T{d.targeted}"] if d.targeted is not None else []
                    marks += [f"D{d.discovered}"] if d.discovered is not None else []
                    cells.append(" ".join(marks) or "–")
                rows.append([cell, str(seed), region.label, *cells])
    return header, rows


def report_markdown(report: SweepReport) -> str:
    """The report as Markdown: the design first, then the results."""
    s = report.sweep.sweep
    parts = [
        f"# Sweep {report.sweep.name}",
        "",
        design_markdown(report.sweep, report.candidates, report.draws),
        "## Results",
        "",
        f"{report.campaigns} of {report.expected} campaigns finished.",
        "",
        "### Detection",
        "",
        _markdown(*detection_rows(report)),
        "",
        "Targeted: the arm's verified data moved into the weak region (the test above); "
        "discovered: its Reflector added a factor naming the region's feature; rounds: the "
        "first round whose data shows it. Rates over (seed, planted region), Wilson intervals.",
        "",
        "### False discoveries",
        "",
        _markdown(*false_rows(report)),
        "",
        "In the null no region is weak: the targeting test runs on every region drawn for the "
        "seed, and every addition is false. In the planted cells an addition naming no planted "
        "weakness is false.",
        "",
        "### Effect",
        "",
        _markdown(*effect_rows(report)),
        "",
        f"Final-round success on the fixed diagnostic set, mean over seeds (t interval); Δ: "
        f"`{s.reference}` minus the strongest baseline of the cell (highest mean success), "
        "paired by seed, t interval and paired t-test p.",
        "",
        "### By feature class (single-weakness cells pooled)",
        "",
        _markdown(*class_rows(report)),
        "",
        "Drawn: seeds whose single weakness is of the class; the rates pool the cells of every "
        "penalty, so each such seed counts once per penalty.",
        "",
        "### Every planted region",
        "",
        _markdown(*draw_rows(report)),
        "",
        "T r: targeted at round r; D r: the Reflector's added factor first shaped round r; "
        "in the null row the regions are those drawn for the seed, none planted.",
        "",
        f"Wall time of the finished campaigns: {report.seconds:.0f} s.",
        "",
    ]
    return "\n".join(parts)


def docs_blocks(report: SweepReport) -> dict[str, str]:
    """Part -> Markdown of the figures a page may quote (evosyn.report.docs), no wall times."""
    return {
        "design": design_markdown(report.sweep, report.candidates, report.draws, heading=False),
        "detection": _markdown(*detection_rows(report)) + "\n",
        "false": _markdown(*false_rows(report)) + "\n",
        "effect": _markdown(*effect_rows(report)) + "\n",
        "classes": _markdown(*class_rows(report)) + "\n",
        "draws": _markdown(*draw_rows(report)) + "\n",
    }


def write_sweep_report(
    lake: Lake, sweep: Sweep, candidates: list[Region], draws: Draws, out: Path | None
) -> tuple[SweepReport, Path | None]:
    """Compute the report; with ``out``, write ``sweep-NAME.md`` there."""
    report = sweep_report(lake, sweep, candidates, draws)
    if out is None:
        return report, None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"sweep-{sweep.name}.md"
    path.write_text(report_markdown(report), "utf-8")
    return report, path
