"""Scripted models for the LLM roles over the test server, shared by tests and benchmarks.

A ``RoutedServer`` answers each request from the request itself (the role's model, the
blueprint in the Generator prompt, the task reference in the teacher and user prompts), so a
whole round runs against one server however many calls it makes, with as many conversations at
once as the loop runs. Transport faults (429 with Retry-After, 500, replies slower than the
timeout) come from the server's seeded ``Faults``; malformed JSON (an answer cut off
mid-object) from ``ScriptedModel``. ``llm_config`` is a campaign with every role on ``llm``
against such a server; ``run_round`` runs round 1 through the loop's task functions.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai_server import Faults, OpenAIServer, Reply
from synthesis_checks import exploration
from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage

from evosyn.agents.generator.base import GeneratorRejection
from evosyn.agents.generator.llm import LLMGenerator
from evosyn.agents.generator.single_agent import SingleAgentSynthesizer
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import synthesize
from evosyn.agents.teacher.llm import LLMTeacher
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import CampaignConfig, LLMSection, ModelSettings
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.airline.generator import AirlineGenerator, infeasible
from evosyn.environments.airline.teacher import AirlineTeacher
from evosyn.environments.dialogue_acts import realized_challenges
from evosyn.environments.quality import AGENT_GREETING
from evosyn.records import (
    Blueprint,
    Direction,
    Rejection,
    SynthesisSpace,
    SynthTask,
    Verification,
)
from evosyn.space import seed_space
from evosyn.storage import Lake
from evosyn.tasks.learning import evaluate_learner, feedback_of, train_learner
from evosyn.tasks.loop import (
    design,
    generate_tasks,
    lake_of,
    plan_blueprints,
    reflect,
    synthesize_batch,
)

#: Model name of each role on the test server (``openai/<name>`` in the config).
MODELS = {
    "designer": "designer-model",
    "planner": "planner-model",
    "generator": "generator-model",
    "teacher": "teacher-model",
    "user_simulator": "user-model",
    "reflector": "reflector-model",
}


def task_json(synth: SynthTask, ref: str | None = None) -> dict[str, Any]:
    """The JSON a perfect Generator model would write for ``synth`` (tagged with ``ref``)."""
    task = synth.task
    instructions = task.user_scenario.instructions
    criteria = task.evaluation_criteria
    tag = f" [ref {ref}]" if ref else ""
    assert task.description is not None and criteria is not None
    return {
        "purpose": f"{task.description.purpose}{tag}",
        # The user simulator's scenario shows the reason and the instructions: each carries
        # the tag its scripted conversation is found by (the agent is found by the user's words).
        "reason_for_call": f"{instructions.reason_for_call}{tag}",  # type: ignore[union-attr]
        "known_info": instructions.known_info,  # type: ignore[union-attr]
        # An id the user lacks is the missing_information challenge: a model names one only
        # when it is requested (the Generator's own check), whatever the programmatic task says.
        "unknown_info": instructions.unknown_info  # type: ignore[union-attr]
        if "missing_information" in synth.requested.get("interaction_challenge", [])
        else None,
        "task_instructions": f"{instructions.task_instructions}{tag}",  # type: ignore[union-attr]
        "gold_actions": [
            {"name": a.name, "arguments": a.arguments} for a in criteria.actions or []
        ],
        "communicate_info": criteria.communicate_info or [],
    }


def llm_config(
    server: OpenAIServer,
    tmp_path: Path,
    *,
    budget: int = 4,
    rounds: int = 1,
    timeout: float = 5.0,
    concurrency: int | None = None,
    max_attempts: int | None = None,
    cache: bool | None = False,
    shared_model: bool = False,
) -> CampaignConfig:
    """A campaign with every role on ``llm``, each on its own model of ``server``.

    ``concurrency`` and ``max_attempts`` set ``llm.default`` (per model; unset: the gateway's
    defaults). ``cache`` too; it is off unless asked for (``None``: the campaign default, on):
    a scripted pool smaller than the budget repeats tasks, and the cache would answer their
    identical teacher turns without the server, so requests would no longer match calls.

    With ``shared_model`` every role asks for the same model string (so one concurrency limit
    covers the whole round, as with one served model) at ``<server>/as/<role's model>``, which
    the ``RoutedServer`` answers as that role's model.
    """
    default = ModelSettings(
        api_base=server.url,
        timeout=timeout,
        concurrency=concurrency,
        max_attempts=max_attempts,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        cache=cache,
        cache_dir=str(tmp_path / "cache"),
    )
    return CampaignConfig.model_validate(
        {
            "campaign": {
                "name": "llm",
                "id": "llm-e2e",
                "budget_per_round": budget,
                "rounds": rounds,
                "seed": 0,
            },
            "lake": {"root": str(tmp_path / "lake")},
            "agents": {
                role: {"kind": "llm"}
                for role in ("designer", "planner", "generator", "teacher", "reflector")
            },
            "llm": LLMSection(
                default=default,
                roles={
                    role: ModelSettings(
                        model="openai/shared-model", api_base=f"{server.url}/as/{m}"
                    )
                    if shared_model
                    else ModelSettings(model=f"openai/{m}")
                    for role, m in MODELS.items()
                },
            ).model_dump(),
        }
    )


JSON_ROLES = ("designer", "planner", "generator", "reflector")
REPAIR_MARK = "Your previous answer cannot be used"
_REF = re.compile(r"\[ref ([A-Za-z0-9_.-]+)\]")
_BLUEPRINT = re.compile(r"## Blueprint\n(\{.*?\n\})\n", re.DOTALL)


class RoutedServer(OpenAIServer):
    """``OpenAIServer`` whose default reply is ``route(body)`` instead of a fixed one.

    ``latency_s`` delays every routed reply (not the faults), as a model's answer time.
    """

    def __init__(
        self,
        route: Callable[[dict[str, Any]], Reply],
        faults: Faults | None = None,
        latency_s: float = 0.0,
    ):
        super().__init__(faults=faults)
        self.route = route
        self.latency_s = latency_s
        self._local = threading.local()
        #: (model, fault) -> transport faults served: rate_limit, server_error or slow.
        self.faults_served: Counter[tuple[str, str]] = Counter()

    def _handle(self, path: str, body: dict[str, Any], authorization: str) -> Any:
        parts = path.split("/")
        if "as" in parts:
            # ``.../as/<model>/chat/completions``: a request for one shared model, answered as
            # that role's model (see ``llm_config``).
            body = {**body, "model": parts[parts.index("as") + 1]}
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
            reply = self.route(self._local.body)
        except Exception as exc:  # a broken script fails the call at once (400: no retries)
            return Reply(status=400, error_message=f"script error: {exc!r}")
        if self.latency_s:
            reply = dataclasses.replace(reply, delay_s=reply.delay_s + self.latency_s)
        return reply


def conversation(synth: SynthTask, drop_writes: bool = False) -> list[tuple[str, Reply]]:
    """(role, reply) pairs that make the orchestrator replay the programmatic teacher's rollout.

    With ``drop_writes`` the teacher's state-changing calls are left out (the rollout fails).
    """
    domain = get_domain("airline")
    turns: list[tuple[str, Reply]] = []
    challenges = synth.requested.get("interaction_challenge", [])
    for message in AirlineTeacher().messages(
        synth.task, 1, 0, synth.answers, challenges, synth.cues
    ):
        if isinstance(message, ToolMessage) or message.role == "system":
            continue
        if message.content == AGENT_GREETING:
            continue  # τ²-bench's orchestrator says the greeting itself

        who = "teacher" if isinstance(message, AssistantMessage) else "user_simulator"
        assert isinstance(message, AssistantMessage | UserMessage)
        if message.tool_calls:
            [call] = message.tool_calls
            if drop_writes and domain.symbol(call.name) == FunctionalSymbol.WRITE:
                continue
            turns.append((who, Reply.tool_call(call.name, call.arguments, call_id=call.id)))
        else:
            turns.append((who, Reply.text(str(message.content))))
    return turns


def gold_script(synth: SynthTask, drop_writes: bool = False) -> list[Reply]:
    """The replies of ``conversation`` in order, for a server scripted one reply at a time."""
    return [reply for _, reply in conversation(synth, drop_writes)]


def planned_write_task(campaign_id: str = "test") -> SynthTask:
    """A synthesized airline task from a planned blueprint whose gold makes a write."""
    space = seed_space("airline", campaign_id)
    direction = exploration(space, 12)
    domain = get_domain("airline")
    for bp in ProgrammaticPlanner(infeasible).plan(space, direction, 5):
        try:
            synth = AirlineGenerator().generate(bp, 5)
        except GeneratorRejection:
            continue
        actions = synth.task.evaluation_criteria.actions or []  # type: ignore[union-attr]
        if any(domain.symbol(a.name) == FunctionalSymbol.WRITE for a in actions):
            return synth
    raise AssertionError("the planner made no write task")


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
    direction = exploration(space, 4 * n, direction_id="pool", campaign_id="pool")
    generator = AirlineGenerator()
    found: list[Scripted] = []
    for bp in ProgrammaticPlanner(infeasible).plan(space, direction, seed):
        try:
            synth = generator.generate(bp, 3)
        except GeneratorRejection:
            continue
        wanted = synth.requested.get("interaction_challenge", [])
        messages = AirlineTeacher().messages(synth.task, 1, 0, synth.answers, wanted, synth.cues)
        if set(wanted) - realized_challenges(messages, wanted):
            continue  # synthesis would reject it at "realize"
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
        self._by_selections = {key(p.selections): p for p in pool}
        self._by_ref = {f"pool{i}": p for i, p in enumerate(pool)}
        self.p_malformed = p_malformed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._planned = 0
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
        return self._by_selections[key(json.loads(match.group(1))["selections"])].task

    def _reflector(self, prompt: str) -> dict[str, Any]:
        return {"reviews": [], "proposal": {"action": "no_change"}, "summary": "keep the space"}

    def _turn(self, role: str, messages: list[dict[str, Any]]) -> Reply:
        # Stateless, so that conversations of the same scripted task can run at once: the
        # k-th turn of ``role`` answers a request with k earlier turns of its own (each role
        # sees its own turns as ``assistant``; a repair rollout starts again from none).
        ref, script = self._script_of(role, messages)
        if script is None:
            return Reply(status=400, error_message="no scripted conversation for this task")
        # The teacher's view opens with τ²-bench's fixed greeting (an assistant message no
        # model wrote): count own turns after the first user message.
        roles = [m.get("role") for m in messages]
        first_user = roles.index("user") if "user" in roles else len(roles)
        own = roles[first_user:].count("assistant")
        mine = [reply for who, reply in script.turns if who == role]
        if own >= len(mine):
            return Reply(status=400, error_message=f"conversation {ref}: {role} has no turn left")
        self.served[(role, "ok")] += 1
        return mine[own]

    def _script_of(self, role: str, messages: list[dict[str, Any]]) -> tuple[str, Scripted | None]:
        """The conversation a turn belongs to, and its tag.

        The user simulator's scenario carries the task's tag. The agent, blind to the task as
        a τ²-bench agent is, is found by what the user has said to it so far: the scripted
        conversation whose user turns begin with those words.
        """
        if role == "user_simulator":
            match = _REF.search(str(messages[0].get("content")))
            ref = match.group(1) if match else ""
            return ref, self._by_ref.get(ref)
        said = [m.get("content") for m in messages if m.get("role") == "user"]
        for ref, script in self._by_ref.items():
            user = [reply.content for who, reply in script.turns if who == "user_simulator"]
            if said and user[: len(said)] == said:
                return ref, script
        return "", None


# ---------------------------------------------------------------------- running a round


def key(selections: dict[str, list[str]]) -> str:
    """A selection as a dict key."""
    return json.dumps(selections, sort_keys=True)


def role_of(cfg: CampaignConfig) -> dict[str, str]:
    """Model name on the server -> role, for a config of ``llm_config``."""
    return {
        str(s.model).removeprefix("openai/"): role for role, s in cfg.llm.roles.items() if s.model
    }


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
    tasks = generate_tasks.fn(cfg, blueprints).tasks if blueprints else []
    if tasks:
        synthesize_batch.fn(cfg, tasks, "chunk-000")
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


# ---------------------------------------------------------------------- a model that reads


_SHOWN_USER = re.compile(r"^\[users (\S+)\]", re.MULTILINE)
_REQUESTED = re.compile(r"^- (\w+): (.*)$", re.MULTILINE)


class _ShownUsers(AirlineGenerator):
    """The airline Generator restricted to the users a prompt shows."""

    def __init__(self, base: AirlineGenerator, shown: list[str]) -> None:
        super().__init__()
        self.__dict__["db"] = base.db  # parsed once, shared
        self._shown = shown

    @functools.cached_property
    def _users(self) -> list[Any]:
        return [self.db.users[k] for k in sorted(self._shown) if k in self.db.users]


class GroundedModel(ScriptedModel):
    """A model that writes each airline task from the records its prompt shows, and nothing else.

    A Generator or single-agent prompt is answered with the task the programmatic Generator
    makes for the prompt's blueprint on the users the prompt shows (and the teacher's
    conversation for it, in the single agent's answer or turn by turn to the LLM teacher and
    user simulator). A prompt whose users cannot realize the blueprint, or that shows none,
    gets prose without JSON, as a model that finds nothing to build on would write. Both arms
    of the monolithic ablation are thus held to the same knowledge: the prompt's records.
    """

    def __init__(self, role_of: dict[str, str], seed: int = 0) -> None:
        super().__init__(role_of, budget=0, pool=[])
        self.seed = seed
        self._base = AirlineGenerator()

    def __call__(self, body: dict[str, Any]) -> Reply:
        role = self.role_of.get(str(body.get("model")), "")
        prompt = str(body.get("messages", [{}])[0].get("content"))
        if role not in ("generator", "single_agent"):
            return super().__call__(body)
        with self._lock:
            synth = self._grounded(prompt, role)
            if synth is None:
                self.served[(role, "ungrounded")] += 1
                return Reply.text("The records shown cannot carry this blueprint.")
            self.served[(role, "ok")] += 1
            ref = f"grounded{len(self._by_ref)}"
            turns = conversation(synth)
            self._by_ref[ref] = Scripted(synth.requested, task_json(synth, ref=ref), turns)
            if role == "generator":
                return Reply.text(json.dumps(self._by_ref[ref].task))
            return Reply.text(json.dumps({"task": task_json(synth), "conversation": _turns(turns)}))

    def _grounded(self, prompt: str, role: str) -> SynthTask | None:
        shown = _SHOWN_USER.findall(prompt)
        if role == "generator":
            match = _BLUEPRINT.search(prompt)
            assert match, "the generator prompt has no blueprint block"
            selections = json.loads(match.group(1))["selections"]
        else:
            block = prompt.split("Requested factor values:", 1)[1].split("\n\n", 1)[0]
            selections = {
                k: [v for v in vs.split(", ") if v] for k, vs in _REQUESTED.findall(block)
            }
        blueprint = Blueprint(
            campaign_id="grounded",
            round=1,
            blueprint_id="grounded",
            direction_id="grounded",
            space_version=1,
            selections=selections,
            intent="grounded",
        )
        if not shown:
            return None
        try:
            return _ShownUsers(self._base, shown).generate(blueprint, self.seed)
        except GeneratorRejection:
            return None


def _turns(turns: list[tuple[str, Reply]]) -> list[dict[str, Any]]:
    """``conversation`` as the single agent's proposal writes it."""
    out: list[dict[str, Any]] = []
    for who, reply in turns:
        role = "assistant" if who == "teacher" else "user"
        if reply.tool_calls:
            function = reply.tool_calls[0]["function"]
            call = {"name": function["name"], "arguments": json.loads(function["arguments"])}
            out.append({"role": role, "tool_call": call})
        else:
            out.append({"role": role, "content": reply.content})
    return out


