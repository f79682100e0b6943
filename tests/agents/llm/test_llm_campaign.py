"""Every role on ``llm`` against the test server: one round end to end, clean and with faults.

A ``RoutedServer`` answers each request from the request itself (the role's model, the
blueprint in the Generator prompt, the task reference in the teacher and user prompts), so a
whole round runs against one server however many calls it makes. Transport faults (429 with
Retry-After, 500, replies slower than the timeout) come from the server's seeded ``Faults``;
malformed JSON (an answer cut off mid-object) from ``ScriptedModel``. Both are counted, and the
tests check that ``llm_calls`` rows and rejection reasons account for every one.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai_server import Faults, OpenAIServer, Reply
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage

from evosyn.agents.generator.airline import AirlineGenerator, infeasible
from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.roles import roles_for
from evosyn.agents.teacher.airline import AirlineTeacher
from evosyn.config import CampaignConfig
from evosyn.records import (
    Blueprint,
    Direction,
    LLMCall,
    ReflectorDecision,
    Rejection,
    SynthesisSpace,
    SynthTask,
    Verification,
)
from evosyn.space import seed_space
from evosyn.storage import Lake
from evosyn.tasks.loop import (
    design,
    evaluate_learner,
    feedback_of,
    lake_of,
    plan_blueprints,
    reflect,
    synthesize_batch,
    train_learner,
)

JSON_ROLES = ("designer", "planner", "generator", "reflector")
REPAIR_MARK = "Your previous answer cannot be used"
_REF = re.compile(r"\[ref ([A-Za-z0-9_.-]+)\]")
_BLUEPRINT = re.compile(r"## Blueprint\n(\{.*?\n\})\n", re.DOTALL)


class RoutedServer(OpenAIServer):
    """``OpenAIServer`` whose default reply is ``route(body)`` instead of a fixed one."""

    def __init__(self, route: Callable[[dict[str, Any]], Reply], faults: Faults | None = None):
        super().__init__(faults=faults)
        self.route = route
        self._local = threading.local()
        #: (model, fault) -> transport faults served: rate_limit, server_error or slow.
        self.faults_served: Counter[tuple[str, str]] = Counter()

    def _handle(self, path: str, body: dict[str, Any], authorization: str) -> Any:
        self._local.body = body
        return super()._handle(path, body, authorization)

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            fault = self.faults.draw(self._rng)
            if fault is not None:
                kind = {429: "rate_limit", 500: "server_error"}.get(fault.status, "slow")
                self.faults_served[(str(self._local.body.get("model")), kind)] += 1
        if fault is not None:
            return fault
        try:
            return self.route(self._local.body)
        except Exception as exc:  # a broken script fails the call at once (400: no retries)
            return Reply(status=400, error_message=f"script error: {exc!r}")


def conversation(synth: SynthTask) -> list[tuple[str, Reply]]:
    """(role, reply) pairs that make the orchestrator replay the programmatic teacher's rollout."""
    turns: list[tuple[str, Reply]] = []
    for message in AirlineTeacher().messages(synth.task, seed=1):
        if isinstance(message, ToolMessage) or message.role == "system":
            continue
        who = "teacher" if isinstance(message, AssistantMessage) else "user_simulator"
        assert isinstance(message, AssistantMessage | UserMessage)
        if message.tool_calls:
            [call] = message.tool_calls
            turns.append((who, Reply.tool_call(call.name, call.arguments, call_id=call.id)))
        else:
            turns.append((who, Reply.text(str(message.content))))
    return turns


@dataclass(frozen=True)
class Scripted:
    """A blueprint the programmatic airline Generator realizes, and how a model would answer."""

    selections: dict[str, list[str]]
    task: dict[str, Any]
    turns: list[tuple[str, Reply]]


def realizable_pool(
    space: SynthesisSpace, n: int, task_json: Callable[..., dict[str, Any]], seed: int = 11
) -> list[Scripted]:
    """``n`` selections with the Generator's answer and the teacher's conversation for each."""
    direction = Direction(
        campaign_id="pool",
        round=1,
        direction_id="pool",
        space_version=space.version,
        objective="exploration",
        budget=4 * n,
    )
    generator = AirlineGenerator()
    found: list[Scripted] = []
    for bp in ProgrammaticPlanner(infeasible).plan(space, direction, seed):
        try:
            synth = generator.generate(bp, 3)
        except GeneratorRejection:
            continue
        ref = f"pool{len(found)}"
        found.append(Scripted(bp.selections, task_json(synth, ref=ref), conversation(synth)))
        if len(found) == n:
            return found
    raise AssertionError(f"only {len(found)} realizable selections")


