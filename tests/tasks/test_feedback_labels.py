"""The round's feedback step labels the official diagnostic tasks for an invented factor.

A factor the Reflector invented (``writes``: whether the gold tool calls change the database)
has no computed value on the official diagnostic tasks. The feedback step asks the labeller
for it, over HTTP to a scripted server that reads the gold calls as a labeller model would,
so the per-value success counts the official tasks; a resumed step relabels nothing, and the
next round's identical labelling is answered from the campaign's response cache.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import RoutedServer
from openai_server import Reply
from tau2.data_model.tasks import Task

from evosyn.agents.labeller import official_tasks
from evosyn.agents.learner.diagnostic import official_diagnostic
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.records import (
    EvalResult,
    Factor,
    FactorOrigin,
    FactorStatus,
    LLMCall,
    SynthesisSpace,
    SynthTask,
    Verification,
)
from evosyn.space import add_factor, seed_space
from evosyn.storage import Lake
from evosyn.tasks.learning import feedback_of

CID = "labelled"
WRITES = Factor(
    name="writes",
    values=["none", "some"],
    definition="Whether any gold tool call changes the database: none, or some.",
    status=FactorStatus.EXPERIMENTAL,
    origin=FactorOrigin.FAILURE_DRIVEN,
)
WRITE_TOOLS = {
    s.name
    for s in get_domain("airline").tool_specs("assistant")
    if s.symbol == FunctionalSymbol.WRITE
}
_CASE = re.compile(r"^## (task \d+)\n(.*?)(?=^## task |\n# Decision rules)", re.M | re.S)
_CALL = re.compile(r"^  \d+\. (\w+)\(", re.M)


def label(body: dict[str, Any]) -> Reply:
    """A labeller that reads ``writes`` off each task's gold calls."""
    prompt = body["messages"][-1]["content"]
    assert prompt.startswith("You are the Labeller")
    labels = [
        {
            "task": key,
            "value": "some" if any(c in WRITE_TOOLS for c in _CALL.findall(text)) else "none",
        }
        for key, text in _CASE.findall(prompt)
    ]
    return Reply.text(json.dumps({"labels": labels}))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoutedServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with RoutedServer(label) as srv:
        yield srv


def config(server: RoutedServer, tmp_path: Path) -> CampaignConfig:
    """A campaign whose labeller (the Reflector's model) runs on ``server``, cache on."""
    llm = LLMSection(
        default=ModelSettings(
            model="openai/reflector-model",
            api_base=server.url,
            timeout=5.0,
            backoff_base_s=0.01,
            cache_dir=str(tmp_path / "cache"),
        )
    )
    return CampaignConfig.model_validate(
        {
            "campaign": {"name": CID, "id": CID, "seed": 0},
            "lake": {"root": str(tmp_path / "lake")},
            "llm": llm.model_dump(),
        }
    )


def results(round: int) -> list[EvalResult]:
    """The learner's results on the official diagnostic tasks: it fails every write."""
    return [
        EvalResult(
            campaign_id=CID,
            round=round,
            training_id=f"t{round}",
            task_id=item.task_id,
            split="diagnostic",
            success=item.realized["num_write"] == "0",
            reward=0.0,
            realized=dict(item.realized),
        )
        for item in official_diagnostic("airline")
    ]


def test_official_diagnostic_tasks_are_labelled_once_and_counted(
    server: RoutedServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    space = add_factor(seed_space("airline", CID), WRITES, round=2)
    evaluations = results(1)
    fb = feedback_of.fn(cfg, space, evaluations, None, 1)

    by_value = {v.value: v for v in fb.values if v.factor == "writes"}
    assert sum(v.n_diagnostic for v in by_value.values()) == len(evaluations) == 30
    # The labels follow the gold calls, and so does the learner's success on them.
    assert by_value["none"].success == 1.0 and by_value["some"].success == 0.0
    writes = sum(e.realized["num_write"] != "0" for e in evaluations)
    assert by_value["some"].n_diagnostic == writes
    # 30 tasks, 8 to a call; every call is accounted to the round's labeller.
    assert server.request_count == 4
    lake = Lake(tmp_path / "lake")
    rows = [r for r in lake.read(LLMCall, CID, 1) if r.role == "labeller"]
    assert len(rows) == 4 and {r.outcome for r in rows} == {"ok"}

    # Resumed, the stored feedback is read back and nothing is labelled again.
    again = feedback_of.fn(cfg, space, evaluations, None, 1)
    assert server.request_count == 4
    assert {(v.factor, v.value): v.success for v in again.values} == {
        (v.factor, v.value): v.success for v in fb.values
    }

    # The next round sends the same batches: the campaign's cache answers them.
    later = feedback_of.fn(cfg, space, results(2), fb, 2)
    assert server.request_count == 4
    assert {v.value: v.n_diagnostic for v in later.values if v.factor == "writes"} == {
        v: by_value[v].n_diagnostic for v in by_value
    }


def test_a_space_without_an_invented_factor_asks_no_labeller(
    server: RoutedServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    space: SynthesisSpace = seed_space("airline", CID)
    fb = feedback_of.fn(cfg, space, results(1), None, 1)
    assert fb.values and server.request_count == 0


def _made(round: int, task_id: str, gold: Task, requested: dict[str, list[str]]) -> SynthTask:
    return SynthTask(
        campaign_id=CID,
        round=round,
        task_id=task_id,
        blueprint_id=f"bp-{task_id}",
        domain="airline",
        task=gold.model_copy(update={"id": task_id}),
        requested=requested,
    )


def _verdict(task: SynthTask, passed: bool) -> Verification:
    return Verification(
        campaign_id=CID,
        round=task.round,
        task_id=task.task_id,
        trajectory_id=f"{task.task_id}-traj0",
        passed=passed,
        reward=float(passed),
    )


def test_data_made_before_the_factor_covers_the_value_the_labeller_reads(
    server: RoutedServer, tmp_path: Path
) -> None:
    # Live: the probe read 4 of round 1's verified tasks as `derived`, and round 2's feedback
    # still told the Designer `derived` had no verified data, as no blueprint had asked for it.
    cfg = config(server, tmp_path)
    gold = official_tasks("airline").values()
    writing = next(
        t for t in gold if any(a.name in WRITE_TOOLS for a in t.evaluation_criteria.actions or [])
    )
    reading = next(t for t in gold if not t.evaluation_criteria.actions)
    family = {"task_family": ["flight_booking"]}
    earlier = [_made(1, "r1-a", writing, family), _made(1, "r1-b", reading, family)]
    stated = _made(2, "r2-a", reading, family | {"writes": ["some"]})  # as its blueprint asked
    rejected = _made(1, "r1-c", writing, family)
    lake = Lake(tmp_path / "lake")
    for task, passed in [(earlier[0], True), (earlier[1], True), (stated, True), (rejected, False)]:
        lake.write([task], batch=task.task_id)
        lake.write([_verdict(task, passed)], batch=task.task_id)

    space = add_factor(seed_space("airline", CID), WRITES, round=2)
    fb = feedback_of.fn(cfg, space, results(2), None, 2)

    by_value = {v.value: v.n_verified for v in fb.values if v.factor == "writes"}
    assert by_value == {"some": 2, "none": 1}
    # 4 calls for the official tasks, one for the two verified tasks made without a value; the
    # task stated as requested and the rejected one are not asked about.
    assert server.request_count == 5
    last = server.requests[-1].body["messages"][-1]["content"]
    assert len(_CASE.findall(last)) == 2
