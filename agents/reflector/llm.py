"""The Reflector as an LLM agent: one model call audits the space against learner feedback.

The prompt (``reflector.j2``) is the paper's audit package: the current space with each
factor's status and origin, the per-value coverage and learner-success report, the diagnostic
probes, the experimental factors to review, the factors the Generator can realize, and this
Reflector's earlier decisions. The reply is parsed into a ``ReflectorDecision`` and the next
space: reviews may promote, keep or deprecate experimental factors only, and at most one new
factor may be added, with a new name, 2-6 values and (when the Generator is programmatic) one
of the realizable factors with exactly its values. With a Generator that may be asked for any
factor (the LLM one), the model may also invent a factor no programmatic feature computes,
with a definition; it then also reads the round's most-failed diagnostic tasks, and some it
passed, as text (a property no probe measures shows only there). The labeller then reads its
value off every diagnostic and verified task, and the probe of those labels
(:mod:`~evosyn.agents.reflector.invented`) keeps it, as failure-driven or coverage-gap
evidence, or drops it, the decision recording which and why.
Renaming, merging, deleting or redefining a factor, or touching a seed factor, is invalid
output. An invalid reply gets one repair turn quoting the error; a reply still invalid is
rejected: the space stays as it is, and the decision record (table ``reflections``) says so
and why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from evosyn.agents.feedback.probes import FEATURES, is_labelled
from evosyn.agents.gateway import Gateway, LLMError
from evosyn.agents.generator import realizable
from evosyn.agents.labeller import InputsSource, LLMLabeller, lake_inputs
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.prompt_context import (
    factor_cards,
    feedback_legend,
    feedback_rows,
    render,
    without_internal_errors,
)
from evosyn.agents.reflector.base import REFLECTORS, Reflector
from evosyn.agents.reflector.invented import failure_cases, try_factor
from evosyn.agents.reflector.programmatic import SEPARATION
from evosyn.config import CampaignConfig
from evosyn.records import (
    Factor,
    FactorOrigin,
    FactorReview,
    FactorStatus,
    Feedback,
    ReflectorDecision,
    ReviewAction,
    SynthesisSpace,
)
from evosyn.space import add_factor, set_status

logger = logging.getLogger(__name__)

ROLE = "reflector"
TEMPLATES = Path(__file__).parent
# A new factor's value count: low-cardinality, as the paper asks.
MIN_VALUES, MAX_VALUES = 2, 6
# Actions that would rewrite the existing space rather than extend it.
FORBIDDEN_ACTIONS = frozenset(
    {"rename", "merge", "delete", "remove", "add_value", "modify", "redefine", "replace"}
)


class ReviewOutput(BaseModel):
    """One review as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    factor: str = Field(description="Reviewed experimental factor.")
    decision: Literal["promote", "keep", "deprecate"] = Field(description="What to do with it.")
    evidence: str = Field(default="", description="Measurements behind the decision.")


class ProposalOutput(BaseModel):
    """The proposed change of the space as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    action: str = Field(description="no_change or add_factor.")
    name: str | None = Field(default=None, description="New factor name.")
    values: list[str] | None = Field(default=None, description="New factor values.")
    guidance: str = Field(default="", description="How a value shapes a task.")
    definition: str | None = Field(
        default=None, description="What an invented factor measures and how values differ."
    )
    origin: Literal["failure_driven", "coverage_gap"] | None = Field(
        default=None, description="Kind of evidence."
    )
    evidence: str = Field(default="", description="Measurements behind it.")


class ReflectionOutput(BaseModel):
    """The whole reply of the Reflector."""

    model_config = ConfigDict(extra="forbid")

    reviews: list[ReviewOutput] = Field(default_factory=list)
    proposal: ProposalOutput
    summary: str = Field(default="")


class Reflection(NamedTuple):
    """A parsed reply: the decision, the space it leads to, and that space before any addition."""

    decision: ReflectorDecision
    space: SynthesisSpace
    reviewed: SynthesisSpace


def parse_reflection(
    data: dict[str, Any],
    space: SynthesisSpace,
    round: int,
    realizable: Mapping[str, Factor] | None = None,
) -> Reflection:
    """The decision in ``data`` and the space it leads to, validated against ``space``.

    Raises:
        ValueError: naming the factor, review or proposal that is not allowed.
    """
    output = ReflectionOutput.model_validate(data)
    by_name = {f.name: f for f in space.factors}
    reviews: list[FactorReview] = []
    nxt = space
    seen: set[str] = set()
    for review in output.reviews:
        factor = by_name.get(review.factor)
        if factor is None:
            raise ValueError(f"review of {review.factor!r}, which is not a factor of the space")
        if factor.status != FactorStatus.EXPERIMENTAL:
            raise ValueError(
                f"review of {factor.name!r}, a {factor.status.value} factor: only experimental "
                "factors are reviewed, and seed factors never change"
            )
        if factor.name in seen:
            raise ValueError(f"{factor.name!r} is reviewed twice")
        seen.add(factor.name)
        action = ReviewAction(review.decision)
        reviews.append(FactorReview(factor=factor.name, action=action, evidence=review.evidence))
        status = {
            ReviewAction.PROMOTE: FactorStatus.STANDARD,
            ReviewAction.DEPRECATE: FactorStatus.DEPRECATED,
        }.get(action)
        if status is not None:
            nxt = set_status(nxt, factor.name, status, round=round + 1)
    proposal = output.proposal
    action_name = proposal.action.strip().lower()
    if action_name in FORBIDDEN_ACTIONS:
        raise ValueError(
            f"proposal action {proposal.action!r} is not allowed: existing factors are never "
            "renamed, merged, deleted or redefined (use no_change or add_factor)"
        )
    if action_name not in ("no_change", "add_factor"):
        raise ValueError(f"proposal action {proposal.action!r} must be no_change or add_factor")
    new: Factor | None = None
    reviewed = nxt
    if action_name == "add_factor":
        new = _new_factor(proposal, space, realizable)
        nxt = add_factor(nxt, new, round=round + 1)
    _check_kept(space, nxt)
    decision = ReflectorDecision(
        campaign_id=space.campaign_id,
        round=round,
        action="add_factor" if new else "reallocate",
        new_factor=nxt.factor(new.name) if new else None,
        reviews=reviews,
        evidence=proposal.evidence,
        rationale=output.summary or (f"add {new.name}" if new else "no change to the space"),
        next_space_version=nxt.version,
    )
    return Reflection(decision, nxt, reviewed)


def _new_factor(
    proposal: ProposalOutput, space: SynthesisSpace, realizable: Mapping[str, Factor] | None
) -> Factor:
    name, values = (proposal.name or "").strip(), list(proposal.values or [])
    if not name:
        raise ValueError("add_factor needs the new factor's name")
    if name in {f.name for f in space.factors}:
        raise ValueError(
            f"factor {name!r} is already in the space: existing factors are never redefined"
        )
    if not MIN_VALUES <= len(values) <= MAX_VALUES:
        raise ValueError(
            f"new factor {name!r} has {len(values)} values; it needs {MIN_VALUES} to {MAX_VALUES}"
        )
    if proposal.origin is None:
        raise ValueError("add_factor needs origin: failure_driven or coverage_gap")
    if realizable is not None:
        known = realizable.get(name)
        if known is None:
            raise ValueError(
                f"new factor {name!r} cannot be realized by the Generator; choose one of "
                f"{sorted(realizable)}"
            )
        if values != known.values:
            raise ValueError(f"new factor {name!r} must have the values {known.values}")
    guidance = proposal.guidance or (realizable[name].guidance if realizable else "")
    # A menu factor is defined by the feature that computes it; only an invented one by words.
    definition = (proposal.definition or "").strip() if realizable is None else ""
    try:
        factor = Factor(
            name=name,
            values=values,
            guidance=guidance,
            origin=FactorOrigin(proposal.origin),
            definition=definition,
        )
    except ValueError as exc:
        raise ValueError(f"new factor {name!r} is not a valid factor: {exc}") from None
    if realizable is None and not definition and name not in FEATURES:
        raise ValueError(
            f"new factor {name!r} is computed by no feature: give its definition (what it "
            "measures on a task and how its values differ), so each task's value can be labelled"
        )
    return factor


def _check_kept(old: SynthesisSpace, new: SynthesisSpace) -> None:
    # The operations above cannot break this; the check keeps it so if they ever change.
    kept = {f.name: f for f in new.factors}
    for factor in old.factors:
        now = kept.get(factor.name)
        if now is None or now.values != factor.values:
            raise ValueError(f"factor {factor.name!r} would be removed or redefined")
        if factor.status == FactorStatus.SEED and now != factor:
            raise ValueError(f"seed factor {factor.name!r} would change")


def probe_rows(feedback: Feedback) -> list[dict[str, Any]]:
    """The probe report, compact and rounded, for the prompt."""
    rows = []
    for p in feedback.probes:
        row: dict[str, Any] = {
            "probe": p.name,
            "distribution": p.distribution,
            "failure_rate": {k: round(v, 3) for k, v in p.failure_rate.items()},
            "coverage": {k: round(v, 3) for k, v in p.coverage.items()},
            "cmi_nats": round(p.cmi, 4),
            "cmi_null": round(p.cmi_null, 4),
            "p_value": round(p.p_value, 4),
        }
        if p.suggested is not None:
            row["suggested_factor"] = {"name": p.suggested.name, "values": p.suggested.values}
        rows.append(row)
    return rows


class LLMReflector:
    """The Reflector as one model call per round.

    Args:
        gateway: Gateway of role ``reflector``.
        domain: Domain name (shown in the prompt).
        realizable: Factors the Generator can honour, by name; a new factor must be one of
            them with exactly its values. None: any well-formed new factor (an LLM Generator).
        labeller: Labels each task's value of an invented factor; None: invented factors
            are dropped, since nothing can measure them.
        inputs: Reads the records the probe of an invented factor needs, by campaign and round.
        seed: Seed of the probe's permutation test.
    """

    name = "llm"

    def __init__(
        self,
        gateway: Gateway,
        domain: str = "airline",
        realizable: Mapping[str, Factor] | None = None,
        *,
        labeller: LLMLabeller | None = None,
        inputs: InputsSource | None = None,
        seed: int = 0,
    ) -> None:
        self.gateway = gateway
        self.domain = domain
        self.realizable = dict(realizable) if realizable is not None else None
        self.labeller = labeller
        self.inputs = inputs
        self.seed = seed
        self.gateways: list[Gateway] = [gateway, *(labeller.gateways if labeller else [])]
        self._history: list[str] = []

    @classmethod
    def from_config(
        cls, cfg: CampaignConfig, realizable: Mapping[str, Factor] | None = None
    ) -> LLMReflector:
        """The Reflector of a campaign: role ``reflector`` of its ``llm`` section.

        With a Generator that may be asked for any factor (``realizable`` None), it invents
        factors too: its labeller is the campaign's, and the probe reads the campaign's lake.
        """
        gateway = Gateway.from_config(cfg.llm, ROLE, seed=cfg.campaign.seed)
        if realizable is not None:
            return cls(gateway, cfg.campaign.domain, realizable)
        lake = cfg.lake
        return cls(
            gateway,
            cfg.campaign.domain,
            None,
            labeller=LLMLabeller.from_config(cfg),
            inputs=lake_inputs(lake.root, cfg.campaign.domain, lake.s3_endpoint, lake.cache_dir),
            seed=cfg.campaign.seed,
        )

    def prompt(self, space: SynthesisSpace, feedback: Feedback, round: int) -> str:
        """The audit package of ``round``."""
        cards = factor_cards(space)
        rows = feedback_rows(feedback)
        present = {f.name for f in space.factors}
        invents = self.realizable is None and self.labeller is not None
        return render(
            TEMPLATES,
            "reflector.j2",
            domain=self.domain,
            round=round,
            version=space.version,
            cards=cards,
            feedback=rows,
            legend=feedback_legend(rows),
            probes=probe_rows(feedback),
            experimental=[
                c
                for c in cards
                if c["status"] == FactorStatus.EXPERIMENTAL.value and c["round_introduced"] <= round
            ],
            realizable=[f for n, f in sorted((self.realizable or {}).items()) if n not in present],
            history=self._history[-5:],
            invents=invents,
            separation=SEPARATION,
            cases=(
                failure_cases(self.inputs(space.campaign_id, round))
                if invents and self.inputs is not None
                else []
            ),
        )

    def reflect(
        self, space: SynthesisSpace, feedback: Feedback, round: int
    ) -> tuple[ReflectorDecision, SynthesisSpace]:
        """The model's decision; on rejection, no change, with the reason in the decision."""
        try:
            decision, nxt, reviewed = ask_json(
                self.gateway,
                self.prompt(space, feedback, round),
                lambda data: parse_reflection(data, space, round, self.realizable),
                seed=round,
            )
            if decision.new_factor is not None and is_labelled(decision.new_factor):
                decision, nxt = self._probed(decision, space, nxt, reviewed, round)
        except (OutputRejected, LLMError) as exc:
            reason = (
                exc.reason
                if isinstance(exc, OutputRejected)
                else f"model call failed: {exc.error_class} after {exc.attempts} attempt(s)"
            )
            logger.warning("reflector output rejected after round %d: %s", round, reason)
            decision = ReflectorDecision(
                campaign_id=space.campaign_id,
                round=round,
                action="reallocate",
                rationale=f"llm reflector output rejected ({reason}); the space is unchanged",
                next_space_version=space.version,
            )
            nxt = space
        shown = without_internal_errors(decision.rationale)
        self._history.append(f"round {round}: {decision.action} - {shown}"[:300])
        return decision, nxt

    def _probed(
        self,
        decision: ReflectorDecision,
        space: SynthesisSpace,
        grown: SynthesisSpace,
        reviewed: SynthesisSpace,
        round: int,
    ) -> tuple[ReflectorDecision, SynthesisSpace]:
        """``decision`` once its invented factor is labelled and probed: kept or dropped.

        Kept, the factor's origin is the evidence the probe found (not the one the model
        claimed); dropped, the next space is ``reviewed`` (the reviews without the addition).
        Either way the decision carries the probe it rests on, if one was measured.
        """
        factor = decision.new_factor
        assert factor is not None
        probe = None
        if self.labeller is None or self.inputs is None:
            origin, evidence = None, "no labeller is configured, so nothing can measure it"
        else:
            trial = try_factor(
                factor,
                space,
                self.inputs(space.campaign_id, round),
                self.labeller,
                round,
                self.seed,
            )
            origin, evidence, probe = trial.origin, trial.evidence, trial.probe
        claimed = f"{decision.evidence}; " if decision.evidence else ""
        if origin is None:
            logger.info(
                "invented factor %s dropped after round %d: %s", factor.name, round, evidence
            )
            return _revised(
                decision,
                {
                    "action": "reallocate",
                    "new_factor": None,
                    "dropped_factor": factor,
                    "probe": probe,
                    "evidence": f"{claimed}probe of the labelled values: {evidence}",
                    "rationale": f"proposed {factor.name}, dropped: the probe does not support it "
                    f"({evidence})",
                    "next_space_version": reviewed.version,
                },
            ), reviewed
        kept = grown.model_copy(
            update={
                "factors": [
                    f.model_copy(update={"origin": origin}) if f.name == factor.name else f
                    for f in grown.factors
                ]
            }
        )
        return _revised(
            decision,
            {
                "new_factor": kept.factor(factor.name),
                "probe": probe,
                "evidence": f"{claimed}probe of the labelled values: {evidence}",
                "rationale": f"add {factor.name} ({origin.value}), kept by its probe: {evidence}",
            },
        ), kept


def _revised(decision: ReflectorDecision, update: dict[str, Any]) -> ReflectorDecision:
    # Validated again (model_copy would not): a dropped factor must leave no new_factor.
    return ReflectorDecision.model_validate({**dict(decision), **update})


@REFLECTORS.register("llm")
def _llm(cfg: CampaignConfig) -> Reflector:
    return LLMReflector.from_config(cfg, realizable(cfg))
