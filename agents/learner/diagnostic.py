"""The diagnostic set: the domain's official ``train`` split plus held-out synthesized tasks."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

from evosyn.agents.learner.base import DiagnosticItem
from evosyn.buckets import difficulty_of
from evosyn.environments import DIAGNOSTIC_SPLIT, TEST_SPLIT, get_domain
from evosyn.environments.features import RealizedFeatures, realized_features
from evosyn.environments.tau2_data import known_bad
from evosyn.environments.trajectories import gold_trajectory
from evosyn.records import Verification

# Share of each round's verified tasks held out as diagnostics and never trained on.
HELD_OUT_SHARE = 0.2
#: Prefix of the ids of the domain's official tasks among evaluated ones.
OFFICIAL = "official:"


def realized_values(features: RealizedFeatures) -> dict[str, str]:
    """Realized factor values of a trajectory, including its difficulty by tool-call count."""
    return features.as_values() | {"difficulty_profile": difficulty_of(features.num_tool_calls)}


def official_diagnostic(domain_name: str) -> tuple[DiagnosticItem, ...]:
    """The official diagnostic tasks with the realized properties of their gold trajectories."""
    return official_items(domain_name, DIAGNOSTIC_SPLIT, "diagnostic")


def official_test(domain_name: str) -> tuple[DiagnosticItem, ...]:
    """The official test tasks with the realized properties of their gold trajectories."""
    return official_items(domain_name, TEST_SPLIT, "test")


@functools.cache
def official_items(domain_name: str, split: str, label: str) -> tuple[DiagnosticItem, ...]:
    """The domain's official tasks of ``split`` as items labelled ``label``.

    Each carries the realized properties of its gold trajectory, so a simulated learner's
    weaknesses apply to official tasks as to synthesized ones. The domain's known-bad tasks
    (gold that cannot score 1: ``evosyn env verify`` lists them with the reason) are left out:
    no learner could succeed on them.
    """
    domain = get_domain(domain_name)
    bad = known_bad(domain_name)
    items = []
    for task in domain.tasks(split):
        if task.id in bad:
            continue
        features = realized_features(domain, gold_trajectory(domain, task))
        items.append(
            DiagnosticItem(
                task_id=f"{OFFICIAL}{task.id}", split=label, realized=realized_values(features)
            )
        )
    return tuple(items)


def is_official(task_id: str) -> bool:
    """Whether an evaluated task (or one trial of it, ``TASK#trialK``) is an official task."""
    return task_id.startswith(OFFICIAL)


def is_held_out(task_id: str) -> bool:
    """Whether a synthesized task is held out (a stable hash, so resumes agree)."""
    digest = hashlib.sha256(task_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < HELD_OUT_SHARE


def split_verified(
    verified: Sequence[Verification],
) -> tuple[list[Verification], list[DiagnosticItem]]:
    """Passed verifications split into training data and held-out diagnostic items."""
    train, held = [], []
    for v in verified:
        if not v.passed:
            continue
        if is_held_out(v.task_id):
            held.append(DiagnosticItem(task_id=v.task_id, split="diagnostic", realized=v.realized))
        else:
            train.append(v)
    return train, held
