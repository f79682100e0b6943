"""Synthesis-space maths: seed spaces, revisions that make new versions, budget allocation."""

from __future__ import annotations

import math

import yaml

from evosyn.environments.registry import domain_plugin
from evosyn.records import Blueprint, Factor, FactorStatus, SynthesisSpace


def seed_space(domain: str, campaign_id: str, round: int = 0) -> SynthesisSpace:
    """The paper's initial synthesis space O_0 for ``domain``, as version 1."""
    text = domain_plugin(domain).ontology.read_text("utf-8")
    data = yaml.safe_load(text)
    factors = []
    for raw in data["factors"]:
        lo, hi = Blueprint.CARDINALITY.get(raw["name"], (1, 1))
        factors.append(Factor(min_select=lo, max_select=hi, **raw))
    return SynthesisSpace(
        campaign_id=campaign_id, round=round, domain=domain, version=1, factors=factors
    )


def add_factor(space: SynthesisSpace, factor: Factor, round: int) -> SynthesisSpace:
    """A new version of ``space`` with ``factor`` appended as an experimental factor."""
    if any(f.name == factor.name for f in space.factors):
        raise ValueError(f"factor {factor.name!r} is already in the synthesis space")
    added = factor.model_copy(
        update={"status": FactorStatus.EXPERIMENTAL, "round_introduced": round}
    )
    return space.model_copy(
        update={"version": space.version + 1, "round": round, "factors": [*space.factors, added]}
    )


def set_status(
    space: SynthesisSpace, name: str, status: FactorStatus, round: int
) -> SynthesisSpace:
    """A new version of ``space`` with factor ``name`` moved to ``status``.

    Seed factors are the fixed core of the space: they can never be deprecated (nor renamed,
    merged or removed, which no function here offers).
    """
    current = space.factor(name)
    if current.status == FactorStatus.SEED and status != FactorStatus.SEED:
        raise ValueError(f"seed factor {name!r} cannot change status")
    if current.status == status:
        return space
    factors = [
        f.model_copy(update={"status": status}) if f.name == name else f for f in space.factors
    ]
    return space.model_copy(
        update={"version": space.version + 1, "round": round, "factors": factors}
    )


def check_revision(old: SynthesisSpace, new: SynthesisSpace) -> None:
    """Raise ValueError unless ``new`` is a legal revision of ``old``.

    Legal: the version grows by one, every seed factor is still there unchanged, no factor is
    removed, and no factor's values are rewritten.
    """
    if new.version != old.version + 1:
        raise ValueError(f"revision must be version {old.version + 1}, got {new.version}")
    new_by_name = {f.name: f for f in new.factors}
    for factor in old.factors:
        kept = new_by_name.get(factor.name)
        if kept is None:
            raise ValueError(f"factor {factor.name!r} was removed; deprecate it instead")
        if kept.values != factor.values:
            raise ValueError(f"factor {factor.name!r} changed its values")
        if factor.status == FactorStatus.SEED and kept != factor:
            raise ValueError(f"seed factor {factor.name!r} was modified")


def allocate_budget(weights: list[float], total: int) -> list[int]:
    """Split ``total`` blueprints over directions in proportion to ``weights``.

    Largest-remainder rounding, ties to the earlier direction: the parts always sum to ``total``.
    """
    if total < 0:
        raise ValueError("total budget must be non-negative")
    if not weights or any(w < 0 or not math.isfinite(w) for w in weights):
        raise ValueError(
            f"weights must be a non-empty list of finite non-negative numbers: {weights}"
        )
    mass = sum(weights)
    if mass == 0:
        weights, mass = [1.0] * len(weights), float(len(weights))
    exact = [w * total / mass for w in weights]
    parts = [math.floor(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts
