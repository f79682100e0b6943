"""The paper's intrinsic data-quality metrics and loop measures, as pure functions.

Every function here takes plain values (samples, counts, per-slice numbers) that
:mod:`evosyn.report.data` reads from the lake with SQL, so each number is reproducible from
the query that fed it. Structural factor values come from ``Verification.realized`` (re-derived
from the gold tool calls), never from the plan.

Conventions for edge cases (all metrics are in [0, 1] unless they are counts or correlations):

* a factor with no observations has coverage 0 and balance 0;
* a factor whose reference set has one value has balance 1 when it is observed (a single
  value cannot be spread more evenly);
* trajectory diversity is 0 when the union of patterns has fewer than two patterns.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class Sample:
    """One verified sample: its round, factor values and gold tool-call structure."""

    round: int
    values: Mapping[str, tuple[str, ...]]
    pattern: str = "none"
    sequence: tuple[str, ...] = ()
    decisive: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scored:
    """A mean score and the per-part scores it averages."""

    value: float
    parts: dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- information


def entropy(counts: Mapping[str, int] | Counter[str]) -> float:
    """Shannon entropy of a count table, in nats (0 for an empty table)."""
    total = sum(counts.values())
    if total == 0:
        return 0.0
    return -sum((c / total) * math.log(c / total) for c in counts.values() if c > 0)


def normalised_entropy(counts: Mapping[str, int] | Counter[str], size: int) -> float:
    """``H(counts) / log(size)``; 1 for an observed one-value set, 0 for no observations."""
    if sum(counts.values()) == 0:
        return 0.0
    if size <= 1:
        return 1.0
    return min(1.0, entropy(counts) / math.log(size))


def conditional_mutual_information(
    left: Sequence[object], right: Sequence[object], strata: Sequence[object]
) -> float:
    """Plug-in ``I(left; right | strata)`` in nats (0 for no rows)."""
    n = len(left)
    if n == 0:
        return 0.0
    joint: Counter[tuple[object, object, object]] = Counter(zip(strata, left, right, strict=True))
    za: Counter[tuple[object, object]] = Counter(zip(strata, left, strict=True))
    zb: Counter[tuple[object, object]] = Counter(zip(strata, right, strict=True))
    z: Counter[object] = Counter(strata)
    return sum(
        (c / n) * math.log(c * z[s] / (za[(s, a)] * zb[(s, b)])) for (s, a, b), c in joint.items()
    )


def mutual_information(left: Sequence[object], right: Sequence[object]) -> float:
    """Plug-in ``I(left; right)`` in nats."""
    return conditional_mutual_information(left, right, ["*"] * len(left))


def normalised_mutual_information(left: Sequence[str], right: Sequence[str]) -> float:
    """``I(a; b) / sqrt(H(a) H(b))``; 0 when either side is constant."""
    h_left = entropy(Counter(left))
    h_right = entropy(Counter(right))
    if h_left == 0 or h_right == 0:
        return 0.0
    return float(mutual_information(left, right) / math.sqrt(h_left * h_right))


# --------------------------------------------------------------------------- intrinsic metrics


def _observed(samples: Sequence[Sample], factor: str) -> Counter[str]:
    return Counter(v for s in samples for v in s.values.get(factor, ()))


def factor_coverage(samples: Sequence[Sample], reference: Mapping[str, Sequence[str]]) -> Scored:
    """Mean over factors of the share of each factor's reference values observed."""
    parts: dict[str, float] = {}
    for factor, values in reference.items():
        seen = set(_observed(samples, factor))
        parts[factor] = len(seen & set(values)) / len(values) if values else 0.0
    return Scored(sum(parts.values()) / len(parts) if parts else 0.0, parts)


