"""Task shapes read from gold: official tasks against themselves, and edited copies."""

from __future__ import annotations

from tau2.data_model.tasks import Action

from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.registry import get_domain
from evosyn.environments.shapes import (
    NO_WRITE,
    combination_name,
    coverage,
    official_shapes,
    task_shapes,
    write_combination,
)
from evosyn.environments.telecom.faults import ACCOUNT_FAULTS, FAULTS, fault_kinds


def test_official_tasks_cover_their_own_shapes() -> None:
    for domain in ("airline", "retail", "telecom"):
        official = get_domain(domain).tasks("base")
        covered = coverage(domain, official)
        assert covered.tasks == covered.official_tasks == len(official)
        counts = covered.write_combinations
        assert counts.synthesized == counts.official == counts.made > 0
        assert counts.never_made == [] and covered.tools_never_made == []
        assert covered.multi_write == covered.official_multi_write


def test_nothing_synthesized_leaves_every_official_shape_unmade() -> None:
    official = official_shapes("telecom")
    covered = coverage("telecom", [])
    names = sorted(combination_name(c) for c in official.combinations)
    assert covered.write_combinations.never_made == names
    assert covered.write_combinations.made == covered.write_combinations.synthesized == 0
    assert covered.fault_kinds is not None and covered.device_tool_sets is not None
    assert covered.fault_kinds.never_made == sorted(official.fault_kinds)
    assert covered.device_tool_sets.official == len(official.device_sets)
    # Airline has no user device and no fault kinds: those figures are left out.
    bare = coverage("airline", [])
    assert bare.device_tool_sets is None and bare.fault_kinds is None


def test_shapes_follow_the_gold_writes() -> None:
    env = get_domain("retail")
    task = next(t for t in env.tasks("base") if len(write_combination("retail", t)) == 1)
    (write,) = write_combination("retail", task)
    assert task_shapes("retail", [task]).multi_write == 0
    extra = next(
        s.name
        for s in env.tool_specs("assistant")
        if s.symbol == FunctionalSymbol.WRITE and s.name != write
    )
    criteria = task.evaluation_criteria
    assert criteria is not None and criteria.actions
    more = task.model_copy(
        update={
            "evaluation_criteria": criteria.model_copy(
                update={
                    "actions": [
                        *criteria.actions,
                        Action(action_id="x", name=extra, arguments={}, requestor="assistant"),
                    ]
                }
            )
        }
    )
    assert write_combination("retail", more) == {write, extra}
    shapes = task_shapes("retail", [task, more])
    assert shapes.multi_write == 1 and len(shapes.combinations) == 2
    bare = more.model_copy(
        update={"evaluation_criteria": criteria.model_copy(update={"actions": []})}
    )
    assert combination_name(write_combination("retail", bare)) == NO_WRITE


def test_telecom_kinds_and_troubleshooting_are_read_from_the_set_up() -> None:
    official = get_domain("telecom").tasks("base")
    shapes = task_shapes("telecom", official)
    expected: dict[str, int] = {}
    for task in official:
        for kind in fault_kinds(task):
            expected[kind] = expected.get(kind, 0) + 1
    assert dict(shapes.fault_kinds) == expected
    troubling = set(FAULTS) | set(ACCOUNT_FAULTS)
    assert shapes.troubleshooting == sum(bool(set(fault_kinds(t)) & troubling) for t in official)
    users = [a for t in official for a in (t.evaluation_criteria.actions or [])]
    assert shapes.device_actions == sum(a.requestor == "user" for a in users)
