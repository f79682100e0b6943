"""Feedback statistics: coverage and success per factor value, and probes.

A probe is a realized property of the diagnostic tasks' gold trajectories that the synthesis
space does not control yet (``num_write``, ``num_read``, ...). For each, the learner's failure
rate per bucket, its rank correlation with failure, its coverage in the verified data and the
conditional mutual information ``I(fail; probe | current factors)`` in nats, with a
permutation p-value (probe values shuffled within strata of the current factors).

The diagnostic set is small (tens of tasks), so conditioning on every current factor leaves
strata of one or two tasks in which no probe can carry information and every p-value is ~1.
The strata are therefore built from the (at most two) current factors that are most informative
about failure, chosen greedily by their bias-corrected information gain, and strata with fewer
than ``MIN_STRATUM`` tasks are pooled into one.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence

from evosyn.buckets import BUCKETS
from evosyn.environments.features import SET_KEYS, RealizedFeatures, factor_values
from evosyn.records import (
    EvalResult,
    Factor,
    FactorOrigin,
    Feedback,
    Probe,
    SynthesisSpace,
    ValueFeedback,
    Verification,
)

PROBE_NAMES = ("num_write", "num_read", "num_tool_calls", "num_numeric_args", "num_compute")
"""Realized properties probed as candidate factors."""
# At most this many current factors define the conditioning strata.
MAX_CONDITIONING = 2
# Strata with fewer diagnostic tasks are pooled: a stratum of one task carries no information.
MIN_STRATUM = 5
POOLED = "(pooled)"
# Permutations for the CMI p-value; enough for p ~ 0.005 resolution at modest cost.
PERMUTATIONS = 200
# Significance level for calling a probe failure-driven.
ALPHA = 0.05
FEATURES = frozenset(
    RealizedFeatures(
        num_read=0,
        num_write=0,
        num_compute=0,
        num_transfer=0,
        num_tool_calls=0,
        num_numeric_args=0,
        functional_pattern="none",
        task_family="",
        tool_use_patterns=[],
    ).as_values()
) | {"difficulty_profile", *SET_KEYS, *SET_KEYS.values()}
"""Realized properties a programmatic feature computes from every trajectory."""


def is_labelled(factor: Factor) -> bool:
    """Whether each task's value of ``factor`` is read by the labeller, not computed.

    True for a factor the Reflector invented (it has a definition) that no programmatic
    feature computes (:data:`FEATURES`).
    """
    return bool(factor.definition) and factor.name not in FEATURES


def with_labels(
    realized: dict[str, str], task_id: str, labels: dict[str, dict[str, str]]
) -> dict[str, str]:
    """``realized`` plus the labels of ``task_id``'s task (``task -> factor -> value``)."""
    extra = labels.get(task_of(task_id))
    return realized | extra if extra else realized


def requested_labels(
    space: SynthesisSpace, requested: dict[str, dict[str, list[str]]]
) -> dict[str, dict[str, str]]:
    """The values of labelled factors each synthesized task was made with, by task.

    A synthesized task's value of a labelled factor is the one its blueprint requested: the
    LLM Generator states it and the labeller confirms it before the task is kept.
    """
    names = [f.name for f in space.active_factors if is_labelled(f)]
    out: dict[str, dict[str, str]] = {}
    for task_id, chosen in requested.items():
        values = {n: chosen[n][0] for n in names if len(chosen.get(n, [])) == 1}
        if values:
            out[task_id] = values
    return out


def _entropy_terms(joint: Counter[tuple[str, str]], n: int) -> float:
    # Plug-in mutual information of a 2-way table, in nats.
    left: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for (a, b), c in joint.items():
        left[a] += c
        right[b] += c
    return sum((c / n) * math.log(c * n / (left[a] * right[b])) for (a, b), c in joint.items() if c)


def conditional_mutual_information(
    fail: Sequence[bool], probe_values: Sequence[str], strata: Sequence[str]
) -> float:
    """Plug-in ``I(fail; probe | stratum)`` in nats."""
    groups: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for f, p, z in zip(fail, probe_values, strata, strict=True):
        groups[z][(str(f), p)] += 1
    total = len(fail)
    return sum(
        (sum(g.values()) / total) * _entropy_terms(g, sum(g.values())) for g in groups.values()
    )


def mutual_information(fail: Sequence[bool], values: Sequence[str]) -> float:
    """Plug-in ``I(fail; values)`` in nats."""
    return conditional_mutual_information(fail, values, ["all"] * len(fail))


