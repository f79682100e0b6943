"""The report's tables: each metric over the campaign's data, with where its numbers came from."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evosyn.agents.feedback.probes import PROBE_NAMES
from evosyn.agents.learner.base import USER_FAULTS
from evosyn.buckets import BUCKETS
from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.features import SET_KEYS
from evosyn.records import ReflectorDecision
from evosyn.report import metrics as m
from evosyn.report.data import ORDINAL, STRUCTURAL, TEMPLATES, CampaignData, json_value

#: Realized properties that define the loop measures' slices.
SLICE_KEYS = (
    "task_family",
    "difficulty_profile",
    "tool_use_pattern",
    "num_write",
    "num_read",
    "computation",
)
#: Fewest diagnostic tasks a slice needs in an evaluation to count.
MIN_SLICE = 3
_DECISIVE = {FunctionalSymbol.WRITE, FunctionalSymbol.COMPUTE, FunctionalSymbol.TRANSFER}


@dataclass
class Table:
    """A titled table with the queries and functions its numbers come from."""

    key: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    note: str = ""


def _f(fn: object) -> str:
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', fn)}"


def fixed_success(data: CampaignData) -> dict[int, float]:
    """Success on the fixed diagnostic set (the official split) by round, where measured."""
    return {
        int(r["round"]): float(r["fixed_success"])
        for r in data.queries["success_by_round"].records()
        if r["fixed_success"] is not None
    }


def _cumulative(data: CampaignData, r: int) -> list[m.Sample]:
    return [s for s in data.samples if s.round <= r]


def pattern_union(runs: Sequence[CampaignData]) -> set[str]:
    """Functional patterns over every compared run and round."""
    return {s.pattern for d in runs for s in d.samples}


def intrinsic_table(runs: Sequence[CampaignData]) -> Table:
    """Table 12/14: intrinsic metrics on cumulative data by round, success rate, per run."""
    union = pattern_union(runs)
    t = Table(
        "intrinsic",
        "Intrinsic quality of the verified data (cumulative up to each round)",
        [
            "campaign",
            "round",
            "verified",
            "factor coverage",
            "combinatorial coverage",
            "factor balance",
            "interaction coverage",
            "trajectory diversity",
            "success, fixed set",
        ],
        queries=["spaces", "verified_samples", "success_by_round"],
        functions=[
            _f(m.factor_coverage),
            _f(m.combinatorial_coverage),
            _f(m.factor_balance),
            _f(m.interaction_coverage),
            _f(m.trajectory_diversity),
        ],
        note=f"Trajectory diversity is normalised by the union of {len(union)} patterns over "
        "all compared runs and rounds; combinatorial coverage by the union of factor cells "
        "(one value set per factor of the main campaign's space) over them. Success is the "
        "learner's after the round on the fixed diagnostic set (the official diagnostic split, "
        "the same every round); the success table gives its interval and n.",
    )
    cell_factors = list(runs[0].reference()) if runs else []
    combo = m.combinatorial_coverage(
        {f"{d.campaign_id}@{r}": _cumulative(d, r) for d in runs for r in d.rounds},
        cell_factors,
    )
    for d in runs:
        success = fixed_success(d)
        ref = d.reference()
        for r in sorted({s.round for s in d.samples}):
            data = _cumulative(d, r)
            t.rows.append(
                [
                    d.campaign_id,
                    r,
                    len(data),
                    m.factor_coverage(data, ref).value,
                    combo[f"{d.campaign_id}@{r}"],
                    m.factor_balance(data, ref).value,
                    m.interaction_coverage(data, d.template_reference(), TEMPLATES).value,
                    m.trajectory_diversity(data, union),
                    success.get(r),
                ]
            )
    return t


def success_table(runs: Sequence[CampaignData]) -> Table:
    """The learner's success by round: on the fixed set with n and interval, and on all."""
    t = Table(
        "success",
        "Learner success by round",
        [
            "campaign",
            "round",
            "success, fixed set",
            "95% CI",
            "n (fixed set)",
            "success, all diagnostics",
            "n (all diagnostics)",
            "k (trials per task)",
            "pass^k, fixed set",
            "user faults (unscored)",
        ],
        queries=["success_by_round", "fixed_set_trials", "user_faults_by_round"],
        functions=[_f(m.wilson_interval), _f(m.pass_hat_k)],
        note="Fixed set: the domain's official diagnostic split, the same tasks every round, so "
        "rounds and campaigns compare; n counts episodes (tasks times trials) and the interval "
        "is Wilson's at 95%. All diagnostics: the fixed set plus the held-out synthesized tasks "
        "so far, a set that grows and changes every round, so it does not compare across "
        "rounds. pass^k (with k trials per task): the chance that all k trials of a fixed-set "
        "task succeed, averaged over its tasks (τ-bench's estimate). User faults: " + USER_FAULTS,
    )
    for d in runs:
        faults = {
            int(r["round"]): int(r["user_faults"])
            for r in d.queries["user_faults_by_round"].records()
        }
        per_task: dict[int, list[tuple[int, int]]] = {}
        for row in d.queries["fixed_set_trials"].records():
            per_task.setdefault(int(row["round"]), []).append(
                (int(row["trials"]), int(row["successes"]))
            )
        for r in d.queries["success_by_round"].records():
            counts = per_task.get(int(r["round"]), [])
            k = max((n for n, _ in counts), default=0)
            n = int(r["fixed_n"])
            ci = None
            if n:
                rate = m.wilson_interval(int(r["fixed_successes"]), n)
                ci = f"[{rate.low:.3f}, {rate.high:.3f}]"
            t.rows.append(
                [
                    d.campaign_id,
                    int(r["round"]),
                    r["fixed_success"],
                    ci,
                    n,
                    r["all_success"],
                    int(r["all_n"]),
                    k or None,
                    m.pass_hat_k(counts, k) if k > 1 else None,
                    faults.get(int(r["round"]), 0),
                ]
            )
    return t


