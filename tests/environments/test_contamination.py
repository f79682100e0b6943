"""Decontamination against official τ²-bench tasks: writes, write sets, near-duplicate text."""

from __future__ import annotations

import os
import subprocess
import sys

from tau2.data_model.tasks import Action, Task

from evosyn.environments import get_domain
from evosyn.environments.contamination import (
    NearDuplicates,
    contamination_reason,
    gold_writes,
    official_index,
)


def _official_with_writes(domain: str) -> Task:
    return next(t for t in get_domain(domain).tasks() if gold_writes(get_domain(domain), t))


def _edited(task: Task, **changes: object) -> Task:
    return task.model_copy(update={"id": "synth-1", **changes}, deep=True)


def test_every_official_task_is_caught() -> None:
    for domain in ("airline", "retail"):
        assert all(contamination_reason(t, domain) for t in get_domain(domain).tasks())


def test_an_extra_lookup_does_not_hide_an_official_gold_write() -> None:
    official = _official_with_writes("airline")
    criteria = official.evaluation_criteria
    assert criteria is not None
    extra = Action(action_id="x", name="get_user_details", arguments={"user_id": "mia_li_3668"})
    calc = Action(action_id="y", name="calculate", arguments={"expression": "1 + 1"})
    copy = _edited(
        official,
        evaluation_criteria=criteria.model_copy(
            update={"actions": [extra, calc, *criteria.actions]}
        ),
        user_scenario=official.user_scenario.model_copy(
            update={"instructions": "Something else entirely, worded from scratch."}
        ),
    )
    reason = official_index("airline").reason(copy)
    assert reason is not None and official.id in reason
    assert reason.startswith(("gold write", "write set"))


def test_one_shared_gold_write_among_new_ones_is_caught() -> None:
    official = _official_with_writes("retail")
    criteria = official.evaluation_criteria
    assert criteria is not None
    write = next(
        a for a in criteria.actions if gold_writes(get_domain("retail"), _only(official, a))
    )
    other = Action(
        action_id="z",
        name="cancel_pending_order",
        arguments={"order_id": "#W0000000", "reason": "no longer needed"},
    )
    copy = _edited(
        official,
        evaluation_criteria=criteria.model_copy(update={"actions": [write, other]}),
        user_scenario=official.user_scenario.model_copy(update={"instructions": "New words."}),
    )
    reason = official_index("retail").reason(copy)
    assert reason is not None and reason.startswith("gold write")


def _only(task: Task, action: Action) -> Task:
    criteria = task.evaluation_criteria
    assert criteria is not None
    return task.model_copy(
        update={"evaluation_criteria": criteria.model_copy(update={"actions": [action]})}
    )


def test_a_fresh_task_is_clean_and_near_duplicate_wording_is_not() -> None:
    official = _official_with_writes("airline")
    fresh = _edited(
        official,
        evaluation_criteria=None,
        user_scenario=official.user_scenario.model_copy(
            update={"instructions": "You want to know the weather in Paris tomorrow morning."}
        ),
    )
    assert official_index("airline").reason(fresh) is None
    reworded = _edited(fresh, user_scenario=official.user_scenario)
    reason = official_index("airline").reason(reworded)
    assert reason is not None and reason.startswith("instructions near-duplicate")


def test_near_duplicates_threshold() -> None:
    index = NearDuplicates(0.8)
    base = "You want to cancel your trip from Boston to Denver because your plans changed today"
    index.add("a", base)
    assert index.match(base.replace("today", "now")) is not None
    assert index.match("You would like to add two checked bags to your reservation") is None


def test_near_duplicates_break_ties_the_same_way_whatever_the_hash_seed() -> None:
    # Equal texts tie; the named match must not follow the set order of the process's hash seed.
    script = (
        "from evosyn.environments.contamination import NearDuplicates\n"
        "index = NearDuplicates(0.8)\n"
        "for key in ['k7', 'k3', 'k9', 'k1', 'k5', 'k8', 'k2']:\n"
        "    index.add(key, 'You want a refund for the cancelled flight to Denver, in full')\n"
        "print(index.match('You want a refund for the cancelled flight to Denver, in full'))\n"
    )
    named = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split(",")[0]
        for seed in range(3)
    }
    assert named == {"('k1'"}