def grounded_shares(n: int, folder: Path, seed: int = 0, entities: int = 3) -> dict[str, float]:
    """Verified share of ``n`` planned airline blueprints in each arm, on one ``GroundedModel``.

    The modular arm is the LLM Generator and the LLM teacher, the single-agent arm the
    ``SingleAgentSynthesizer`` showing ``entities`` people; both ask the same server and are
    verified by the same replay verifier. ``folder`` holds the campaign's lake and cache.
    """
    model: list[GroundedModel] = []
    with RoutedServer(lambda body: model[0](body)) as server:
        cfg = llm_config(server, folder, budget=n)
        data = cfg.model_dump()
        data["llm"]["roles"]["single_agent"] = {"model": "openai/single-model"}
        cfg = CampaignConfig.model_validate(data)
        model.append(GroundedModel(role_of(cfg), seed))
        space = seed_space("airline", "grounded")
        direction = exploration(space, n, direction_id="grounded")
        blueprints = ProgrammaticPlanner(infeasible).plan(space, direction, seed)
        verifier = ReplayVerifier("airline")
        generator, teacher = LLMGenerator.from_config(cfg), LLMTeacher.from_config(cfg)
        modular = synthesize(blueprints, generator, teacher, verifier, seed)
        mono = SingleAgentSynthesizer.from_config(cfg)
        mono.entities = entities
        single = synthesize(blueprints, mono, mono, verifier, seed)
    return {"modular": len(modular.verified) / n, "single_agent": len(single.verified) / n}