def per_factor_table(data: CampaignData) -> Table:
    """Coverage and balance of each factor on the final cumulative data."""
    ref = data.reference()
    cov = m.factor_coverage(data.samples, ref).parts
    bal = m.factor_balance(data.samples, ref).parts
    t = Table(
        "factors",
        f"Per-factor coverage and balance ({data.campaign_id}, all rounds)",
        ["factor", "values", "coverage", "balance", "source"],
        queries=["spaces", "verified_samples"],
        functions=[_f(m.factor_coverage), _f(m.factor_balance), "evosyn.report.data.sample_values"],
        note="Structural factors are re-derived from the gold tool calls (source: realized); "
        "factors tool calls cannot show come from the synthesized task (source: requested).",
    )
    for f, values in ref.items():
        src = "realized" if f in STRUCTURAL or f in SET_KEYS else "requested"
        t.rows.append([f, len(values), cov[f], bal[f], src])
    tmpl = m.interaction_coverage(data.samples, data.template_reference(), TEMPLATES).parts
    for name, value in tmpl.items():
        t.rows.append([f"pair {name}", "", value, "", "realized/requested"])
    return t


def official_signatures(domain: str) -> set[tuple[str, ...]]:
    """Decisive action signatures of the domain's official τ²-bench tasks."""
    from evosyn.environments.registry import get_domain

    env = get_domain(domain)
    out: set[tuple[str, ...]] = set()
    for task in env.tasks():
        actions = task.evaluation_criteria.actions if task.evaluation_criteria else None
        sig: list[str] = []
        for a in actions or []:
            spec = env.tool_spec(a.name, a.requestor)
            if spec is not None and spec.symbol in _DECISIVE:
                who = "user/" if a.requestor == "user" else ""
                sig.append(f"{spec.symbol.value}:{who}{a.name}")
        out.add(tuple(sig))
    return out


