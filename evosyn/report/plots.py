"""The report's PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from evosyn.environments.features import SET_KEYS
from evosyn.report.data import CampaignData, json_value
from evosyn.report.metrics import wilson_interval
from evosyn.report.tables import Table, Transition

_METRICS = (
    "factor coverage",
    "combinatorial coverage",
    "factor balance",
    "interaction coverage",
    "trajectory diversity",
)


# The paper normalises these by what the compared runs observed, not by the space: with one
# campaign its last round is 1.0 by construction.
_QUALIFIER = {
    "combinatorial coverage": "\n(share of cells seen in any run shown)",
    "trajectory diversity": "\n(vs patterns seen in any run shown)",
}


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def metrics_by_round(intrinsic: Table, out: Path, success: Table | None = None) -> Path:
    """Fixed-set success and the intrinsic metrics by round, one line per campaign.

    With the ``success`` table, the fixed-set success carries its Wilson 95% interval as a band.
    """
    col = {c: i for i, c in enumerate(intrinsic.columns)}
    # (campaign, round) -> (low, high) of the fixed-set success interval
    bounds: dict[tuple[object, object], tuple[float, float]] = {}
    for row in success.rows if success is not None else []:
        campaign, rnd, rate, _ci, n = row[:5]
        if rate is not None and n:
            r = wilson_interval(round(float(rate) * int(n)), int(n))
            bounds[(campaign, rnd)] = (r.low, r.high)
    fig, axes = plt.subplots(1, 6, figsize=(20, 3.4), sharex=True)
    runs = sorted({r[0] for r in intrinsic.rows}, key=[r[0] for r in intrinsic.rows].index)
    for ax, name in zip(axes, ("success, fixed set", *_METRICS), strict=True):
        for run in runs:
            rows = [r for r in intrinsic.rows if r[0] == run and r[col[name]] is not None]
            xs, ys = [r[1] for r in rows], [r[col[name]] for r in rows]
            line = ax.plot(xs, ys, marker="o", label=run)[0]
            spans = [bounds[(run, x)] for x in xs if (run, x) in bounds]
            if name == "success, fixed set" and spans and len(spans) == len(xs):
                lows, highs = [lo for lo, _ in spans], [hi for _, hi in spans]
                ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.15)
        title = name + (" (95% CI)" if name == "success, fixed set" and bounds else "")
        ax.set_title(title + _QUALIFIER.get(name, ""), fontsize=10)
        ax.set_xlabel("round")
        ax.set_ylim(0, 1.02)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return _save(fig, out / "metrics_by_round.png")


def coverage_heatmaps(data: CampaignData, out: Path) -> Path:
    """Per factor: share of each round's verified data with each value."""
    ref = data.reference()
    rounds = sorted({s.round for s in data.samples})
    fig, axes = plt.subplots(len(ref), 1, figsize=(9, 1.2 + 0.9 * sum(1 for _ in ref) * 1.6))
    axes_list = list(axes) if len(ref) > 1 else [axes]
    for ax, (factor, values) in zip(axes_list, ref.items(), strict=True):
        grid = []
        for r in rounds:
            in_round = [s for s in data.samples if s.round == r]
            counts = Counter(v for s in in_round for v in s.values.get(factor, ()))
            grid.append([counts[v] / max(1, len(in_round)) for v in values])
        image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1)
        for y, row in enumerate(grid):
            for x, share in enumerate(row):
                # The value in each cell, dark on the light end of the colour map.
                ink = "black" if share > 0.6 else "white"
                ax.text(x, y, f"{100 * share:.0f}", ha="center", va="center", fontsize=7, color=ink)
        ax.set_yticks(range(len(rounds)), [f"round {r}" for r in rounds])
        ax.set_xticks(range(len(values)), values, rotation=20, ha="right", fontsize=7)
        several = " (a sample can show several values)" if factor in SET_KEYS else ""
        ax.set_title(
            f"{factor}: % of the round's verified samples with each value{several}", fontsize=9
        )
        fig.colorbar(image, ax=ax, fraction=0.02).set_label("share", fontsize=7)
    return _save(fig, out / "coverage_heatmaps.png")


