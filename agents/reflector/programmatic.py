"""Evidence rules for revising the synthesis space.

The Reflector sees feedback records only, never the learner. Each round it reviews the
experimental factors (promote once they are covered and separate success, deprecate if the
Generator could not realize them, keep otherwise) and adds at most one new factor: a probe with
significant conditional information about failure first, else one whose failing region the
verified data barely covers. Only factors the Generator can realize are proposed.
"""

from __future__ import annotations

from collections.abc import Mapping

from evosyn.agents.generator import realizable
from evosyn.agents.reflector.base import REFLECTORS, Reflector
from evosyn.agents.reflector.evidence import failure_driven, gap_buckets
from evosyn.config import CampaignConfig
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.records import (
    Factor,
    FactorOrigin,
    FactorReview,
    FactorStatus,
    Feedback,
    Probe,
    ReflectorDecision,
    ReviewAction,
    SynthesisSpace,
)
from evosyn.space import add_factor, set_status

# A probe measured as X suggests the realizable factor Y.
PROBE_TO_FACTOR = {
    "num_write": "num_write",
    "num_read": "num_read",
    "num_numeric_args": "computation",
}
# An experimental factor separates success when its best and worst value differ this much.
SEPARATION = 0.1


class ProgrammaticReflector:
    """The embedded default Reflector.

    Args:
        realizable: Factors the Generator can honour, by name (the domain registration's);
            only these are ever proposed.
    """

    name = "programmatic"

    def __init__(self, realizable: Mapping[str, Factor] = REALIZABLE) -> None:
        self.realizable = dict(realizable)

    def reflect(
        self, space: SynthesisSpace, feedback: Feedback, round: int
    ) -> tuple[ReflectorDecision, SynthesisSpace]:
        """Review experimental factors, then add at most one realizable factor."""
        reviews, nxt = self._review(space, feedback, round)
        candidate, evidence = self._candidate(nxt, feedback.probes)
        if candidate is not None:
            nxt = add_factor(nxt, candidate, round=round + 1)
        decision = ReflectorDecision(
            campaign_id=space.campaign_id,
            round=round,
            action="add_factor" if candidate else "reallocate",
            new_factor=nxt.factor(candidate.name) if candidate else None,
            reviews=reviews,
            evidence=evidence,
            rationale=(
                f"add {candidate.name} ({candidate.origin})"
                if candidate
                else "no probe is significant, realizable and new: reallocate budget"
            ),
            next_space_version=nxt.version,
        )
        return decision, nxt

    @staticmethod
    def _review(
        space: SynthesisSpace, feedback: Feedback, round: int
    ) -> tuple[list[FactorReview], SynthesisSpace]:
        reviews = []
        nxt = space
        for factor in space.factors:
            if factor.status != FactorStatus.EXPERIMENTAL or factor.round_introduced > round:
                continue
            rows = [v for v in feedback.values if v.factor == factor.name]
            covered = sum(1 for v in rows if v.n_verified > 0)
            rates = [v.success for v in rows if v.success is not None]
            spread = max(rates) - min(rates) if len(rates) >= 2 else 0.0
            if covered == 0:
                action = ReviewAction.DEPRECATE
                why = "no verified sample realized any of its values"
            elif covered >= len(factor.values) // 2 + 1 and spread >= SEPARATION:
                action = ReviewAction.PROMOTE
                why = f"{covered}/{len(factor.values)} values covered, success spread {spread:.2f}"
            else:
                action = ReviewAction.KEEP
                why = f"{covered}/{len(factor.values)} values covered, success spread {spread:.2f}"
            reviews.append(FactorReview(factor=factor.name, action=action, evidence=why))
            status = {
                ReviewAction.PROMOTE: FactorStatus.STANDARD,
                ReviewAction.DEPRECATE: FactorStatus.DEPRECATED,
            }.get(action)
            if status is not None:
                nxt = set_status(nxt, factor.name, status, round=round + 1)
        return reviews, nxt

    def _candidate(self, space: SynthesisSpace, probes: list[Probe]) -> tuple[Factor | None, str]:
        present = {f.name for f in space.factors}
        usable = [
            p for p in probes if PROBE_TO_FACTOR.get(p.name) in self.realizable.keys() - present
        ]
        # Rank by significance, then by bias-corrected CMI (the plug-in estimate grows with a
        # probe's bucket count): a proxy that only correlates with the cause carries less
        # information about failure once the current factors are conditioned on.
        failing = sorted(
            (p for p in usable if failure_driven(p)),
            key=lambda p: (p.p_value, -(p.cmi - p.cmi_null), p.name),
        )
        if failing:
            best = failing[0]
            factor = self.realizable[PROBE_TO_FACTOR[best.name]].model_copy(
                update={"origin": FactorOrigin.FAILURE_DRIVEN}
            )
            return factor, (
                f"probe {best.name}: I(fail; probe | factors) = {best.cmi:.3f} nats "
                f"(null {best.cmi_null:.3f}), "
                f"p = {best.p_value:.3f}, failure by bucket {best.failure_rate}"
            )
        gaps: list[tuple[float, Probe, list[str]]] = []
        for p in usable:
            total = sum(p.distribution.values())
            buckets = gap_buckets(p)
            # Severity: the share of all diagnostic failures that sit in the uncovered buckets.
            mass = sum(p.distribution[b] * p.failure_rate[b] for b in buckets) / total
            if buckets:
                gaps.append((mass + (p.cmi - p.cmi_null), p, buckets))
        if gaps:
            _, p, buckets = max(gaps, key=lambda g: (g[0], g[1].name))
            factor = self.realizable[PROBE_TO_FACTOR[p.name]].model_copy(
                update={"origin": FactorOrigin.COVERAGE_GAP}
            )
            return factor, (
                f"probe {p.name}: buckets {buckets} hold diagnostic failures but almost no data "
                f"(failure by bucket {p.failure_rate}, coverage {p.coverage})"
            )
        return None, "; ".join(f"{p.name}: cmi {p.cmi:.3f}, p {p.p_value:.3f}" for p in probes)


@REFLECTORS.register("programmatic")
def _programmatic(cfg: CampaignConfig) -> Reflector:
    honoured = realizable(cfg)
    return ProgrammaticReflector(REALIZABLE if honoured is None else honoured)