def support_table(runs: Sequence[CampaignData]) -> Table:
    """Structural support: cumulative distinct sequences, size-matched, unique, contrastive."""
    t = Table(
        "support",
        "Structural support of the verified data",
        [
            "campaign",
            "round",
            "distinct tool-call sequences (cumulative)",
            "size-matched",
            "unique vs official tasks",
            "unique vs other campaigns",
            "contrastive support",
        ],
        queries=["verified_samples"],
        functions=[
            _f(m.cumulative_support),
            _f(m.size_matched_support),
            _f(m.unique_support_fraction),
            _f(m.contrastive_support),
            _f(official_signatures),
        ],
    )
    smallest = min((len(d.samples) for d in runs if d.samples), default=0)
    t.note = (
        f"Size-matched: mean distinct sequences over 50 subsamples of {smallest} examples "
        "(the smallest compared run), at the final round. Unique and contrastive support use "
        "the decisive (write / compute / transfer) signature."
    )
    official: dict[str, set[tuple[str, ...]]] = {}
    for d in runs:
        if d.domain not in official:
            try:
                official[d.domain] = official_signatures(d.domain)
            except ValueError:
                official[d.domain] = set()
        others = {s.decisive for o in runs if o is not d for s in o.samples}
        support = m.cumulative_support(d.samples)
        last = max(support, default=None)
        for r, n in support.items():
            data = _cumulative(d, r)
            ours = {s.decisive for s in data}
            matched = (
                m.size_matched_support([s.sequence for s in data], smallest) if r == last else None
            )
            t.rows.append(
                [
                    d.campaign_id,
                    r,
                    n,
                    matched,
                    m.unique_support_fraction(ours, official[d.domain]),
                    m.unique_support_fraction(ours, others) if others else None,
                    m.contrastive_support([s.decisive for s in data]),
                ]
            )
    return t


def _slice_rows(data: CampaignData, r: int) -> list[tuple[dict[str, tuple[str, ...]], bool]]:
    return [
        ({k: v for k, v in vals.items() if k in SLICE_KEYS}, ok)
        for vals, ok, _ in data.evaluations.get(r, [])
    ]


@dataclass
class Transition:
    """One round transition's per-slice gap, allocation shift and gain."""

    before: int
    after: int
    slices: list[tuple[m.Slice, float, float, float | None]]
    gap_vs_shift: m.Alignment
    shift_vs_gain: m.Alignment
    improved: int
    targeted: int


def transitions(data: CampaignData) -> list[Transition]:
    """Per transition r -> r+1: capability gap 1 - SR_r, share change, SR gain, per slice."""
    out: list[Transition] = []
    rounds = sorted(data.evaluations)
    for r, nxt in itertools.pairwise(rounds):
        rows_r = _slice_rows(data, r)
        counts: dict[m.Slice, int] = {}
        for vals, _ in rows_r:
            for k, vs in vals.items():
                for v in vs:
                    counts[(k, v)] = counts.get((k, v), 0) + 1
        sr_r = {s: x for s, x in m.slice_success(rows_r).items() if counts[s] >= MIN_SLICE}
        sr_n = m.slice_success(_slice_rows(data, nxt))
        share_r = m.slice_shares([s for s in data.samples if s.round == r], SLICE_KEYS)
        share_n = m.slice_shares([s for s in data.samples if s.round == nxt], SLICE_KEYS)
        shift = m.allocation_change(share_r, share_n)
        slices = [
            (s, 1 - sr_r[s], shift.get(s, 0.0), (sr_n[s] - sr_r[s]) if s in sr_n else None)
            for s in sorted(sr_r)
        ]
        gaps = [g for _, g, _, _ in slices]
        shifts = [d for _, _, d, _ in slices]
        with_gain = [(d, g) for _, _, d, g in slices if g is not None]
        improved, targeted = m.targeted_improvement({s: d for s, _, d, _ in slices}, sr_r, sr_n)
        out.append(
            Transition(
                r,
                nxt,
                slices,
                m.spearman_alignment(gaps, shifts),
                m.spearman_alignment([a for a, _ in with_gain], [b for _, b in with_gain]),
                improved,
                targeted,
            )
        )
    return out