def gap_vs_allocation(trans: Sequence[Transition], out: Path) -> Path | None:
    """Allocation shift vs capability gap, one panel per transition."""
    if not trans:
        return None
    fig, axes = plt.subplots(1, len(trans), figsize=(5.5 * len(trans), 4.2), squeeze=False)
    for ax, tr in zip(axes[0], trans, strict=True):
        gaps = [g for _, g, _, _ in tr.slices]
        shifts = [d for _, _, d, _ in tr.slices]
        ax.scatter(gaps, shifts)
        # Label only the most extreme slices, and none next to one already labelled: every
        # label at once (or two on one spot) is unreadable.
        ranked = sorted(tr.slices, key=lambda x: -(abs(x[2]) * 4 + x[1]))
        x_span = (max(gaps) - min(gaps)) or 1.0
        y_span = (max(shifts) - min(shifts)) or 1.0
        placed: list[tuple[float, float]] = []
        for (k, v), g, d, _ in ranked:
            near = any(
                abs(g - pg) / x_span < 0.25 and abs(d - pd) / y_span < 0.08 for pg, pd in placed
            )
            if near:
                continue
            placed.append((g, d))
            ax.annotate(f"{k}={v}", (g, d), xytext=(4, 3), textcoords="offset points", fontsize=7)
            if len(placed) == 6:
                break
        rho = tr.gap_vs_shift.rho
        ax.set_title(f"R{tr.before}->R{tr.after}: rho = {'n/a' if rho is None else f'{rho:.2f}'}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xlabel(f"capability gap (1 - SR after R{tr.before})")
        ax.set_ylabel("change of verified-data share")
        ax.grid(alpha=0.3)
    return _save(fig, out / "gap_vs_allocation.png")


def probe_failure(data: CampaignData, out: Path) -> Path | None:
    """Learner failure rate by bucket of each probe, one line per round."""
    rows = data.queries["probes"].records()
    names = sorted({r["name"] for r in rows})
    if not names:
        return None
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for r in (x for x in rows if x["name"] == name):
            # MAP columns arrive as dicts (JSON text from lakes written before typed columns).
            rate = json_value(r["failure_rate"]) or {}
            sizes = json_value(r["distribution"]) or {}
            line = ax.plot(
                list(rate), list(rate.values()), marker="o", label=f"after round {r['round']}"
            )[0]
            for bucket, value in rate.items():
                # n: diagnostic tasks in the bucket, so a rate on three tasks reads as such.
                ax.annotate(
                    f"n={sizes.get(bucket, '?')}",
                    (bucket, value),
                    textcoords="offset points",
                    xytext=(0, 5),
                    fontsize=6,
                    color=line.get_color(),
                )
        ax.set_title(f"learner failure rate by {name}", fontsize=9)
        ax.set_ylim(0, 1.1)
        ax.set_xlabel(f"{name} (bucket)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("failure rate")
    axes[0][0].legend(fontsize=7)
    return _save(fig, out / "probe_failure.png")


def space_timeline(data: CampaignData, out: Path) -> Path:
    """Which factor entered the space when (and its origin), against the rounds."""
    last = max(data.rounds, default=0)
    fig, ax = plt.subplots(figsize=(9, 0.6 + 0.45 * len(data.factors)))
    for i, f in enumerate(data.factors):
        colour = {"seed": "tab:grey", "failure_driven": "tab:red", "coverage_gap": "tab:blue"}
        ax.barh(
            i,
            last + 1 - f.round_introduced,
            left=f.round_introduced,
            color=colour.get(f.origin.value, "tab:green"),
        )
        ax.text(
            f.round_introduced + 0.05,
            i,
            f"{f.name} ({f.origin.value}, {f.status.value})",
            va="center",
            fontsize=8,
            color="white",
        )
    ax.set_yticks([])
    ax.set_xlabel("round")
    ax.set_xlim(0, last + 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("synthesis-space timeline: when each factor entered")
    return _save(fig, out / "space_timeline.png")