def factor_balance(samples: Sequence[Sample], reference: Mapping[str, Sequence[str]]) -> Scored:
    """Mean over factors of the normalised entropy of the factor's value distribution."""
    parts: dict[str, float] = {}
    for factor, values in reference.items():
        counts = _observed(samples, factor)
        allowed = Counter({v: counts[v] for v in values if counts[v]})
        parts[factor] = normalised_entropy(allowed, len(values))
    return Scored(sum(parts.values()) / len(parts) if parts else 0.0, parts)


def _cell(sample: Sample, factors: Sequence[str]) -> tuple[str, ...]:
    return tuple(";".join(sorted(sample.values.get(f, ()))) or "-" for f in factors)


def combinatorial_coverage(
    runs: Mapping[str, Sequence[Sample]], factors: Sequence[str]
) -> dict[str, float]:
    """Per run: distinct observed factor cells over the union of cells across all runs."""
    cells = {run: {_cell(s, factors) for s in samples} for run, samples in runs.items()}
    union = set().union(*cells.values()) if cells else set()
    return {run: (len(c) / len(union) if union else 0.0) for run, c in cells.items()}


def interaction_coverage(
    samples: Sequence[Sample],
    reference: Mapping[str, Sequence[str]],
    templates: Sequence[tuple[str, str]],
) -> Scored:
    """Mean over factor-pair templates of observed value pairs over all reference pairs."""
    parts: dict[str, float] = {}
    for a, b in templates:
        va, vb = set(reference.get(a, ())), set(reference.get(b, ()))
        pairs = {
            (x, y)
            for s in samples
            for x in s.values.get(a, ())
            for y in s.values.get(b, ())
            if x in va and y in vb
        }
        parts[f"{a} x {b}"] = len(pairs) / (len(va) * len(vb)) if va and vb else 0.0
    return Scored(sum(parts.values()) / len(parts) if parts else 0.0, parts)


def trajectory_diversity(samples: Sequence[Sample], union: set[str]) -> float:
    """Normalised entropy of collapsed functional patterns against the shared pattern union."""
    if len(union) < 2:
        return 0.0
    counts = Counter(s.pattern for s in samples)
    return min(1.0, entropy(counts) / math.log(len(union)))


# --------------------------------------------------------------------------- structural support


def cumulative_support(samples: Sequence[Sample]) -> dict[int, int]:
    """Round -> distinct gold tool-call sequences in the verified data up to that round."""
    seen: set[tuple[str, ...]] = set()
    out: dict[int, int] = {}
    for r in sorted({s.round for s in samples}):
        seen |= {s.sequence for s in samples if s.round == r}
        out[r] = len(seen)
    return out


def size_matched_support(
    sequences: Sequence[tuple[str, ...]], n: int, draws: int = 50, seed: int = 0
) -> float:
    """Mean distinct sequences in ``draws`` subsamples of size ``n`` (all of them if fewer)."""
    if n >= len(sequences):
        return float(len(set(sequences)))
    rng = random.Random(seed)
    return sum(len(set(rng.sample(list(sequences), n))) for _ in range(draws)) / draws


def unique_support_fraction(ours: set[tuple[str, ...]], reference: set[tuple[str, ...]]) -> float:
    """Share of our distinct signatures absent from the reference corpus (0 when we have none)."""
    return len(ours - reference) / len(ours) if ours else 0.0


def contrastive_support(sequences: Sequence[tuple[str, ...]]) -> float:
    """Share of distinct multi-action compositions that occur in two or more orders.

    A composition is the multiset of decisive actions; it contributes order-sensitive contrast
    when the data shows more than one ordering of it.
    """
    orders: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for seq in set(sequences):
        if len(seq) >= 2:
            orders.setdefault(tuple(sorted(seq)), set()).add(seq)
    if not orders:
        return 0.0
    return sum(len(o) >= 2 for o in orders.values()) / len(orders)


# --------------------------------------------------------------------------- success


