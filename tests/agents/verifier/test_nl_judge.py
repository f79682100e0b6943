"""The NL-assertion judge: graded over real HTTP, combined as τ²-bench combines it.

A scripted OpenAI-compatible server answers the judge: an assertion judged met lets a
trajectory pass, one judged not met rejects it with the assertion and the judge's reason, a
malformed reply is repaired once or fails in one line, and a failed call is an error (a failed
request of the round), not a verdict. Without a judge (the default) the verdict is the one the
replay verifier gave before. For the same per-assertion verdicts, τ²-bench's own
``evaluate_simulation`` (its judge stubbed) gives the replay verifier's reward.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply
from synthesis_checks import hand_blueprint
from tau2.data_model.message import AssistantMessage, Message
from tau2.data_model.simulation import NLAssertionCheck, SimulationRun, TerminationReason
from tau2.data_model.tasks import RewardType, Task

from evosyn.agents.gateway import Gateway, GatewaySettings, LLMError
from evosyn.agents.llm_output import OutputRejected
from evosyn.agents.roles import build_roles, on_model
from evosyn.agents.synthesis import roll_out_each
from evosyn.agents.teacher import TEACHERS
from evosyn.agents.verifier import (
    NL_JUDGES,
    VERIFIERS,
    LLMNLJudge,
    NLVerdict,
    ReplayVerifier,
    nl_reward,
)
from evosyn.agents.verifier.nl_judge import parse_verdicts, transcript
from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.environments import get_domain
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.environments.trajectories import gold_trajectory
from evosyn.tasks.loop import is_failure

ASSERTIONS = ["The agent confirmed the task was created successfully", "The agent is polite"]


def nl_task(assertions: Sequence[str] = ASSERTIONS) -> Task:
    """Mock's ``create_task_1`` graded on its NL assertions too."""
    [task] = [t for t in get_domain("mock").tasks() if t.id == "create_task_1"]
    criteria = task.evaluation_criteria
    assert criteria is not None
    return task.model_copy(
        update={
            "evaluation_criteria": criteria.model_copy(
                update={
                    "nl_assertions": list(assertions),
                    "reward_basis": [*criteria.reward_basis, RewardType.NL_ASSERTION],
                }
            )
        }
    )


def gold(task: Task) -> list[Message]:
    return gold_trajectory(get_domain("mock"), task)


def verdicts(*met: bool, reason: str = "the agent says so in its last turn") -> str:
    """A judge reply grading outcome k+1 as ``met[k]``."""
    return json.dumps(
        {
            "verdicts": [
                {"outcome": k, "met": m, "reason": reason} for k, m in enumerate(met, start=1)
            ]
        }
    )


def judge_on(server: OpenAIServer, **settings: Any) -> LLMNLJudge:
    values: dict[str, Any] = {
        "model": "openai/nl-judge",
        "api_base": server.url,
        "concurrency": 1,
        "cache": False,
        "backoff_base_s": 0.0,
    }
    gateway = Gateway("nl_judge", GatewaySettings(**values | settings))
    return LLMNLJudge(gateway, "mock")


# --------------------------------------------------------------------------- verdicts over HTTP


def test_assertions_judged_met_pass_and_the_call_is_an_llm_calls_row(
    server: OpenAIServer,
) -> None:
    task = nl_task()
    messages = gold(task)
    judge = judge_on(server)
    verifier = ReplayVerifier("mock", nl_judge=judge)
    server.script(Reply.text(verdicts(True, True)))

    verdict = verifier.verify(task, messages)
    assert verdict.passed and verdict.reward == 1.0
    assert verdict.reasons == [] and verdict.unchecked == []
    server.script(Reply.text(verdicts(True, True)))
    assert verifier.report(task, messages).breakdown[RewardType.NL_ASSERTION.value] == 1.0

    # The judge read the conversation and every assertion, numbered.
    prompt = server.requests[0].body["messages"][0]["content"]
    assert transcript(messages) in prompt
    assert all(f"{k}. {a}" in prompt for k, a in enumerate(ASSERTIONS, start=1))
    # Each call is an llm_calls row of role nl_judge, waiting in the verifier's gateway.
    assert verifier.gateways == (judge.gateway,)
    rows = judge.gateway.records("c1", 2)
    assert [(r.role, r.outcome, r.campaign_id, r.round) for r in rows] == [
        ("nl_judge", "ok", "c1", 2)
    ] * 2