def loop_table(data: CampaignData, trans: Sequence[Transition]) -> Table:
    """Gap-allocation alignment, targeted improvement and marginal gain per transition."""
    success = fixed_success(data)
    added = {
        int(r["round"]): int(r["verified"]) for r in data.queries["verified_by_round"].records()
    }
    gain = m.marginal_gain(success, added)
    t = Table(
        "loop",
        f"Loop measures per transition ({data.campaign_id})",
        [
            "transition",
            "slices",
            "gap-allocation rho",
            "95% CI",
            "perm. p",
            "allocation-gain rho",
            "targeted improvement",
            "delta SR",
            "added verified",
            "delta SR / 1K",
        ],
        queries=["evaluations", "verified_samples", "success_by_round", "verified_by_round"],
        functions=[
            _f(m.slice_success),
            _f(m.allocation_change),
            _f(m.spearman_alignment),
            _f(m.targeted_improvement),
            _f(m.marginal_gain),
        ],
        note=f"Slices: values of {', '.join(SLICE_KEYS)} realized by the diagnostic tasks' gold "
        f"trajectories, with at least {MIN_SLICE} tasks. Gap = 1 - SR after round r; "
        "allocation = change of the slice's share of verified data from round r to r+1. "
        "delta SR: change of success on the fixed diagnostic set (the official split).",
    )
    for tr in trans:
        a = tr.gap_vs_shift
        ci = f"[{a.ci_low:.2f}, {a.ci_high:.2f}]" if a.ci_low is not None else None
        delta = success.get(tr.after, 0.0) - success.get(tr.before, 0.0)
        t.rows.append(
            [
                f"R{tr.before}->R{tr.after}",
                a.n,
                a.rho,
                ci,
                a.p_value,
                tr.shift_vs_gain.rho,
                f"{tr.improved}/{tr.targeted}",
                delta,
                added.get(tr.after, 0),
                gain.get(tr.after),
            ]
        )
    return t


def slice_table(trans: Sequence[Transition]) -> Table:
    """Every slice's gap, share change and gain (the scatter plots' points)."""
    t = Table(
        "slices",
        "Capability gap, allocation change and gain per slice",
        ["transition", "slice", "capability gap", "delta share", "post-round gain"],
        queries=["evaluations", "verified_samples"],
        functions=[_f(m.slice_success), _f(m.slice_shares), _f(m.allocation_change)],
    )
    for tr in trans:
        for (k, v), gap, shift, g in tr.slices:
            t.rows.append([f"R{tr.before}->R{tr.after}", f"{k}={v}", gap, shift, g])
    return t


def information_table(data: CampaignData) -> Table:
    """CMI / NMI of each probed property (and promoted factor) on each round's evaluation."""
    promoted = {f.name: f.round_introduced for f in data.factors if f.round_introduced > 0}
    t = Table(
        "information",
        f"Failure information of candidate and promoted factors ({data.campaign_id})",
        [
            "round",
            "factor",
            "promoted",
            "I(fail; z | O_r)",
            "Reflector's probe CMI [p]",
            "NMI(z, g)",
            "I(fail; g)",
            "I(fail; z | g)",
            "tasks",
        ],
        queries=["evaluations", "spaces", "probes"],
        functions=[_f(m.factor_information), _f(m.tertiles)],
        note="In nats, on the diagnostic tasks evaluated after round r (before a factor "
        "promoted from that evaluation enters). O_r: the structural factors already in the "
        "space, one stratum per combination of their values; g: tool-count tertiles. The "
        "Reflector's probe CMI is the figure its decision cites (probes table): the same "
        "quantity on the stratification the probe pools for its permutation test, so the "
        "two differ; its p is the permutation p-value.",
    )
    # A campaign data set without the probes query (built by hand) shows no probe figures.
    probes = data.queries.get("probes")
    probed = {
        (int(row["round"]), str(row["name"])): (float(row["cmi"]), float(row["p_value"]))
        for row in (probes.records() if probes is not None else [])
    }
    space_keys = ["task_family", "difficulty_profile", "tool_use_patterns"]
    order = list(BUCKETS)
    for r, rows in sorted(data.evaluations.items()):
        realized = [x for _, _, x in rows]
        fail = [not ok for _, ok, _ in rows]
        ranks = [order.index(x.get("num_tool_calls", "0")) for x in realized]
        g = m.tertiles(ranks)
        current = space_keys + [f for f, at in promoted.items() if at <= r]
        strata = ["|".join(x.get(k, "?") for k in current) for x in realized]
        for name in (*PROBE_NAMES, "computation"):
            if name in current or not all(name in x for x in realized):
                continue
            z = [x[name] for x in realized]
            info = m.factor_information(fail, z, strata, g)
            mark = "yes" if promoted.get(name) == r + 1 else ""
            t.rows.append(
                [
                    r,
                    name,
                    mark,
                    info.cmi_space,
                    _probe_figure(probed.get((r, name))),
                    info.nmi_complexity,
                    info.mi_fail_complexity,
                    info.cmi_complexity,
                    info.n,
                ]
            )
    return t


