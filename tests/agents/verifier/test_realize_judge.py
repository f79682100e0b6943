"""The realization judge: asked over real HTTP only what the detectors miss, in synthesis.

A scripted OpenAI-compatible server answers the judge. A telecom task requests a challenge that
the programmatic Teacher is made to forget (and, where asked, plays the user with another
persona kind), so the dialogue-act detectors miss it: a judge that finds it acted lets the
trajectory pass, one that does not leaves the ``realize`` rejection naming it; a malformed
reply is repaired once or fails in one line, and a failed call is an error (a failed request
of the round), not a rejection. Without a judge (the default) the verdicts are today's. The
agreement script runs end to end against a server that answers from the prompt.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply
from synthesis_checks import hand_blueprint
from tau2.data_model.message import Message, UserMessage

from evosyn.agents.gateway import Gateway, GatewaySettings, LLMError
from evosyn.agents.llm_output import OutputRejected
from evosyn.agents.roles import build_roles, on_model
from evosyn.agents.synthesis import roll_out, roll_out_each
from evosyn.agents.verifier import (
    REALIZE_JUDGES,
    VERIFIERS,
    LLMRealizeJudge,
    RealizeVerdict,
    ReplayVerifier,
)
from evosyn.agents.verifier.nl_judge import transcript
from evosyn.agents.verifier.realize_judge import CHALLENGES, PERSONAS, numbered, parse_realized
from evosyn.config import CampaignConfig, ConfigError, load_config
from evosyn.environments.dialogue_acts import persona_kind
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.environments.telecom.teacher import TelecomTeacher
from evosyn.records import Attempt, SynthTask, Trajectory
from evosyn.tasks.loop import is_failure

CHALLENGE = "user_false_claim"
BUSY = "You are in a hurry and want this done quickly, without small talk."
ROOT = Path(__file__).resolve().parents[3]
DEV_SET = ROOT / "tests/environments/labels/model_written"


def claim_task() -> SynthTask:
    """A telecom billing task requesting a false claim (its persona line: a novice)."""
    blueprint = hand_blueprint(
        "billing_issue",
        "fulfill",
        focus=("eligibility_check",),
        patterns=("multi_hop_retrieval",),
        challenges=(CHALLENGE,),
    )
    task = TelecomGenerator().generate(blueprint, 0)
    assert task.requested["interaction_challenge"] == [CHALLENGE]
    assert persona_kind(task.task.user_scenario.persona) == "novice"
    return task


class Forgetful:
    """The telecom Teacher, never acting out the requested challenges (``persona``: played
    with that persona line instead of the task's)."""

    def __init__(self, persona: str | None = None) -> None:
        self.inner = TelecomTeacher()
        self.persona = persona

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        update: dict[str, Any] = {"requested": {**task.requested, "interaction_challenge": []}}
        if self.persona is not None:
            scenario = task.task.user_scenario.model_copy(update={"persona": self.persona})
            update["task"] = task.task.model_copy(update={"user_scenario": scenario})
        return self.inner.rollout(task.model_copy(update=update), seed, attempt, previous)


def first_user_turn(messages: list[Message]) -> int:
    return next(i for i, m in enumerate(messages) if isinstance(m, UserMessage))


def reply(
    challenges: dict[str, bool], persona: tuple[str, bool] | None = None, turn: int = 1
) -> str:
    """A judge reply: each challenge acted or not, the persona kind shown or not."""
    return json.dumps(
        {
            "challenges": [
                {
                    "challenge": c,
                    "turn": turn if acted else None,
                    "reason": "the user says so",
                    "acted": acted,
                }
                for c, acted in challenges.items()
            ],
            "persona": None
            if persona is None
            else {
                "kind": persona[0],
                "turn": turn if persona[1] else None,
                "reason": "the user asks how it works",
                "shown": persona[1],
            },
        }
    )


def judge_on(server: OpenAIServer, **settings: Any) -> LLMRealizeJudge:
    values: dict[str, Any] = {
        "model": "openai/realize-judge",
        "api_base": server.url,
        "concurrency": 1,
        "cache": False,
        "backoff_base_s": 0.0,
    }
    return LLMRealizeJudge(Gateway("realize_judge", GatewaySettings(**values | settings)))


def prompt_of(server: OpenAIServer, k: int = 0) -> str:
    return str(server.requests[k].body["messages"][0]["content"])


# --------------------------------------------------------------------------- in synthesis


def test_what_the_detectors_miss_and_the_judge_finds_is_realized(server: OpenAIServer) -> None:
    task = claim_task()
    teacher = Forgetful(persona=BUSY)
    # Without a judge the detectors miss the claim and the novice: a realize rejection.
    plain = roll_out([task], teacher, ReplayVerifier("telecom"), 0)
    [rejection] = plain.rejections
    assert rejection.stage == "realize"
    assert CHALLENGE in rejection.reason and "novice" in rejection.reason

    judge = judge_on(server)
    verifier = ReplayVerifier("telecom", realize_judge=judge)
    assert verifier.gateways == (judge.gateway,)
    messages = teacher.rollout(task, 0).messages  # the first try, which the judge reads
    turn = first_user_turn(messages)
    server.script(Reply.text(reply({CHALLENGE: True}, ("novice", True), turn=turn)))
    batch = roll_out([task], teacher, verifier, 0)
    assert batch.rejections == []
    [verdict] = batch.verifications
    assert verdict.passed and verdict.repair_attempts == 0
    assert verdict.realized["interaction_challenges"] == CHALLENGE
    assert verdict.realized["personas"] == "busy;novice"

    # One call, asking exactly the misses, over the numbered conversation.
    assert server.request_count == 1
    prompt = prompt_of(server)
    assert numbered(messages) in prompt
    assert f"[{turn}] {transcript([messages[turn]])}" in prompt
    assert f"- {CHALLENGE}: {CHALLENGES[CHALLENGE]}" in prompt
    assert f"- novice: {PERSONAS['novice']}" in prompt
    assert "- busy:" not in prompt
    # The call is an llm_calls row of role realize_judge, waiting in the verifier's gateway.
    rows = judge.gateway.records("c1", 2)
    assert [(r.role, r.outcome, r.campaign_id, r.round) for r in rows] == [
        ("realize_judge", "ok", "c1", 2)
    ]


def test_what_the_detectors_find_is_never_put_to_the_judge(server: OpenAIServer) -> None:
    verifier = ReplayVerifier("telecom", realize_judge=judge_on(server))
    batch = roll_out([claim_task()], TelecomTeacher(), verifier, 0)
    assert batch.rejections == [] and batch.verified
    assert server.request_count == 0


def test_what_the_judge_also_misses_stays_a_realize_rejection_naming_it(
    server: OpenAIServer,
) -> None:
    task = claim_task()
    verifier = ReplayVerifier("telecom", realize_judge=judge_on(server))
    # The first try and both repairs: the persona is found, only the challenge is asked.
    server.script(*[Reply.text(reply({CHALLENGE: False}))] * 3)
    batch = roll_out([task], Forgetful(), verifier, 0)
    [rejection] = batch.rejections
    assert rejection.stage == "realize"
    assert rejection.reason == f"requested interaction_challenge not acted out: {CHALLENGE}"
    [verdict] = batch.verifications
    assert not verdict.passed and verdict.repair_attempts == 2
    assert verdict.realized["interaction_challenges"] == "none"
    assert server.request_count == 3
    prompt = prompt_of(server)
    assert '"persona": null' in prompt and "# Persona to check" not in prompt


def test_a_judge_call_that_fails_is_a_failed_request_not_a_rejection(
    failing: OpenAIServer,
) -> None:
    task = claim_task()
    verifier = ReplayVerifier("telecom", realize_judge=judge_on(failing, max_attempts=1))
    batch = roll_out_each([task], Forgetful(), verifier, 0, tries=2)
    assert batch.verifications == [] and batch.trajectories == []
    [rejection] = batch.rejections
    assert is_failure(rejection)
    assert rejection.error_class is not None and "\n" not in rejection.reason
    assert failing.request_count == 2
    with pytest.raises(LLMError):
        roll_out([task], Forgetful(), verifier, 0)


# --------------------------------------------------------------------------- the reply


def dialogue() -> list[Message]:
    return Forgetful().rollout(claim_task(), 0).messages


def test_a_malformed_reply_is_repaired_once(server: OpenAIServer) -> None:
    messages = dialogue()
    turn = first_user_turn(messages)
    # ``acted`` as a string, then the corrected answer.
    bad = json.dumps(
        {"challenges": [{"challenge": CHALLENGE, "turn": turn, "reason": "x", "acted": "yes"}]}
    )
    server.script(Reply.text(bad), Reply.text(reply({CHALLENGE: True}, turn=turn)))
    [verdict] = judge_on(server).judge("telecom", messages, [CHALLENGE], None)
    assert verdict == RealizeVerdict(
        item=CHALLENGE, kind="challenge", realized=True, turn=turn, reason="the user says so"
    )
    assert "challenges.0.acted" in server.requests[1].body["messages"][-1]["content"]

    # A turn the user did not write is sent back too.
    server.reset()
    server.script(
        Reply.text(reply({CHALLENGE: True}, turn=0)),
        Reply.text(reply({CHALLENGE: True}, turn=turn)),
    )
    [verdict] = judge_on(server).judge("telecom", messages, [CHALLENGE], None)
    assert verdict.turn == turn
    assert "turn 0 is not a user turn" in server.requests[1].body["messages"][-1]["content"]


def test_a_reply_still_malformed_after_the_repair_fails_in_one_line(
    server: OpenAIServer,
) -> None:
    messages = dialogue()
    server.script(Reply.text(reply({})), Reply.text("The user acted it out, I believe."))
    with pytest.raises(OutputRejected) as caught:
        judge_on(server).judge("telecom", messages, [CHALLENGE], "novice")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("realize_judge output rejected after one repair turn: ")
    assert "no JSON object" in message and f"no verdict for challenge {CHALLENGE}" in message


def test_nothing_asked_makes_no_call(server: OpenAIServer) -> None:
    assert judge_on(server).judge("telecom", dialogue(), [], None) == []
    assert server.request_count == 0


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"challenges": [], "persona": None}, f"no verdict for challenge {CHALLENGE}"),
        (
            json.loads(reply({CHALLENGE: False, "emotional_pressure": False})),
            "challenge 'emotional_pressure' was not asked",
        ),
        (
            {"challenges": json.loads(reply({CHALLENGE: False}))["challenges"] * 2},
            "is judged twice",
        ),
        (
            {"challenges": [{"challenge": CHALLENGE, "reason": "a", "acted": True}]},
            "judged true but no turn",
        ),
        (
            {"challenges": [{"challenge": CHALLENGE, "turn": 10**6, "reason": "a", "acted": True}]},
            f"turn {10**6} is not a user turn",
        ),
        (
            {"challenges": [{"challenge": CHALLENGE, "reason": "  ", "acted": False}]},
            "reason is blank",
        ),
        (json.loads(reply({CHALLENGE: False}, ("busy", False))), "persona was not asked"),
        ({"verdicts": []}, "verdicts"),
    ],
)
def test_an_invalid_reply_is_named(data: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        parse_realized(data, dialogue(), [CHALLENGE], None)


@pytest.mark.parametrize(
    ("persona", "error"),
    [
        (None, "no verdict for persona 'novice'"),
        (("busy", False), "persona kind 'busy' was not asked"),
    ],
)
def test_an_invalid_persona_is_named(persona: tuple[str, bool] | None, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        parse_realized(json.loads(reply({}, persona)), dialogue(), [], "novice")


def test_every_challenge_and_persona_kind_has_a_definition() -> None:
    from evosyn.environments.dialogue_acts import PERSONA_KINDS
    from evosyn.space import seed_space

    offered = {
        value
        for domain in ("airline", "retail", "telecom", "mock", "library")
        for factor in seed_space(domain, "t").factors
        if factor.name == "interaction_challenge"
        for value in factor.values
    }
    assert offered <= set(CHALLENGES)
    assert {kind for kind, _ in PERSONA_KINDS} <= set(PERSONAS)


# --------------------------------------------------------------------------- configuration


def test_without_a_judge_the_verdicts_are_todays(server: OpenAIServer) -> None:
    cfg = CampaignConfig.model_validate({"campaign": {"domain": "telecom"}})
    assert cfg.agents.verifier.realize_judge.kind == "none"
    built = VERIFIERS.build("programmatic", cfg)
    assert isinstance(built, ReplayVerifier) and built.realize_judge is None
    assert built.gateways == ()
    assert "verifier" not in on_model(cfg)
    task = claim_task()
    for teacher in (Forgetful(), Forgetful(persona=BUSY), TelecomTeacher()):
        ours = roll_out([task], teacher, built, 0)
        before = roll_out([task], teacher, ReplayVerifier("telecom"), 0)
        exclude = {"seconds", "created_at"}
        assert [v.model_dump(exclude=exclude) for v in ours.verifications] == [
            v.model_dump(exclude=exclude) for v in before.verifications
        ]
        assert [r.model_dump(exclude={"created_at"}) for r in ours.rejections] == [
            r.model_dump(exclude={"created_at"}) for r in before.rejections
        ]
    assert server.request_count == 0


def test_kind_llm_builds_a_judge_on_its_model_over_llm_default(tmp_path: Path) -> None:
    cfg = CampaignConfig.model_validate(
        {
            "lake": {"root": str(tmp_path / "lake")},
            "llm": {"default": {"model": "openai/default", "timeout": 7.0}},
            "agents": {
                "verifier": {
                    "realize_judge": {
                        "kind": "llm",
                        "llm": {"model": "openai/judge", "cache_dir": str(tmp_path / "c")},
                    }
                }
            },
        }
    )
    verifier = VERIFIERS.build("programmatic", cfg)
    assert isinstance(verifier, ReplayVerifier) and verifier.nl_judge is None
    judge = verifier.realize_judge
    assert isinstance(judge, LLMRealizeJudge)
    settings = judge.gateway.settings
    assert (settings.model, settings.timeout, settings.temperature) == ("openai/judge", 7.0, 0.0)
    assert judge.gateway.role == "realize_judge"
    assert verifier.gateways == (judge.gateway,)
    # A verifier on a model stays on threads, and the round drains its judge's calls.
    assert "verifier" in on_model(cfg)
    roles = build_roles(cfg)
    assert isinstance(roles.verifier, ReplayVerifier)
    assert roles.verifier.gateways[0] in roles.gateways

    no_model = cfg.model_copy(deep=True)
    no_model.llm.default.model = None
    no_model.agents.verifier.realize_judge.llm = None
    with pytest.raises(ConfigError, match=r"set agents\.verifier\.realize_judge\.llm\.model"):
        REALIZE_JUDGES.build("llm", no_model)


def test_the_judge_is_set_from_the_command_line_and_an_unknown_one_is_named() -> None:
    cfg = load_config(
        overrides=[
            "agents.verifier.realize_judge.kind=llm",
            "agents.verifier.realize_judge.llm.model=m",
        ],
        environ={},
    )
    assert cfg.agents.verifier.realize_judge.llm is not None
    assert cfg.agents.verifier.realize_judge.llm.model == "m"
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=["agents.verifier.realize_judge.kind=gpt"], environ={})
    assert str(caught.value) == (
        "config error: agents.verifier.realize_judge.kind: unknown realization judge 'gpt'; "
        "choose one of ['llm', 'none'] (got 'gpt')"
    )


# --------------------------------------------------------------------------- the agreement script


class Reader(OpenAIServer):
    """A server that judges every asked item acted, at the first user turn of the prompt."""

    def _completion(self, body: dict[str, Any], scripted: Reply) -> dict[str, Any]:
        prompt = body["messages"][0]["content"]
        first = re.search(r"^\[(\d+)\] user:", prompt, re.M)
        assert first is not None
        turn = int(first.group(1))
        asked = prompt.split("# Challenges to check", 1)[-1].split("# Persona to check")[0]
        names = re.findall(r"^- (\w+): ", asked, re.M) if "# Challenges" in prompt else []
        kind = re.search(r'"kind": "(\w+)"', prompt)
        persona = (kind.group(1), True) if kind else None
        text = reply(dict.fromkeys(names, True), persona, turn)
        return super()._completion(body, Reply.text(text))


def test_the_agreement_script_scores_the_judge_against_the_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # Three dev dialogues: one whose requested emotional_pressure is not acted (a judge false
    # alarm here), one whose persona is not shown, one with everything acted.
    for name in ("airline-11", "telecom-19", "retail-05"):
        shutil.copy(DEV_SET / f"{name}.json", tmp_path / f"{name}.json")
    spec = importlib.util.spec_from_file_location(
        "realize_judge_agreement", ROOT / "tests/benchmarks/realize_judge_agreement.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, script)
    spec.loader.exec_module(script)
    rows = tmp_path / "rows.jsonl"
    with Reader() as reader:
        code = script.main(
            [
                "--set",
                str(tmp_path),
                "--api-base",
                reader.url,
                "--concurrency",
                "2",
                "--out",
                str(rows),
            ]
        )
        assert reader.request_count == 3
    assert code == 0
    out = capsys.readouterr().out
    for title in ("## judge", "## detectors", "## detectors, then judge"):
        assert title in out
    assert "airline-11 challenge emotional_pressure: label acted" not in out
    assert "airline-11 challenge emotional_pressure: label not acted, judge acted at [" in out
    assert "telecom-19 persona careful: label not acted, judge acted" in out
    items = [json.loads(line) for line in rows.read_text().splitlines()]
    labelled = {(i["dialogue"], i["name"]): i["label"] for i in items}
    assert labelled[("airline-11", "emotional_pressure")] is False
    assert labelled[("airline-11", "user_false_claim")] is True
    assert all(i["judged"] for i in items)