def test_an_assertion_judged_not_met_rejects_with_the_assertion_and_the_reason(
    server: OpenAIServer,
) -> None:
    task = nl_task()
    verifier = ReplayVerifier("mock", nl_judge=judge_on(server))
    server.script(Reply.text(verdicts(True, False, reason="It never greets the user.")))

    report = verifier.report(task, gold(task))
    assert report.reward == 0.0
    assert report.breakdown[RewardType.NL_ASSERTION.value] == 0.0
    assert report.reasons == [f"nl_assertion: {ASSERTIONS[1]} — It never greets the user."]
    assert report.unchecked == []
    assert [v.met for v in report.nl_verdicts] == [True, False]

    server.script(Reply.text(verdicts(True, False, reason="It never greets the user.")))
    verdict = verifier.verify(task, gold(task))
    assert not verdict.passed
    assert verdict.reasons == report.reasons


def test_a_malformed_reply_is_repaired_once(server: OpenAIServer) -> None:
    # ``met`` as a string, then the corrected answer.
    bad = json.dumps({"verdicts": [{"outcome": 1, "met": "yes", "reason": "fine"}]})
    server.script(Reply.text(bad), Reply.text(verdicts(True)))
    [verdict] = judge_on(server).judge(ASSERTIONS[:1], gold(nl_task()))
    assert verdict == NLVerdict(
        assertion=ASSERTIONS[0], met=True, reason="the agent says so in its last turn"
    )
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "verdicts.0.met" in repair


def test_a_reply_still_malformed_after_the_repair_fails_in_one_line(
    server: OpenAIServer,
) -> None:
    task = nl_task()
    verifier = ReplayVerifier("mock", nl_judge=judge_on(server))
    server.script(Reply.text(verdicts(True)), Reply.text("I think it went well."))
    with pytest.raises(OutputRejected) as caught:
        verifier.verify(task, gold(task))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("nl_judge output rejected after one repair turn: ")
    assert "no JSON object" in message and "no verdict for outcome 2" in message


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (json.loads(verdicts(True)), "no verdict for outcome 2"),
        (json.loads(verdicts(True, True, True)), "outcome 3 is not one of the outcomes 1 to 2"),
        (
            {"verdicts": [{"outcome": 1, "met": True, "reason": "a"}] * 2},
            "outcome 1 is graded twice",
        ),
        ({"verdicts": [{"outcome": 1, "met": True, "reason": "  "}]}, "reason is blank"),
        ({"results": []}, "verdicts"),
    ],
)
def test_an_invalid_reply_is_named(data: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_verdicts(data, ASSERTIONS)


def test_a_judge_call_that_fails_is_a_failed_request_not_a_rejection(
    failing: OpenAIServer,
) -> None:
    server = failing
    judge = judge_on(server, max_attempts=2)
    task = nl_task()
    with pytest.raises(LLMError):
        ReplayVerifier("mock", nl_judge=judge).verify(task, gold(task))
    assert server.request_count == 2

    # In a round: the rollout is retried, then counted in n_failed (not stored), not rejected.
    cfg = CampaignConfig.model_validate({"campaign": {"domain": "telecom"}})
    synth = TelecomGenerator().generate(
        hand_blueprint(
            "billing_issue",
            "fulfill",
            focus=("eligibility_check",),
            patterns=("multi_hop_retrieval",),
        ),
        0,
    )
    criteria = synth.task.evaluation_criteria
    assert criteria is not None
    graded = criteria.model_copy(
        update={
            "nl_assertions": ASSERTIONS[:1],
            "reward_basis": [*criteria.reward_basis, RewardType.NL_ASSERTION],
        }
    )
    synth = synth.model_copy(
        update={"task": synth.task.model_copy(update={"evaluation_criteria": graded})}
    )
    verifier = ReplayVerifier("telecom", nl_judge=judge_on(server, max_attempts=1))
    teacher = TEACHERS.build("programmatic", cfg)
    batch = roll_out_each([synth], teacher, verifier, seed=0, tries=2)
    assert batch.verifications == [] and batch.trajectories == []
    [rejection] = batch.rejections
    assert is_failure(rejection)
    assert rejection.error_class is not None and "\n" not in rejection.reason


# --------------------------------------------------------------------------- configuration


def test_without_a_judge_the_verdict_is_todays(server: OpenAIServer) -> None:
    task = nl_task()
    messages = gold(task)
    cfg = CampaignConfig.model_validate({"campaign": {"domain": "mock"}})
    assert cfg.agents.verifier.nl_judge.kind == "none"
    built = VERIFIERS.build("programmatic", cfg)
    assert isinstance(built, ReplayVerifier) and built.nl_judge is None
    assert built.gateways == ()
    plain = ReplayVerifier("mock")
    ours, before = built.verify(task, messages), plain.verify(task, messages)
    assert ours.model_dump(exclude={"seconds", "created_at"}) == before.model_dump(
        exclude={"seconds", "created_at"}
    )
    assert ours.passed
    assert ours.unchecked == [f"nl_assertion: {a}" for a in ASSERTIONS]
    assert "verifier" not in on_model(cfg)
    assert server.request_count == 0


def test_kind_llm_builds_a_judge_on_its_model_over_llm_default(tmp_path: Path) -> None:
    cfg = CampaignConfig.model_validate(
        {
            "lake": {"root": str(tmp_path / "lake")},
            "llm": {"default": {"model": "openai/default", "timeout": 7.0}},
            "agents": {
                "verifier": {
                    "nl_judge": {
                        "kind": "llm",
                        "llm": {"model": "openai/judge", "cache_dir": str(tmp_path / "c")},
                    }
                }
            },
        }
    )
    verifier = VERIFIERS.build("programmatic", cfg)
    assert isinstance(verifier, ReplayVerifier)
    judge = verifier.nl_judge
    assert isinstance(judge, LLMNLJudge)
    settings = judge.gateway.settings
    assert (settings.model, settings.timeout, settings.temperature) == ("openai/judge", 7.0, 0.0)
    assert judge.gateway.role == "nl_judge"
    # A verifier on a model stays on threads, and the round drains its judge's calls.
    assert "verifier" in on_model(cfg)
    roles = build_roles(cfg)
    assert isinstance(roles.verifier, ReplayVerifier)
    assert roles.verifier.gateways[0] in roles.gateways

    no_model = cfg.model_copy(deep=True)
    no_model.llm.default.model = None
    no_model.agents.verifier.nl_judge.llm = None
    with pytest.raises(ConfigError, match=r"set agents\.verifier\.nl_judge\.llm\.model"):
        NL_JUDGES.build("llm", no_model)


def test_the_judge_is_set_from_the_command_line_and_an_unknown_one_is_named() -> None:
    cfg = load_config(
        overrides=["agents.verifier.nl_judge.kind=llm", "agents.verifier.nl_judge.llm.model=m"],
        environ={},
    )
    assert cfg.agents.verifier.nl_judge.llm is not None
    assert cfg.agents.verifier.nl_judge.llm.model == "m"
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=["agents.verifier.nl_judge.kind=gpt"], environ={})
    assert str(caught.value) == (
        "config error: agents.verifier.nl_judge.kind: unknown NL judge 'gpt'; "
        "choose one of ['llm', 'none'] (got 'gpt')"
    )