def _corrected_information(fail: Sequence[bool], strata: Sequence[str]) -> float:
    # Miller-Madow correction: the plug-in estimate's bias grows with the number of cells.
    n = len(fail)
    cells = len(set(zip(fail, strata, strict=True)))
    bias = (cells - len(set(strata)) - len(set(fail)) + 1) / (2 * n) if n else 0.0
    return mutual_information(fail, strata) - bias


def task_of(task_id: str) -> str:
    """The evaluated task of a result id: trials ``TASK#trialK`` share their task."""
    return task_id.split("#trial", 1)[0]


def pooled_strata(
    realized: Sequence[dict[str, str]],
    factors: Sequence[str],
    tasks: Sequence[str] | None = None,
) -> list[str]:
    """Strata of the given factors' joint values; strata of under ``MIN_STRATUM`` tasks pooled.

    ``tasks`` names the task of each row (trials of one task count once); default: one each.
    """
    keys = ["|".join(r.get(f, "?") for f in factors) for r in realized]
    owners = tasks if tasks is not None else [str(i) for i in range(len(keys))]
    sizes = Counter(k for k, _ in set(zip(keys, owners, strict=True)))
    return [k if sizes[k] >= MIN_STRATUM else POOLED for k in keys]


def conditioning_factors(evaluations: Sequence[EvalResult], candidates: Sequence[str]) -> list[str]:
    """The current factors to condition probes on: greedy by bias-corrected information gain.

    At most ``MAX_CONDITIONING`` factors, each added only while it raises the corrected
    ``I(fail; strata)``; ties go to the earlier candidate.
    """
    fail = [not e.success for e in evaluations]
    realized = [e.realized for e in evaluations]
    tasks = [task_of(e.task_id) for e in evaluations]
    chosen: list[str] = []
    current = 0.0
    for _ in range(MAX_CONDITIONING):
        gains = [
            (_corrected_information(fail, pooled_strata(realized, [*chosen, f], tasks)), f)
            for f in candidates
            if f not in chosen
        ]
        if not gains:
            break
        best, name = max(gains, key=lambda g: g[0])
        if best <= current:
            break
        chosen.append(name)
        current = best
    return chosen


def _permutation_null(
    fail: Sequence[bool],
    values: Sequence[str],
    strata: Sequence[str],
    tasks: Sequence[str],
    observed: float,
    seed: int,
) -> tuple[float, float]:
    """Permutation p-value of ``observed`` and the mean CMI under the null (its bias).

    Probe values are properties of tasks, so they are shuffled between tasks (within strata),
    keeping every trial of a task together: trials of one task are not independent evidence.
    """
    rng = random.Random(seed)
    value_of = dict(zip(tasks, values, strict=True))
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for t, z in dict(zip(tasks, strata, strict=True)).items():
        by_stratum[z].append(t)
    hits = 0
    total = 0.0
    for _ in range(PERMUTATIONS):
        assigned: dict[str, str] = {}
        for members in by_stratum.values():
            vals = [value_of[t] for t in members]
            rng.shuffle(vals)
            assigned.update(zip(members, vals, strict=True))
        null = conditional_mutual_information(fail, [assigned[t] for t in tasks], strata)
        total += null
        if null >= observed - 1e-12:
            hits += 1
    return (hits + 1) / (PERMUTATIONS + 1), total / PERMUTATIONS


def probe(
    name: str,
    evaluations: Sequence[EvalResult],
    verified: Sequence[Verification],
    strata_factors: Sequence[str],
    campaign_id: str,
    round: int,
    seed: int = 0,
) -> Probe | None:
    """The probe ``name`` over the diagnostic results, or None if no result carries it."""
    rows = [e for e in evaluations if name in e.realized]
    if not rows:
        return None
    fail = [not e.success for e in rows]
    values = [e.realized[name] for e in rows]
    tasks = [task_of(e.task_id) for e in rows]
    strata = pooled_strata([e.realized for e in rows], strata_factors, tasks)
    distribution = Counter(values)
    ordinal = set(values) <= set(BUCKETS)
    order = list(BUCKETS) if ordinal else sorted(distribution)
    failure_rate = {
        v: sum(f for f, x in zip(fail, values, strict=True) if x == v) / distribution[v]
        for v in order
        if distribution[v]
    }
    covered = Counter(v.realized.get(name) for v in verified if v.passed)
    n_verified = sum(covered.values())
    coverage = {v: (covered[v] / n_verified if n_verified else 0.0) for v in order}
    rho: float | None = None
    if ordinal and len(distribution) > 1 and 0 < sum(fail) < len(fail):
        # scipy.stats takes a second to import: only the processes that probe pay it.
        from scipy.stats import spearmanr

        ranks = [BUCKETS.index(v) for v in values]
        rho = float(spearmanr(ranks, fail).statistic)
    cmi = conditional_mutual_information(fail, values, strata)
    p_value, bias = (
        _permutation_null(fail, values, strata, tasks, cmi, seed) if cmi > 0 else (1.0, 0.0)
    )
    driven = FactorOrigin.FAILURE_DRIVEN if p_value < ALPHA else FactorOrigin.COVERAGE_GAP
    return Probe(
        campaign_id=campaign_id,
        round=round,
        name=name,
        distribution=dict(distribution),
        failure_rate=failure_rate,
        coverage=coverage,
        spearman=rho,
        cmi=cmi,
        cmi_null=bias,
        p_value=p_value,
        suggested=Factor(
            name=name,
            values=list(order),
            guidance=f"Request trajectories whose {name.replace('_', ' ')} falls in this bucket.",
            origin=driven,
        ),
    )


