"""A factor the LLM Reflector invents is labelled, probed and kept or dropped by the evidence.

A scripted server answers the Reflector's call with a factor outside the menu (``passengers``,
with a definition and values) and the labeller's calls by reading each task's text as a
labeller model would: the number of passengers the customer travels with. The learner's
failures are planted on the tasks with several passengers (the factor is kept, failure-driven)
or drawn independently of them (it is dropped, and the decision says why). Everything goes over
real HTTP through the gateway.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from openai_server import OpenAIServer, Reply
from tau2.data_model.tasks import (
    Action,
    EvaluationCriteria,
    StructuredUserInstructions,
    Task,
    UserScenario,
)

from evosyn.agents.gateway import Gateway
from evosyn.agents.labeller import LLMLabeller, ProbeInputs
from evosyn.agents.reflector.llm import LLMReflector
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.records import (
    EvalResult,
    Factor,
    FactorOrigin,
    FactorStatus,
    Feedback,
    ReflectorDecision,
    SynthesisSpace,
    Verification,
)
from evosyn.storage import Lake
from evosyn.storage.schema import to_table

FAMILIES = ("flight_change", "flight_cancellation")
DEFINITION = (
    "How many passengers the request is for: 1 when the customer travels alone, 2+ when the "
    "gold calls act for two or more passengers."
)
PROPOSAL = {
    "reviews": [],
    "proposal": {
        "action": "add_factor",
        "name": "passengers",
        "values": ["1", "2+"],
        "guidance": "Ask for a request made for this many passengers.",
        "definition": DEFINITION,
        "origin": "coverage_gap",
        "evidence": "failing diagnostic tasks are mostly group bookings",
    },
    "summary": "add passengers",
}
_CASE = re.compile(r"^## (task \d+)\n(.*?)(?=^## task |\n# Decision rules)", re.M | re.S)
_PASSENGERS = re.compile(r"for (\d+) passenger")


class LabellingServer(OpenAIServer):
    """Scripted replies first; then a labeller that reads the passengers off each task."""

    def __init__(self) -> None:
        super().__init__()
        self.labelled = 0

    def _handle(self, path: str, body: dict[str, Any], authorization: str) -> Any:
        self._body = body
        return super()._handle(path, body, authorization)

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        prompt = self._body["messages"][-1]["content"]
        if not prompt.startswith("You are the Labeller"):
            return Reply(status=400, error_message="unscripted call")
        labels = []
        for key, text in _CASE.findall(prompt):
            found = _PASSENGERS.search(text)
            value = None if found is None else ("1" if found.group(1) == "1" else "2+")
            labels.append({"task": key, "value": value})
        with self._lock:
            self.labelled += len(labels)
        return Reply.text(json.dumps({"labels": labels}))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LabellingServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LabellingServer() as srv:
        yield srv


def config(server: OpenAIServer, tmp_path: Path) -> CampaignConfig:
    """A campaign whose Reflector (and so its labeller) runs on the scripted server."""
    llm = LLMSection(
        default=ModelSettings(
            api_base=server.url, timeout=5.0, backoff_base_s=0.01, backoff_max_s=0.05, cache=False
        ),
        roles={"reflector": ModelSettings(model="openai/reflector-model")},
    )
    return CampaignConfig.model_validate(
        {
            "campaign": {"name": "inv", "id": "inv", "budget_per_round": 4, "seed": 0},
            "lake": {"root": str(tmp_path / "lake")},
            "agents": {"reflector": {"kind": "llm"}, "generator": {"kind": "llm"}},
            "llm": llm.model_dump(),
        }
    )


def space() -> SynthesisSpace:
    return SynthesisSpace(
        campaign_id="inv",
        round=1,
        domain="airline",
        version=1,
        factors=[Factor(name="task_family", values=list(FAMILIES))],
    )


def task(task_id: str, passengers: int, family: str) -> Task:
    return Task(
        id=task_id,
        user_scenario=UserScenario(
            instructions=StructuredUserInstructions(
                domain="airline",
                reason_for_call=f"You want a {family.replace('_', ' ')} for {passengers} "
                f"passenger{'s' if passengers > 1 else ''}.",
                known_info="Your user id is mia_li_3668.",
                task_instructions="Answer the agent's questions briefly.",
            )
        ),
        evaluation_criteria=EvaluationCriteria(
            actions=[
                Action(
                    action_id=f"{task_id}-0",
                    name="get_user_details",
                    arguments={"user_id": "mia_li_3668"},
                )
            ]
        ),
    )


def inputs(planted: bool, n: int = 80, seed: int = 3) -> ProbeInputs:
    """Diagnostic results (two trials a task) and verified tasks, with their tasks.

    ``planted``: a task for several passengers fails 85% of the time and one for one passenger
    10%; otherwise every task fails 30% of the time, whatever its passengers. The verified data
    covers both values.
    """
    rng = random.Random(seed)
    evaluations, verified, tasks = [], [], {}
    for i in range(n):
        passengers, family = rng.choice([1, 1, 3, 4]), rng.choice(FAMILIES)
        task_id = f"diag-{i}"
        tasks[task_id] = task(task_id, passengers, family)
        p_fail = (0.85 if passengers > 1 else 0.1) if planted else 0.3
        for trial in range(2):
            evaluations.append(
                EvalResult(
                    campaign_id="inv",
                    round=1,
                    training_id="t1",
                    task_id=f"{task_id}#trial{trial}",
                    split="diagnostic",
                    success=rng.random() >= p_fail,
                    reward=0.0,
                    realized={"task_family": family},
                )
            )
    for i in range(20):
        task_id = f"synth-{i}"
        tasks[task_id] = task(task_id, 1 + i % 2, FAMILIES[i % 2])
        verified.append(
            Verification(
                campaign_id="inv",
                round=1,
                task_id=task_id,
                trajectory_id=f"{task_id}-traj",
                passed=True,
                reward=1.0,
                realized={"task_family": FAMILIES[i % 2]},
            )
        )
    return ProbeInputs(evaluations, verified, tasks)


def reflector(cfg: CampaignConfig, probe_inputs: ProbeInputs) -> LLMReflector:
    """The LLM Reflector of ``cfg`` with an LLM Generator, reading ``probe_inputs``."""
    return LLMReflector(
        Gateway.from_config(cfg.llm, "reflector"),
        "airline",
        None,
        labeller=LLMLabeller.from_config(cfg),
        inputs=lambda campaign_id, round: probe_inputs,
    )


def test_an_invented_factor_with_evidence_is_labelled_probed_and_kept(
    server: LabellingServer, tmp_path: Path
) -> None:
    server.script(Reply.text(json.dumps(PROPOSAL)))
    before = space()
    decision, nxt = reflector(config(server, tmp_path), inputs(planted=True)).reflect(
        before, Feedback(campaign_id="inv", round=1), 1
    )
    # 80 diagnostic and 20 verified tasks, 8 to a labeller call.
    assert server.labelled == 100 and server.request_count == 1 + 13
    assert [r.body["model"] for r in server.requests] == ["reflector-model"] * 14
    assert decision.action == "add_factor" and decision.dropped_factor is None
    added = nxt.factor("passengers")
    assert decision.new_factor == added
    assert added.definition == DEFINITION and added.values == ["1", "2+"]
    assert added.status == FactorStatus.EXPERIMENTAL and added.round_introduced == 2
    # The origin is what the probe found, not what the model claimed.
    assert added.origin == FactorOrigin.FAILURE_DRIVEN
    assert nxt.version == before.version + 1
    assert "labelled 80/80 diagnostic and 20/20 verified tasks" in decision.evidence
    p_value = float(re.search(r"p = ([0-9.]+)", decision.evidence).group(1))  # type: ignore[union-attr]
    assert p_value < 0.05
    # The decision carries the probe its evidence quotes (the loop stores it in probes).
    assert decision.probe is not None
    assert (decision.probe.name, decision.probe.campaign_id, decision.probe.round) == (
        "passengers",
        "inv",
        1,
    )
    assert f"p = {decision.probe.p_value:.3f}" in decision.evidence
    assert sum(decision.probe.distribution.values()) == 160  # 80 tasks, two trials each


def test_an_invented_factor_without_evidence_is_dropped_with_the_reason(
    server: LabellingServer, tmp_path: Path
) -> None:
    server.script(Reply.text(json.dumps(PROPOSAL)))
    before = space()
    agent = reflector(config(server, tmp_path), inputs(planted=False))
    decision, nxt = agent.reflect(before, Feedback(campaign_id="inv", round=1), 1)
    assert server.labelled == 100
    assert nxt == before and decision.next_space_version == before.version
    assert decision.action == "reallocate" and decision.new_factor is None
    assert decision.dropped_factor is not None
    assert decision.dropped_factor.name == "passengers"
    assert decision.dropped_factor.definition == DEFINITION
    assert "not significant" in decision.evidence
    assert decision.rationale.startswith("proposed passengers, dropped")
    assert "dropped proposed passengers" in decision.in_words()
    assert decision.probe is not None and decision.probe.name == "passengers"
    assert f"p = {decision.probe.p_value:.3f}" in decision.evidence
    # The next audit tells the model what became of its proposal.
    history = agent.prompt(before, Feedback(campaign_id="inv", round=2), 2)
    assert "round 1: reallocate - proposed passengers, dropped" in history


def test_tasks_the_labeller_cannot_read_are_left_out_of_the_probe(
    server: LabellingServer, tmp_path: Path
) -> None:
    probe_inputs = inputs(planted=True)
    # Half the diagnostic tasks no longer say how many passengers: the labeller answers null.
    for task_id in [t for t in probe_inputs.tasks if t.startswith("diag-")][::2]:
        probe_inputs.tasks[task_id] = task(task_id, 1, "flight_change").model_copy(
            update={
                "user_scenario": UserScenario(
                    instructions=StructuredUserInstructions(
                        domain="airline",
                        reason_for_call="You want to change a flight.",
                        known_info="Your user id is mia_li_3668.",
                        task_instructions="Answer briefly.",
                    )
                )
            }
        )
    # And one verified task's record is missing: it cannot be shown to the labeller.
    del probe_inputs.tasks["synth-0"]
    server.script(Reply.text(json.dumps(PROPOSAL)))
    decision, _ = reflector(config(server, tmp_path), probe_inputs).reflect(
        space(), Feedback(campaign_id="inv", round=1), 1
    )
    assert "labelled 40/80 diagnostic and 19/20 verified tasks" in decision.evidence
    assert "the labeller found the definition does not apply" in decision.evidence
    assert "1 without a stored task" in decision.evidence


def test_without_a_labeller_an_invented_factor_is_dropped(
    server: LabellingServer, tmp_path: Path
) -> None:
    server.script(Reply.text(json.dumps(PROPOSAL)))
    cfg = config(server, tmp_path)
    agent = LLMReflector(Gateway.from_config(cfg.llm, "reflector"), "airline", None)
    decision, nxt = agent.reflect(space(), Feedback(campaign_id="inv", round=1), 1)
    assert nxt == space() and decision.dropped_factor is not None
    assert "no labeller is configured" in decision.evidence and decision.probe is None
    assert server.request_count == 1


def test_an_invented_factor_needs_a_definition(server: LabellingServer, tmp_path: Path) -> None:
    undefined = json.loads(json.dumps(PROPOSAL))
    del undefined["proposal"]["definition"]
    server.script(Reply.text(json.dumps(undefined)), Reply.text(json.dumps(undefined)))
    decision, nxt = reflector(config(server, tmp_path), inputs(planted=True)).reflect(
        space(), Feedback(campaign_id="inv", round=1), 1
    )
    assert nxt == space() and decision.action == "reallocate"
    assert "is computed by no feature: give its definition" in decision.rationale
    # The repair turn quoted the error; nothing was labelled.
    assert server.request_count == 2 and server.labelled == 0


def test_the_reflector_is_invited_to_invent_only_where_it_can_be_measured(
    server: LabellingServer, tmp_path: Path
) -> None:
    cfg = config(server, tmp_path)
    feedback = Feedback(campaign_id="inv", round=1)
    inventing = reflector(cfg, inputs(planted=True)).prompt(space(), feedback, 1)
    assert 'Give it a "definition"' in inventing and '"definition":' in inventing
    menu = LLMReflector(Gateway.from_config(cfg.llm, "reflector"), "airline", {})
    assert '"definition"' not in menu.prompt(space(), feedback, 1)
    # A kept invented factor is shown with its definition in later audits.
    grown = space().model_copy(
        update={
            "factors": [
                *space().factors,
                Factor(
                    name="passengers",
                    values=["1", "2+"],
                    definition=DEFINITION,
                    status=FactorStatus.EXPERIMENTAL,
                    origin=FactorOrigin.FAILURE_DRIVEN,
                    round_introduced=2,
                ),
            ]
        }
    )
    assert f"  Defined as: {DEFINITION}" in menu.prompt(grown, feedback, 2)


def test_a_decision_stores_its_probe_and_older_decisions_read_without_one(
    server: LabellingServer, tmp_path: Path
) -> None:
    server.script(Reply.text(json.dumps(PROPOSAL)))
    decision, _ = reflector(config(server, tmp_path), inputs(planted=True)).reflect(
        space(), Feedback(campaign_id="inv", round=1), 1
    )
    assert decision.probe is not None
    lake = Lake(tmp_path / "lake")
    lake.write([decision], batch="decision")
    assert lake.read(ReflectorDecision, "inv", 1) == [decision]
    # A decision stored before the probe was carried: its file has no such column.
    older = decision.model_copy(update={"campaign_id": "old", "probe": None})
    (tmp_path / "lake/reflections/old/1").mkdir(parents=True)
    table = to_table([older], ReflectorDecision).drop_columns(["probe"])
    pq.write_table(table, tmp_path / "lake/reflections/old/1/decision.parquet")
    assert lake.read(ReflectorDecision, "old", 1) == [older]


def test_the_inventing_reflector_reads_the_most_failed_diagnostic_tasks_and_some_passed(
    server: LabellingServer, tmp_path: Path
) -> None:
    """A factor no probe measures shows only in the tasks: the prompt quotes them as text."""
    server.script(
        Reply.text(
            json.dumps({"reviews": [], "proposal": {"action": "no_change"}, "summary": "nothing"})
        )
    )
    probe_inputs = inputs(planted=True)
    reflector(config(server, tmp_path), probe_inputs).reflect(
        space(), Feedback(campaign_id="inv", round=1), 1
    )
    prompt = server.requests[0].body["messages"][-1]["content"]
    section = prompt.split("## Diagnostic tasks the learner failed, and some it passed")[1]
    section = section.split("## Experimental factors to review")[0]
    heads = re.findall(r"^### (failed|passed): (\d) of 2 trials passed$", section, re.M)
    assert [h[0] for h in heads] == ["failed"] * 6 + ["passed"] * 5
    assert [int(h[1]) for h in heads[:6]] == [0] * 6  # the most-failed first
    # Each is the task as the labeller reads it: the customer's side and the gold calls.
    assert section.count("Reason for the call: ") == 11
    assert section.count("Gold tool calls:") == 11
    reasons = re.findall(r"for (\d) passenger", section)
    # The planted weakness shows: the failed ones are group trips, the passed ones solo.
    assert sum(r != "1" for r in reasons[:6]) >= 5 and reasons[6:] == ["1"] * 5
    rules = " ".join(prompt.split("# Decision rules")[1].split())
    assert "when the failing diagnostic tasks listed above share a property" in rules
    # Such a factor has no measurement before it is labelled: the rule to add only on
    # measured evidence would rule every one out (two live Reflectors read it so, docs/live).
    assert "This is the one exception to measured evidence" in rules
    # What "covered" and "separates" mean, as the programmatic Reflector's review reads them.
    assert "Covered: more than half of its values have verified data" in rules
    assert "differs by 0.1 or more" in rules


def test_a_reflector_held_to_the_menu_reads_no_tasks(tmp_path: Path) -> None:
    agent = LLMReflector(
        Gateway.from_config(
            LLMSection(roles={"reflector": ModelSettings(model="openai/r")}), "reflector"
        ),
        "airline",
        {"num_write": Factor(name="num_write", values=["1", "2", "3+"])},
        inputs=lambda campaign_id, round: inputs(planted=True),
    )
    prompt = agent.prompt(space(), Feedback(campaign_id="inv", round=1), 1)
    assert "Diagnostic tasks the learner failed" not in prompt
    assert "Reason for the call" not in prompt