# --------------------------------------------------------------------------- τ²-bench's rule


class FixedJudge:
    """A judge that answers the given verdicts, in order."""

    name = "fixed"
    gateways: tuple[Gateway, ...] = ()

    def __init__(self, met: Sequence[bool]) -> None:
        self.met = met

    def judge(self, assertions: Sequence[str], messages: Sequence[Message]) -> list[NLVerdict]:
        return [
            NLVerdict(assertion=a, met=m, reason="fixed")
            for a, m in zip(assertions, self.met, strict=True)
        ]


def tau2_reward(
    task: Task, messages: list[Message], met: Sequence[bool], monkeypatch: pytest.MonkeyPatch
) -> float:
    """τ²-bench's reward with NL assertions, its judge answering ``met``."""
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.evaluator.evaluator_nl_assertions import NLAssertionsEvaluator

    def stub(trajectory: list[Message], nl_assertions: list[str]) -> list[NLAssertionCheck]:
        return [
            NLAssertionCheck(nl_assertion=a, met=m, justification="fixed")
            for a, m in zip(nl_assertions, met, strict=True)
        ]

    monkeypatch.setattr(NLAssertionsEvaluator, "evaluate_nl_assertions", staticmethod(stub))
    run = SimulationRun(
        id="x",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason.AGENT_STOP,
        messages=messages,
    )
    info = evaluate_simulation(run, task, EvaluationType.ALL_WITH_NL_ASSERTIONS, False, "mock")
    return float(info.reward)


@pytest.mark.parametrize("met", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("trajectory", ["gold", "silent"])
def test_the_reward_combines_the_verdicts_as_tau2_bench_does(
    met: tuple[bool, bool], trajectory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = nl_task()
    messages = gold(task)
    if trajectory == "silent":
        # Without the final message the other criteria still hold: only the verdicts decide.
        messages = [m for m in messages if not (isinstance(m, AssistantMessage) and m.content)]
    ours = ReplayVerifier("mock", nl_judge=FixedJudge(met)).report(task, messages)
    assert ours.reward == tau2_reward(task, messages, met, monkeypatch)
    assert ours.reward == nl_reward(ours.nl_verdicts)
    assert len(ours.reasons) == met.count(False)


def test_a_task_without_assertions_scores_one_as_in_tau2_bench(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = nl_task(assertions=[])
    messages = gold(task)
    ours = ReplayVerifier("mock", nl_judge=FixedJudge([])).report(task, messages)
    assert ours.reward == tau2_reward(task, messages, [], monkeypatch) == 1.0
    assert nl_reward([]) == 1.0