def compute_feedback(
    space: SynthesisSpace,
    evaluations: Sequence[EvalResult],
    verified: Sequence[Verification],
    requested: dict[str, dict[str, list[str]]],
    campaign_id: str,
    round: int,
    previous: Feedback | None = None,
    seed: int = 0,
) -> Feedback:
    """Feedback of ``round``.

    Args:
        space: the synthesis space the round ran in.
        evaluations: the learner's results on the diagnostic set, with realized properties.
        verified: verifications of the accumulated data; only passed ones count as coverage.
        requested: task id -> the factor values its blueprint requested (for a labelled factor
            a task requested none of, the value the labeller read off it, if any).
        campaign_id: campaign of the feedback.
        round: round the feedback describes.
        previous: the previous round's feedback, for success deltas.
        seed: seed of the permutation tests.
    """
    labels = requested_labels(space, requested)
    if labels:
        # Held-out synthesized diagnostics carry the labelled values their tasks were made with.
        evaluations = [
            e.model_copy(update={"realized": with_labels(e.realized, e.task_id, labels)})
            for e in evaluations
        ]
    passed = [v for v in verified if v.passed]
    prior = {(v.factor, v.value): v.success for v in previous.values} if previous else {}
    values = []
    latest = sum(v.round == round for v in passed)
    for factor in space.active_factors:
        counts: Counter[str] = Counter()
        this_round: Counter[str] = Counter()
        for v in passed:
            realized = v.realized.get(factor.name)
            chosen = requested.get(v.task_id, {}).get(factor.name) or (
                [realized] if realized else []
            )
            counts.update(chosen)
            if v.round == round:
                this_round.update(chosen)
        for value in factor.values:
            diag = [e for e in evaluations if value in factor_values(e.realized, factor.name)]
            success = sum(e.success for e in diag) / len(diag) if diag else None
            before = prior.get((factor.name, value))
            values.append(
                ValueFeedback(
                    campaign_id=campaign_id,
                    round=round,
                    factor=factor.name,
                    value=value,
                    coverage=counts[value] / len(passed) if passed else 0.0,
                    n_verified=counts[value],
                    round_coverage=this_round[value] / latest if latest else None,
                    success=success,
                    n_diagnostic=len(diag),
                    success_delta=(
                        success - before if success is not None and before is not None else None
                    ),
                )
            )
    in_space = {f.name for f in space.factors}
    strata = strata_factors(space, evaluations)
    probes = [
        p
        for name in PROBE_NAMES
        if name not in in_space
        and (p := probe(name, evaluations, verified, strata, campaign_id, round, seed)) is not None
    ]
    return Feedback(campaign_id=campaign_id, round=round, values=values, probes=probes)


def strata_factors(space: SynthesisSpace, evaluations: Sequence[EvalResult]) -> list[str]:
    """The current factors a probe is conditioned on (:func:`conditioning_factors`).

    Candidates are the space's single-valued active factors the diagnostic results realize.
    """
    realized_keys = {k for e in evaluations for k in e.realized}
    current = [
        f.name for f in space.active_factors if f.max_select == 1 and f.name in realized_keys
    ]
    return conditioning_factors(evaluations, current)


def without_learner_signal(feedback: Feedback) -> Feedback:
    """``feedback`` as the ``no_feedback`` ablation sees it: nothing measured on the learner.

    Coverage of the verified data stays; success, its change and the probes (failure rates and
    conditional information, all measured on the learner) are removed.
    """
    return feedback.model_copy(
        update={
            "values": [
                v.model_copy(update={"success": None, "n_diagnostic": 0, "success_delta": None})
                for v in feedback.values
            ],
            "probes": [],
        }
    )