class ScriptedModel:
    """Answers of every role, with malformed JSON at rate ``p_malformed`` for the JSON roles.

    Args:
        role_of: Model name on the server -> role.
        budget: The round budget the Designer must share out.
        pool: Planner answers, used in turn, with the Generator's and the teacher's.
        p_malformed: Chance that a JSON role's answer is cut off mid-object.
        seed: Seed of the malformed draws.
    """

    def __init__(
        self,
        role_of: dict[str, str],
        budget: int,
        pool: list[Scripted],
        p_malformed: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.role_of = role_of
        self.budget = budget
        self.pool = pool
        self._by_selections = {_key(p.selections): p for p in pool}
        self.p_malformed = p_malformed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._planned = 0
        self._turns: dict[str, deque[tuple[str, Reply]]] = {}
        #: (role, kind) -> answers served; kind: ok, malformed, repair_ok, repair_malformed, ...
        self.served: Counter[tuple[str, str]] = Counter()

    # ------------------------------------------------------------------ routing

    def __call__(self, body: dict[str, Any]) -> Reply:
        role = self.role_of.get(str(body.get("model")), "")
        messages = body.get("messages", [])
        with self._lock:
            if role in JSON_ROLES:
                return self._json_answer(role, messages)
            if role in ("teacher", "user_simulator"):
                return self._turn(role, messages)
        return Reply(status=400, error_message=f"unknown model {body.get('model')!r}")

    def _json_answer(self, role: str, messages: list[dict[str, Any]]) -> Reply:
        repair = REPAIR_MARK in str(messages[-1].get("content"))
        prompt = str(messages[0].get("content"))
        answer = json.dumps(getattr(self, f"_{role}")(prompt))
        kind = "repair_" if repair else ""
        if self._rng.random() < self.p_malformed:
            self.served[(role, kind + "malformed")] += 1
            return Reply.text(f"Here is the plan:\n```json\n{answer[: len(answer) // 2]}")
        self.served[(role, kind + "ok")] += 1
        return Reply.text(answer)

    def _designer(self, prompt: str) -> dict[str, Any]:
        explore = self.budget // 2
        return {
            "directions": [
                {
                    "objective_type": "exploration",
                    "target": "the whole space",
                    "budget": explore,
                    "rationale": "cold start",
                },
                {
                    "objective_type": "under_covered",
                    "target": "cancellations",
                    "preferred": {"task_family": ["flight_cancellation"]},
                    "budget": self.budget - explore,
                    "rationale": "cancellations are under-covered",
                },
            ]
        }

    def _planner(self, prompt: str) -> dict[str, Any]:
        scripted = self.pool[self._planned % len(self.pool)]
        self._planned += 1
        return {"selections": scripted.selections, "intent": "a scripted blueprint"}

    def _generator(self, prompt: str) -> dict[str, Any]:
        match = _BLUEPRINT.search(prompt)
        assert match, "the generator prompt has no blueprint block"
        return self._by_selections[_key(json.loads(match.group(1))["selections"])].task

    def _reflector(self, prompt: str) -> dict[str, Any]:
        return {"reviews": [], "proposal": {"action": "no_change"}, "summary": "keep the space"}

    def _turn(self, role: str, messages: list[dict[str, Any]]) -> Reply:
        match = _REF.search(str(messages[0].get("content")))
        scripts = {f"pool{i}": p.turns for i, p in enumerate(self.pool)}
        if match is None or match.group(1) not in scripts:
            return Reply(status=400, error_message="no scripted conversation for this task")
        ref = match.group(1)
        own = sum(1 for m in messages if m.get("role") == "assistant")
        if role == "user_simulator" and own == 0:
            # A new conversation (first rollout or a repair) starts from the top.
            self._turns[ref] = deque(scripts[ref])
        turns = self._turns.get(ref)
        if not turns:
            return Reply(status=400, error_message=f"conversation {ref} has no turn left")
        who, reply = turns.popleft()
        if who != role:
            return Reply(status=400, error_message=f"conversation {ref}: {role} spoke for {who}")
        self.served[(role, "ok")] += 1
        return reply


# ---------------------------------------------------------------------- running a round


@pytest.fixture(scope="module")
def pool(to_task_json: Callable[..., dict[str, Any]]) -> list[Scripted]:
    return realizable_pool(seed_space("airline", "pool"), 6, to_task_json)


def _key(selections: dict[str, list[str]]) -> str:
    return json.dumps(selections, sort_keys=True)


def role_of(cfg: CampaignConfig) -> dict[str, str]:
    return {
        str(s.model).removeprefix("openai/"): role for role, s in cfg.llm.roles.items() if s.model
    }


@pytest.fixture
def routed(
    api_key: None,
    pool: list[Scripted],
    request: pytest.FixtureRequest,
) -> Iterator[tuple[RoutedServer, ScriptedModel]]:
    """A routed server; ``@pytest.mark.parametrize("routed", [p_fault], indirect=True)``."""
    p_fault = float(getattr(request, "param", 0.0))
    # Transport faults on any call, split over 429, 500 and timeouts; malformed JSON on the
    # answers of the JSON roles (the teacher and user turns are text and tool calls).
    share = p_fault * 0.75 / 3
    faults = Faults(
        p_rate_limit=share,
        p_server_error=share,
        p_slow=share,
        retry_after=0.05,
        slow_s=0.6,
        seed=7,
    )
    budget = 6 if p_fault else 2
    model = ScriptedModel({}, budget, pool, p_malformed=p_fault, seed=3)
    server = RoutedServer(model, faults)
    with server:
        yield server, model


def run_round(cfg: CampaignConfig) -> Lake:
    """Round 1 and the Reflector's decision after it, through the loop's task functions.

    Calls the Prefect tasks' functions directly (no Prefect server); each one flushes its
    gateways' ``llm_calls`` rows itself.
    """
    lake = lake_of(cfg)
    cid = cfg.campaign.resolved_id()
    space = seed_space("airline", cid)
    lake.write([space], batch=f"v{space.version}")
    plan = design.fn(cfg, space, None, 1)
    blueprints = plan_blueprints.fn(cfg, space, plan)
    if blueprints:
        synthesize_batch.fn(cfg, blueprints, "chunk-000")
    train_learner.fn(cfg, cid, 1)
    evaluations = evaluate_learner.fn(cfg, cid, 1)
    feedback = feedback_of.fn(cfg, space, evaluations, None, 1)
    reflect.fn(cfg, space, feedback, 2)
    return lake


def account_for_blueprints(lake: Lake, cid: str, budget: int) -> tuple[int, int]:
    """Every budgeted blueprint ended verified or rejected; (verified, rejected)."""
    assert sum(d.budget for d in lake.read(Direction, cid, 1)) == budget
    blueprints = {b.blueprint_id for b in lake.read(Blueprint, cid, 1)}
    rejected = {r.blueprint_id for r in lake.read(Rejection, cid, 1)}
    tasks = {t.blueprint_id: t.task_id for t in lake.read(SynthTask, cid, 1)}
    passed = {v.task_id for v in lake.read(Verification, cid, 1) if v.passed}
    verified = {b for b in blueprints if tasks.get(b) in passed}
    assert len(blueprints | {r for r in rejected if "-b" in r}) == budget
    assert blueprints <= verified | rejected, "a blueprint vanished"
    return len(verified), len(rejected)


def test_a_round_with_every_role_on_llm_stores_verified_samples(
    routed: tuple[RoutedServer, ScriptedModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
) -> None:
    server, model = routed
    cfg = make_config(server, tmp_path, budget=model.budget)
    model.role_of = role_of(cfg)
    lake = run_round(cfg)
    cid = "llm-e2e"
    verified, rejected = account_for_blueprints(lake, cid, model.budget)
    assert (verified, rejected) == (2, 0)
    tasks = lake.read(SynthTask, cid, 1)
    assert {t.generator for t in tasks} == {"llm"}
    directions = lake.read(Direction, cid, 1)
    assert [d.budget for d in directions] == [1, 1]
    assert all("rejected" not in d.rationale for d in directions)
    [decision] = lake.read(ReflectorDecision, cid, 1)
    assert (decision.action, decision.rationale) == ("reallocate", "keep the space")
    rows = lake.read(LLMCall, cid, 1)
    assert len(rows) == server.request_count
    assert {r.outcome for r in rows} == {"ok"}
    assert {r.role for r in rows} == {
        "designer",
        "planner",
        "generator",
        "teacher",
        "user_simulator",
        "reflector",
    }
    by_role = Counter(r.role for r in rows)
    assert (by_role["designer"], by_role["planner"], by_role["generator"]) == (1, 2, 2)
    assert by_role["reflector"] == 1


@pytest.mark.slow  # timeouts are real waits: about 10 s
@pytest.mark.parametrize("routed", [0.2], indirect=True)
def test_a_round_with_a_fifth_of_the_answers_faulty_completes_and_accounts_for_every_fault(
    routed: tuple[RoutedServer, ScriptedModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
) -> None:
    server, model = routed
    cfg = make_config(server, tmp_path, budget=model.budget, timeout=0.3)
    model.role_of = role_of(cfg)
    lake = run_round(cfg)
    cid = "llm-e2e"
    verified, _ = account_for_blueprints(lake, cid, model.budget)
    assert verified > 0
    rows = lake.read(LLMCall, cid, 1)
    # One llm_calls row per request the server saw, faulty or not.
    assert len(rows) == server.request_count
    faults = sum(server.faults_served.values())
    malformed = sum(n for (_, kind), n in model.served.items() if kind.endswith("malformed"))
    share = (faults + malformed) / server.request_count
    assert 0.12 <= share <= 0.3, share
    # Transport faults: one error row each, of the matching class, on the right role.
    errors = Counter((r.role, r.error_class) for r in rows if r.outcome == "error")
    kinds = {
        "rate_limit": "RateLimitError",
        "server_error": "InternalServerError",
        "slow": "Timeout",
    }
    expected = Counter(
        {(model.role_of[m], kinds[k]): n for (m, k), n in server.faults_served.items()}
    )
    assert errors == expected
    assert {k for (_, k) in server.faults_served} == set(kinds)
    # Malformed JSON: a repair turn each; a malformed repair is a rejection with its reason.
    repairs = Counter(
        model.role_of[str(r.body["model"])]
        for r in server.requests
        if r.status == 200 and REPAIR_MARK in str(r.body["messages"][-1].get("content"))
    )
    for role in JSON_ROLES:
        first = model.served[(role, "malformed")]
        assert repairs[role] >= first  # every malformed first answer got its repair turn
    assert malformed > 0
    rejections = lake.read(Rejection, cid, 1)
    generate = [r for r in rejections if r.stage == "generate"]
    assert (
        sum("output rejected: truncated JSON" in r.reason for r in generate)
        == model.served[("generator", "repair_malformed")]
    )
    # A malformed repair rejects that one blueprint; the direction's others still plan.
    plan_rejected = [r for r in rejections if r.stage == "plan"]
    assert all("truncated JSON" in r.reason for r in plan_rejected), plan_rejected
    assert len(plan_rejected) == model.served[("planner", "repair_malformed")]
    designer_rejected = any(
        "llm designer output rejected" in d.rationale for d in lake.read(Direction, cid, 1)
    )
    assert designer_rejected == bool(model.served[("designer", "repair_malformed")])
    [decision] = lake.read(ReflectorDecision, cid, 1)
    assert ("output rejected" in decision.rationale) == bool(
        model.served[("reflector", "repair_malformed")]
    )
    assert not [r for r in rejections if "model call failed" in r.reason]


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.mark.slow  # a Prefect test server and two whole rounds: about a minute
def test_a_campaign_flow_with_every_role_on_llm(
    prefect_server: None,
    routed: tuple[RoutedServer, ScriptedModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
) -> None:
    from evosyn.flows.campaign import campaign_flow

    server, model = routed
    cfg = make_config(server, tmp_path, budget=model.budget, rounds=2)
    model.role_of = role_of(cfg)
    summaries = campaign_flow(cfg, "llm-e2e")
    assert [s.round for s in summaries] == [1, 2]
    lake = Lake(tmp_path / "lake")
    for r in (1, 2):
        passed = [v for v in lake.read(Verification, "llm-e2e", r) if v.passed]
        assert len(passed) == model.budget
        assert {t.generator for t in lake.read(SynthTask, "llm-e2e", r)} == {"llm"}
    [decision] = lake.read(ReflectorDecision, "llm-e2e", 1)
    assert decision.rationale == "keep the space"
    # Every role called its model; the rows wait in the gateways (or the lake, once flushed).
    gateways = roles_for(cfg).gateways
    calls = sum(g.pending for g in gateways) + len(lake.read(LLMCall, "llm-e2e"))
    assert calls == server.request_count
    assert {g.role for g in gateways} == set(model.role_of.values())
