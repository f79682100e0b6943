"""When a probe's measurements justify a new factor: the one rule both Reflectors apply.

A probe is failure-driven evidence when its conditional information about failure is
significant (permutation p below ``ALPHA``) and, bias-corrected, at least ``MIN_CMI`` nats; it
is coverage-gap evidence when some bucket holds an important share of the diagnostic tasks,
fails mostly, and the verified data barely covers it.
"""

from __future__ import annotations

from evosyn.agents.feedback.probes import ALPHA
from evosyn.records import FactorOrigin, Probe

# Minimum conditional information (nats) for a failure-driven addition.
MIN_CMI = 0.02
# A bucket is nearly empty below this verified share while holding this share of diagnostics.
NEARLY_EMPTY, IMPORTANT = 0.03, 0.1


def failure_driven(probe: Probe) -> bool:
    """Whether ``probe`` goes with failure beyond the current factors, significantly."""
    return probe.p_value < ALPHA and probe.cmi - probe.cmi_null >= MIN_CMI


def gap_buckets(probe: Probe) -> list[str]:
    """Buckets of ``probe`` that hold many diagnostic failures and almost no verified data."""
    total = sum(probe.distribution.values())
    if not total:
        return []
    return [
        b
        for b, n in probe.distribution.items()
        if n / total >= IMPORTANT
        and probe.coverage.get(b, 0.0) < NEARLY_EMPTY
        and probe.failure_rate.get(b, 0.0) > 0.5
    ]


def verdict(probe: Probe) -> tuple[FactorOrigin | None, str]:
    """The kind of evidence ``probe`` is (None: neither kind), and its figures in words."""
    figures = (
        f"probe {probe.name}: I(fail; probe | factors) = {probe.cmi:.3f} nats "
        f"(null {probe.cmi_null:.3f}), p = {probe.p_value:.3f}, "
        f"failure by value {_rounded(probe.failure_rate)}, "
        f"coverage {_rounded(probe.coverage)}"
    )
    if failure_driven(probe):
        return FactorOrigin.FAILURE_DRIVEN, figures
    gaps = gap_buckets(probe)
    if gaps:
        return FactorOrigin.COVERAGE_GAP, f"{figures}; uncovered failing values {gaps}"
    return None, (
        f"{figures}; not significant (needs p < {ALPHA} and CMI above its null by "
        f"{MIN_CMI} nats) and no failing value the data leaves uncovered"
    )


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in values.items()}
