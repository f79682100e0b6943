"""Feedback statistics: coverage and success per factor value, and probes.

A probe is a realized property of the diagnostic tasks' gold trajectories that the synthesis
space does not control yet (``num_write``, ``num_read``, ...). For each, the learner's failure
rate per bucket, its rank correlation with failure, its coverage in the verified data and the
conditional mutual information ``I(fail; probe | current factors)`` in nats, with a
permutation p-value (probe values shuffled within strata of the current factors).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence

from scipy.stats import spearmanr

from evosyn.environments.features import bucket
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

COUNT_BUCKETS = [bucket(n) for n in (0, 1, 2, 3, 5)]
"""Ordered buckets of count properties: 0, 1, 2, 3-4, 5+."""
PROBE_NAMES = ("num_write", "num_read", "num_tool_calls", "num_numeric_args", "num_compute")
"""Realized properties probed as candidate factors."""
# Current factors whose realized value is a function of tool-call counts.
COUNT_DERIVED = frozenset({"difficulty_profile", *PROBE_NAMES})
# Permutations for the CMI p-value; enough for p ~ 0.005 resolution at modest cost.
PERMUTATIONS = 200
# Significance level for calling a probe failure-driven.
ALPHA = 0.05


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


def _permutation_null(
    fail: Sequence[bool], values: Sequence[str], strata: Sequence[str], observed: float, seed: int
) -> tuple[float, float]:
    """Permutation p-value of ``observed`` and the mean CMI under the null (its bias)."""
    rng = random.Random(seed)
    by_stratum: dict[str, list[int]] = defaultdict(list)
    for i, z in enumerate(strata):
        by_stratum[z].append(i)
    hits = 0
    total = 0.0
    shuffled = list(values)
    for _ in range(PERMUTATIONS):
        for idx in by_stratum.values():
            vals = [values[i] for i in idx]
            rng.shuffle(vals)
            for i, v in zip(idx, vals, strict=True):
                shuffled[i] = v
        null = conditional_mutual_information(fail, shuffled, strata)
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
    strata = ["|".join(e.realized.get(f, "?") for f in strata_factors) for e in rows]
    distribution = Counter(values)
    order = COUNT_BUCKETS if set(values) <= set(COUNT_BUCKETS) else sorted(distribution)
    failure_rate = {
        v: sum(f for f, x in zip(fail, values, strict=True) if x == v) / distribution[v]
        for v in order
        if distribution[v]
    }
    covered = Counter(v.realized.get(name) for v in verified if v.passed)
    n_verified = sum(covered.values())
    coverage = {v: (covered[v] / n_verified if n_verified else 0.0) for v in order}
    rho: float | None = None
    if order is COUNT_BUCKETS and len(distribution) > 1 and 0 < sum(fail) < len(fail):
        ranks = [COUNT_BUCKETS.index(v) for v in values]
        rho = float(spearmanr(ranks, fail).statistic)
    cmi = conditional_mutual_information(fail, values, strata)
    p_value, bias = _permutation_null(fail, values, strata, cmi, seed) if cmi > 0 else (1.0, 0.0)
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
        requested: task id -> the factor values its blueprint requested.
        campaign_id: campaign of the feedback.
        round: round the feedback describes.
        previous: the previous round's feedback, for success deltas.
        seed: seed of the permutation tests.
    """
    passed = [v for v in verified if v.passed]
    prior = {(v.factor, v.value): v.success for v in previous.values} if previous else {}
    values = []
    for factor in space.active_factors:
        counts: Counter[str] = Counter()
        for v in passed:
            realized = v.realized.get(factor.name)
            chosen = requested.get(v.task_id, {}).get(factor.name) or (
                [realized] if realized else []
            )
            counts.update(chosen)
        for value in factor.values:
            diag = [e for e in evaluations if e.realized.get(factor.name) == value]
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
                    success=success,
                    n_diagnostic=len(diag),
                    success_delta=(
                        success - before if success is not None and before is not None else None
                    ),
                )
            )
    in_space = {f.name for f in space.factors}
    # Condition on every current single-valued factor the diagnostic tasks realize.
    realized_keys = {k for e in evaluations for k in e.realized}
    strata = [f.name for f in space.active_factors if f.max_select == 1 and f.name in realized_keys]
    probes = [
        p
        for name in PROBE_NAMES
        if name not in in_space
        and (p := probe(name, evaluations, verified, strata, campaign_id, round, seed)) is not None
    ]
    return Feedback(campaign_id=campaign_id, round=round, values=values, probes=probes)
