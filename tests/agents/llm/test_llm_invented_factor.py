"""A round through the loop's tasks in which the LLM Reflector invents a factor.

Every role runs on ``llm`` against the routed test server (``tests/llm_scripts.py``); the
Reflector's model proposes ``state_changes``, a factor outside the menu, with a definition, and
answers the labeller's calls (the labeller runs on the Reflector's model) by reading each
task's gold tool calls as the definition says. The simulated learner is weak on tasks with many
writes, so a labelling that reads writes finds the weakness and the factor is kept; a labelling
by something unrelated finds nothing and the factor is dropped. The labels are of the campaign
lake's own diagnostic results (the official tasks and the held-out synthesized ones).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import RoutedServer, Scripted, ScriptedModel, realizable_pool, role_of, run_round

from evosyn.config import CampaignConfig, LearnerSection
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.records import (
    FactorOrigin,
    Feedback,
    LLMCall,
    Probe,
    ReflectorDecision,
    SynthesisSpace,
    ValueFeedback,
)
from evosyn.space import seed_space
from evosyn.tasks.loop import decision_of, design

CID = "llm-e2e"
DEFINITION = (
    "How many of the gold tool calls change the database (book, cancel, update, send): few "
    "for two or fewer, many for three or more."
)
WRITES = {
    s.name
    for s in get_domain("airline").tool_specs("assistant")
    if s.symbol == FunctionalSymbol.WRITE
}
_CASE = re.compile(r"^## (task \d+)\n(.*?)(?=^## task |\n# Decision rules)", re.M | re.S)
_CALL = re.compile(r"^  \d+\. (\w+)\(", re.M)


class InventingModel(ScriptedModel):
    """The scripted models, with a Reflector that invents ``state_changes`` and labels it.

    ``reads_writes``: the labeller reads the definition (counts write calls); otherwise it
    labels by whether the task's text has an even length, which no learner failure follows.
    """

    def __init__(self, *args: Any, reads_writes: bool, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.reads_writes = reads_writes
        self.labelled = 0

    def _reflector(self, prompt: str) -> dict[str, Any]:
        if prompt.startswith("You are the Labeller"):
            cases = _CASE.findall(prompt)
            self.labelled += len(cases)
            return {"labels": [{"task": k, "value": self._label(text)} for k, text in cases]}
        assert 'Give it a "definition"' in prompt  # invited: the Generator is an LLM
        return {
            "reviews": [],
            "proposal": {
                "action": "add_factor",
                "name": "state_changes",
                "values": ["few", "many"],
                "definition": DEFINITION,
                "guidance": "Ask for a task with this many state changes.",
                "origin": "failure_driven",
                "evidence": "failing tasks change many records",
            },
            "summary": "add state_changes",
        }

    def _label(self, text: str) -> str:
        if self.reads_writes:
            writes = sum(name in WRITES for name in _CALL.findall(text))
            return "many" if writes >= 3 else "few"
        return "many" if len(text) % 2 else "few"


@pytest.fixture(scope="module")
def pool(to_task_json: Callable[..., dict[str, Any]]) -> list[Scripted]:
    return realizable_pool(seed_space("airline", "pool"), 6, to_task_json)


@pytest.fixture
def model(
    api_key: None, pool: list[Scripted], request: pytest.FixtureRequest
) -> Iterator[tuple[RoutedServer, InventingModel]]:
    scripted = InventingModel({}, 2, pool, reads_writes=request.param)
    with RoutedServer(scripted) as server:
        yield server, scripted


def weak_on_writes(make_config: Callable[..., CampaignConfig], server: Any, tmp: Path) -> Any:
    cfg = make_config(server, tmp, budget=2)
    weak = {"feature": "num_write", "values": ["3-4", "5+"], "penalty": 0.9}
    learner = cfg.agents.learner.model_dump() | {"weaknesses": [weak]}
    cfg.agents.learner = LearnerSection.model_validate(learner)
    return cfg


@pytest.mark.parametrize("model", [True], indirect=True)
def test_an_invented_factor_that_follows_the_failures_is_kept(
    model: tuple[RoutedServer, InventingModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
) -> None:
    server, scripted = model
    cfg = weak_on_writes(make_config, server, tmp_path)
    scripted.role_of = role_of(cfg)
    lake = run_round(cfg)
    [decision] = lake.read(ReflectorDecision, CID, 1)
    assert decision.action == "add_factor", decision.evidence
    assert decision.new_factor is not None
    assert decision.new_factor.origin == FactorOrigin.FAILURE_DRIVEN
    assert decision.new_factor.definition == DEFINITION
    spaces = sorted(lake.read(SynthesisSpace, CID), key=lambda s: s.version)
    assert spaces[-1].factor("state_changes").definition == DEFINITION
    # Every diagnostic task of the round was labelled, each once, and the calls are accounted.
    match = re.search(r"labelled (\d+)/(\d+) diagnostic", decision.evidence)
    assert match is not None and match.group(1) == match.group(2)
    labeller_rows = [r for r in lake.read(LLMCall, CID, 1) if r.role == "labeller"]
    assert labeller_rows and {r.outcome for r in labeller_rows} == {"ok"}
    assert scripted.labelled >= int(match.group(2))
    # The figures behind the decision are the probe's.
    assert float(re.search(r"p = ([0-9.]+)", decision.evidence).group(1)) < 0.05  # type: ignore[union-attr]
    assert decision.dropped_factor is None
    # That probe is stored with the decision and among the round's probes, where the round
    # table finds its CMI and p.
    probe = next(p for p in lake.read(Probe, CID, 1) if p.name == "state_changes")
    assert decision.probe == probe and probe.p_value < 0.05
    assert decision_of(cfg, CID, 2) == (
        f"added state_changes (failure-driven); CMI {probe.cmi:.3f} nats, p={probe.p_value:.3f}"
    )
    # The next Designer, handed the feedback as it was before the Reflector ran, is shown the
    # factor as that probe measured it.
    before = Feedback(
        campaign_id=CID,
        round=1,
        values=lake.read(ValueFeedback, CID, 1),
        probes=[p for p in lake.read(Probe, CID, 1) if p.name != "state_changes"],
    )
    design.fn(cfg, spaces[-1], before, 2)
    [prompt] = [
        r.body["messages"][0]["content"]
        for r in server.requests
        if r.body["model"] == "designer-model" and "NEWLY ADDED FACTOR" in str(r.body)
    ]
    [line] = [x for x in prompt.splitlines() if x.startswith("- state_changes with values")]
    assert "measured by the Reflector's probe" in line and "not measured yet" not in line


@pytest.mark.parametrize("model", [False], indirect=True)
def test_an_invented_factor_that_the_failures_do_not_follow_is_dropped(
    model: tuple[RoutedServer, InventingModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
) -> None:
    server, scripted = model
    cfg = weak_on_writes(make_config, server, tmp_path)
    scripted.role_of = role_of(cfg)
    lake = run_round(cfg)
    [decision] = lake.read(ReflectorDecision, CID, 1)
    assert decision.action == "reallocate" and decision.new_factor is None
    assert decision.dropped_factor is not None
    assert decision.dropped_factor.name == "state_changes"
    assert "not significant" in decision.evidence
    assert [s.version for s in lake.read(SynthesisSpace, CID)] == [1]
    # The probe that dropped it is on record too.
    probe = next(p for p in lake.read(Probe, CID, 1) if p.name == "state_changes")
    assert decision.probe == probe and probe.p_value >= 0.05