@dataclass(frozen=True)
class Rate:
    """A success rate with its count and a Wilson score interval."""

    successes: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float | None:
        """Share of successes; None without trials."""
        return self.successes / self.n if self.n else None


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Rate:
    """``successes`` of ``n`` with the Wilson score interval at ``level`` (two-sided).

    Wilson's interval stays inside [0, 1] and keeps its coverage near 0 and 1 and for small
    ``n``, where the normal approximation does not. With no trials the interval is [0, 1].
    """
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n], got {successes} of {n}")
    if n == 0:
        return Rate(0, 0, 0.0, 1.0)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At p = 0 or 1 one end is exactly 0 or 1; rounding in the formula would miss it.
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == n else centre + half
    return Rate(successes, n, low, high)


def pass_hat_k(trials: Sequence[tuple[int, int]], k: int) -> float | None:
    """τ-bench's pass^k: the chance that k trials of a task all succeed, averaged over tasks.

    Each task with ``n`` trials of which ``c`` succeeded contributes ``C(c, k) / C(n, k)`` (the
    unbiased estimate from its trials); tasks with fewer than ``k`` trials are left out. None
    when no task has ``k`` trials. pass^1 is the plain success rate.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    scores = [math.comb(c, k) / math.comb(n, k) for n, c in trials if n >= k]
    return sum(scores) / len(scores) if scores else None


# --------------------------------------------------------------------------- loop measures


Slice = tuple[str, str]
"""A slice of the data: (realized property, value)."""


def slice_success(rows: Sequence[tuple[Mapping[str, tuple[str, ...]], bool]]) -> dict[Slice, float]:
    """Success rate per slice over (values, success) rows of one evaluation."""
    hits: Counter[Slice] = Counter()
    total: Counter[Slice] = Counter()
    for values, success in rows:
        for key, vals in values.items():
            for v in vals:
                total[(key, v)] += 1
                hits[(key, v)] += success
    return {s: hits[s] / total[s] for s in total}


def slice_shares(samples: Sequence[Sample], keys: Sequence[str]) -> dict[Slice, float]:
    """Share of ``samples`` in each slice of ``keys``."""
    if not samples:
        return {}
    counts: Counter[Slice] = Counter(
        (k, v) for s in samples for k in keys for v in s.values.get(k, ())
    )
    return {sl: c / len(samples) for sl, c in counts.items()}


def allocation_change(
    before: Mapping[Slice, float], after: Mapping[Slice, float]
) -> dict[Slice, float]:
    """Per slice: verified-data share next round minus share this round."""
    return {s: after.get(s, 0.0) - before.get(s, 0.0) for s in set(before) | set(after)}


@dataclass(frozen=True)
class Alignment:
    """Spearman correlation between two per-slice measures, with its uncertainty."""

    rho: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n: int


def _rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    # scipy.stats takes a second to import: an evaluation's process (Wilson intervals only)
    # never pays it.
    from scipy.stats import spearmanr

    value = float(spearmanr(x, y).statistic)
    return None if math.isnan(value) else value


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Row-wise Pearson correlation; NaN where a row is constant.
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((a * b).sum(axis=1) / denom)


def spearman_alignment(
    x: Sequence[float], y: Sequence[float], resamples: int = 1000, seed: int = 0
) -> Alignment:
    """Spearman rho of paired values, a percentile bootstrap 95% interval, a permutation p.

    The bootstrap resamples pairs (resamples with a constant side are dropped). The p-value
    is two-sided: the share of permutations of ``y`` whose |rho| reaches the observed |rho|
    (with the usual +1 correction). Fewer than three pairs or a constant side give no
    correlation.
    """
    rho = _rho(x, y)
    if rho is None:
        return Alignment(None, None, None, None, len(x))
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(xs)
    idx = rng.integers(0, n, size=(resamples, n))
    boots = _pearson_rows(rankdata(xs[idx], axis=1), rankdata(ys[idx], axis=1))
    boots = np.sort(boots[~np.isnan(boots)])
    low = float(np.quantile(boots, 0.025)) if boots.size else None
    high = float(np.quantile(boots, 0.975)) if boots.size else None
    rx, ry = rankdata(xs), rankdata(ys)
    perms = np.array([rng.permutation(ry) for _ in range(resamples)])
    null = _pearson_rows(np.broadcast_to(rx, perms.shape), perms)
    hits = int((np.abs(null) >= abs(rho) - 1e-12).sum())
    return Alignment(rho, low, high, (hits + 1) / (resamples + 1), n)


def targeted_improvement(
    shift: Mapping[Slice, float],
    success_before: Mapping[Slice, float],
    success_after: Mapping[Slice, float],
    threshold: float = 0.0,
) -> tuple[int, int]:
    """Targeted-improvement counts: (improved, targeted).

    Targeted: slices whose verified-data share grew by more than ``threshold`` and that both
    evaluations measure; improved: those of them whose success then rose.
    """
    targeted = [
        s for s, d in shift.items() if d > threshold and s in success_before and s in success_after
    ]
    improved = sum(success_after[s] > success_before[s] for s in targeted)
    return improved, len(targeted)


def tertiles(ranks: Sequence[int]) -> list[str]:
    """Tertile bucket (low / mid / high) of each ordinal rank, cut at the 1/3 and 2/3 ranks."""
    if not ranks:
        return []
    ordered = sorted(ranks)
    q1 = ordered[(len(ordered) - 1) // 3]
    q2 = ordered[(2 * (len(ordered) - 1)) // 3]
    return ["low" if r <= q1 else "mid" if r <= q2 else "high" for r in ranks]


@dataclass(frozen=True)
class FactorInformation:
    """Failure information a (candidate or promoted) factor carries, in nats."""

    cmi_space: float
    nmi_complexity: float
    mi_fail_complexity: float
    cmi_complexity: float
    n: int


def factor_information(
    fail: Sequence[bool], z: Sequence[str], strata: Sequence[str], complexity: Sequence[str]
) -> FactorInformation:
    """``I(fail; z | O_r)``, ``NMI(z, g)``, ``I(fail; g)`` and ``I(fail; z | g)``.

    ``strata`` are the tasks' values of the factors already in the space, ``complexity`` the
    generic-complexity variable g (tool-count tertiles).
    """
    fails = [str(f) for f in fail]
    return FactorInformation(
        cmi_space=conditional_mutual_information(list(fail), list(z), list(strata)),
        nmi_complexity=normalised_mutual_information(list(z), list(complexity)),
        mi_fail_complexity=mutual_information(fails, list(complexity)),
        cmi_complexity=conditional_mutual_information(list(fail), list(z), list(complexity)),
        n=len(fail),
    )


def marginal_gain(
    success: Mapping[int, float], added: Mapping[int, int]
) -> dict[int, float | None]:
    """Round r -> (SR_r - SR_{r-1}) per 1K verified examples added in round r."""
    out: dict[int, float | None] = {}
    rounds = sorted(success)
    for prev, cur in itertools.pairwise(rounds):
        n = added.get(cur, 0)
        out[cur] = (success[cur] - success[prev]) / (n / 1000) if n else None
    return out


@dataclass(frozen=True)
class Control:
    """Requested-vs-realized agreement of one factor."""

    factor: str
    exact: float
    spearman: float | None
    n: int


def controllability(
    pairs: Mapping[str, Sequence[tuple[str, str]]], order: Mapping[str, Sequence[str]]
) -> list[Control]:
    """Requested-vs-realized agreement per factor.

    Exact-match share of the (requested, realized) pairs, and Spearman rho where the
    factor's values are ordered (``order`` lists them, weakest first).
    """
    out: list[Control] = []
    for factor, rows in sorted(pairs.items()):
        if not rows:
            continue
        exact = sum(a == b for a, b in rows) / len(rows)
        rho = None
        ranks = order.get(factor)
        if ranks:
            known = [(a, b) for a, b in rows if a in ranks and b in ranks]
            rho = _rho([ranks.index(a) for a, _ in known], [ranks.index(b) for _, b in known])
        out.append(Control(factor, exact, rho, len(rows)))
    return out
