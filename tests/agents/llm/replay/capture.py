"""Capture one real prompt per LLM role from an offline campaign, for ``test_replay.py``.

Runs the default offline airline campaign (every role programmatic) for two rounds in a
temporary lake, takes the state the LLM roles would have been handed there (the round-2 space
and the round-1 feedback, a round-2 direction, one blueprint per task family, a verified task)
and renders each role's prompt from it with the role's own ``prompt`` method. Writes the
records to ``inputs.json`` and each prompt to ``prompts/<case>.txt`` beside this file.

The replies under ``replies/`` were written by reading these prompts only. After a prompt
changes, run this again (``.venv/bin/python tests/agents/llm/replay/capture.py``), read the
changed prompts, and update the replies where the prompt now asks for something else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from evosyn.records import (
    Blueprint,
    Direction,
    Feedback,
    Probe,
    SynthesisSpace,
    SynthTask,
    ValueFeedback,
    Verification,
)
from evosyn.storage import Lake

HERE = Path(__file__).parent
ROOT = HERE.parents[3]
CAMPAIGN = "capture"
CONFIG = ROOT / "deployments" / "campaigns" / "airline-offline.yaml"
#: Generator cases: the task family each one grounds.
GENERATOR_CASES = {
    "generator_booking": "flight_booking",
    "generator_change": "flight_change",
    "generator_cancellation": "flight_cancellation",
    "generator_refund": "refund_or_compensation",
}


def run_campaign(lake: Path) -> None:
    """The offline campaign, two rounds of 24 blueprints, into ``lake``."""
    subprocess.run(
        [
            str(Path(sys.executable).with_name("evosyn")),
            "campaign",
            "run",
            str(CONFIG),
            "--lake",
            str(lake),
            "--campaign-id",
            CAMPAIGN,
            "--set",
            "campaign.rounds=2",
            "--set",
            "campaign.budget_per_round=24",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _writes(blueprint: Blueprint) -> int:
    bucket = (blueprint.selections.get("num_write") or ["1"])[0]
    return int(bucket.rstrip("+").split("-")[0])


def _simplest(blueprints: list[Blueprint], family: str, skip: set[str]) -> Blueprint:
    """The fulfilled ``family`` blueprint with the fewest writes, then the fewest challenges."""
    fitting = [
        b
        for b in blueprints
        if b.selections["task_family"] == [family]
        and b.selections["expected_outcome"] == ["fulfill"]
        and b.blueprint_id not in skip
    ]
    return min(fitting, key=lambda b: (_writes(b), len(b.selections["interaction_challenge"])))


def _refusal(blueprint: Blueprint) -> Blueprint:
    """A refused baggage request on ``blueprint``'s records: no write, its family kept.

    Built by hand (an offline round need not plan one): a live model declined two such
    blueprints as contradictory while the prompt said a task without writes is a loyalty one.
    """
    selections = {
        "task_family": ["seat_or_baggage_service"],
        "expected_outcome": ["refuse"],
        "policy_or_constraint_focus": ["payment_or_credit_constraint"],
        "tool_use_pattern": ["policy_check_before_action"],
        "interaction_challenge": [],
        "difficulty_profile": ["easy"],
        "num_write": ["0"],
    }
    return blueprint.model_copy(
        update={
            "blueprint_id": f"{blueprint.blueprint_id}-refusal",
            "selections": selections,
            "intent": "A airline seat or baggage service task the agent should refuse, hinging "
            "on payment or credit constraint, solved by policy check before action, with a "
            "cooperative user.",
            "difficulty_controls": {"num_write": "0"},
        }
    )


def state(lake: Lake) -> dict[str, Any]:
    """The records every case renders its prompt from."""
    spaces = {s.version: s for s in lake.read(SynthesisSpace, CAMPAIGN)}
    feedback = Feedback(
        campaign_id=CAMPAIGN,
        round=1,
        values=lake.read(ValueFeedback, CAMPAIGN, 1),
        probes=lake.read(Probe, CAMPAIGN, 1),
    )
    directions = lake.read(Direction, CAMPAIGN, 2)
    blueprints = lake.read(Blueprint, CAMPAIGN, 2)
    # The largest round-2 direction, two of its blueprints planned already.
    direction = max(directions, key=lambda d: d.budget)
    previous = [b for b in blueprints if b.direction_id == direction.direction_id][:2]
    chosen = {
        case: _simplest(blueprints, family, set()) for case, family in GENERATOR_CASES.items()
    }
    chosen["generator_refusal"] = _refusal(chosen["generator_refund"])
    used = {b.blueprint_id for b in chosen.values()}
    chosen["single_agent"] = _simplest(blueprints, "flight_cancellation", used)
    passed = {v.task_id for v in lake.read(Verification, CAMPAIGN, 2) if v.passed}
    tasks = {t.blueprint_id: t for t in lake.read(SynthTask, CAMPAIGN, 2) if t.task_id in passed}
    teacher_task = tasks[chosen["generator_cancellation"].blueprint_id]
    return {
        "space_before": spaces[1].model_dump(mode="json"),
        "space": spaces[2].model_dump(mode="json"),
        "feedback": feedback.model_dump(mode="json"),
        "direction": direction.model_dump(mode="json"),
        "previous": [b.model_dump(mode="json") for b in previous],
        "blueprints": {case: b.model_dump(mode="json") for case, b in chosen.items()},
        "teacher_task": teacher_task.model_dump(mode="json"),
    }


def main() -> None:
    """Run the campaign, write ``inputs.json`` and every case's prompt."""
    from llm_replay import CASES, Inputs

    with tempfile.TemporaryDirectory() as tmp:
        run_campaign(Path(tmp) / "lake")
        records = state(Lake(Path(tmp) / "lake"))
    (HERE / "inputs.json").write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    inputs = Inputs.load()
    prompts = HERE / "prompts"
    prompts.mkdir(exist_ok=True)
    for case in CASES:
        (prompts / f"{case.name}.txt").write_text(case.prompt(inputs) + "\n")
    print(f"captured {len(CASES)} prompts under {prompts}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[2]))  # tests/, as pytest's pythonpath
    main()