def _probe_figure(probe: tuple[float, float] | None) -> str:
    return "-" if probe is None else f"{probe[0]:.3f} [p={probe[1]:.3f}]"


def controllability_table(data: CampaignData) -> Table:
    """Requested vs realized agreement per single-valued structural factor."""
    t = Table(
        "controllability",
        f"Controllability: requested vs realized ({data.campaign_id})",
        ["factor", "pairs", "exact match", "Spearman rho"],
        queries=["verified_samples"],
        functions=[_f(m.controllability)],
        note="Requested: the synthesized task's requested value; realized: recomputed from "
        "the verified gold trajectory. Refusals' task family (no write) is left out; "
        "tool_use_pattern matches when every derivable requested pattern shows.",
    )
    for c in m.controllability(data.controls, ORDINAL):
        t.rows.append([c.factor, c.n, c.exact, c.spearman])
    return t


def timeline_table(data: CampaignData) -> Table:
    """Which factor entered the space when and why, and every decision in words."""
    t = Table(
        "timeline",
        f"Synthesis-space timeline ({data.campaign_id})",
        ["decided after round", "takes effect in round", "decision", "origin", "evidence"],
        queries=["reflections", "spaces"],
        note="The Reflector decides after round r from that round's feedback (its reflections "
        "row has round r); the space it leaves is the one round r + 1 synthesizes in. Seed "
        "factors are in the space from round 1.",
    )
    for f in data.factors:
        if f.round_introduced == 0:
            t.rows.append([None, 1, f"seed factor {f.name}", f.origin.value, None])
    for r in data.queries["reflections"].records():
        decision = ReflectorDecision(
            campaign_id=data.campaign_id,
            round=int(r["round"]),
            action=r["action"],
            new_factor=json_value(r["factor_record"]),
            reviews=json_value(r["reviews"]) or [],
            next_space_version=int(r["next_space_version"]),
        )
        t.rows.append(
            [
                decision.round,
                decision.round + 1,
                decision.in_words(),
                r["origin"],
                (r["evidence"] or "")[:200],
            ]
        )
    return t


def comparison_table(intrinsic: Table) -> Table:
    """Table 2: each campaign's final cumulative row, side by side."""
    t = Table(
        "comparison",
        "Campaigns compared on their final verified data",
        intrinsic.columns,
        queries=intrinsic.queries,
        functions=intrinsic.functions,
        note=intrinsic.note,
    )
    last: dict[str, list[Any]] = {}
    for row in intrinsic.rows:
        last[row[0]] = row
    t.rows = list(last.values())
    return t


def build_tables(main: CampaignData, others: Sequence[CampaignData]) -> list[Table]:
    """Every table of a report on ``main`` compared with ``others``."""
    runs = [main, *others]
    trans = transitions(main)
    intrinsic = intrinsic_table(runs)
    tables = [
        intrinsic,
        *([comparison_table(intrinsic)] if others else []),
        success_table(runs),
        per_factor_table(main),
        support_table(runs),
        loop_table(main, trans),
        slice_table(trans),
        information_table(main),
        controllability_table(main),
        timeline_table(main),
    ]
    for other in others:
        extra = loop_table(other, transitions(other))
        extra.key = f"loop-{other.campaign_id}"
        tables.append(extra)
    return tables
