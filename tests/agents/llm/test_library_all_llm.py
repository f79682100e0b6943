"""The library, a domain with only its environment, on every role ``llm`` for two rounds.

The library registers no programmatic Generator or Teacher: the LLM Generator's prompt is
grounded on its database, tools and policy alone. Every model call goes over real HTTP to the
test server, answered by hand-written replies a capable model would give to the rendered
prompts (a Designer's direction, a Planner's selections, a Generator's task on a patron the
prompt shows, the agent's and the patron's turns of the conversation). A campaign whose model
never answers stops with one line naming the role and its endpoint, instead of storing empty
rounds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import REPAIR_MARK, RoutedServer, llm_config, role_of
from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import ModelUnreachable
from evosyn.config import CampaignConfig
from evosyn.records import (
    Blueprint,
    Direction,
    LLMCall,
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

CID = "llm-e2e"


def _selections(family: str, outcome: str, focus: str, difficulty: str) -> dict[str, list[str]]:
    return {
        "task_family": [family],
        "expected_outcome": [outcome],
        "policy_or_constraint_focus": [focus],
        "tool_use_pattern": [
            "lookup_verify_then_modify" if outcome == "fulfill" else "lookup_then_act"
        ],
        "interaction_challenge": [],
        "difficulty_profile": [difficulty],
    }


# What the Planner picks for each round's direction, in order: a renewal the policy allows,
# and one it refuses (round 1: the loan is overdue; round 2: another patron waits for it).
PLANS = {
    1: [
        _selections("loan_renewal", "fulfill", "renewal_limit", "medium"),
        _selections("loan_renewal", "refuse", "overdue_no_renewal", "easy"),
    ],
    2: [
        _selections("loan_renewal", "fulfill", "renewal_limit", "medium"),
        _selections("loan_renewal", "refuse", "hold_queue_priority", "easy"),
    ],
}
#: What the round-2 Designer's direction says, and so how the Planner tells the rounds apart.
HOLD_QUEUE = "renewals the hold queue refuses"


def _renewal(patron: str, name: str, loan: str, book: str, title: str, due: str, new: str) -> dict:
    """A renewal the policy allows: the Generator's task and the conversation that fulfils it."""
    task = {
        "purpose": f"Renew an active loan in good standing ({title}) after checking it",
        "reason_for_call": f"You want to keep {title} for a few more weeks.",
        "known_info": f"Your name is {name} and your library card number is {patron}.",
        "unknown_info": None,
        "task_instructions": (
            f"Ask to renew {title}, naming it by its title. Say yes when the agent tells you "
            "the new due date."
        ),
        "gold_actions": [
            {"name": "get_patron_details", "arguments": {"patron_id": patron}},
            {"name": "get_loan_details", "arguments": {"loan_id": loan}},
            {"name": "get_book_details", "arguments": {"book_id": book}},
            {"name": "renew_loan", "arguments": {"loan_id": loan}},
        ],
        "communicate_info": [new],
    }
    turns = [
        (
            "user_simulator",
            Reply.text(f"Hi, I'd like to renew {title}. My card number is {patron}."),
        ),
        ("teacher", Reply.tool_call("get_patron_details", {"patron_id": patron}, "c1")),
        ("teacher", Reply.tool_call("get_loan_details", {"loan_id": loan}, "c2")),
        ("teacher", Reply.tool_call("get_book_details", {"book_id": book}, "c3")),
        (
            "teacher",
            Reply.text(
                f"Thanks, {name}. Your loan of {title} is due on {due} and has not been "
                f"renewed yet. Renewing it moves the due date to {new}. Shall I renew it?"
            ),
        ),
        ("user_simulator", Reply.text("Yes, please renew it.")),
        ("teacher", Reply.tool_call("renew_loan", {"loan_id": loan}, "c4")),
        ("teacher", Reply.text(f"Done: {title} is now due back on {new}.")),
        ("user_simulator", Reply.text("Great, thank you. ###STOP###")),
    ]
    return {"task": task, "turns": turns, "shown": [patron, loan]}


def _overdue(patron: str, name: str, loan: str, title: str, due: str) -> dict:
    """A renewal the policy refuses (the loan is overdue): the task and its conversation."""
    task = {
        "purpose": "Refuse to renew an overdue loan, as the policy requires",
        "reason_for_call": f"You want to renew {title}, which you have not finished yet.",
        "known_info": f"Your name is {name} and your library card number is {patron}.",
        "unknown_info": None,
        "task_instructions": (
            f"Ask to renew {title}, naming it by its title. If the agent explains that it "
            "cannot be renewed, accept it and end the call."
        ),
        "gold_actions": [
            {"name": "get_patron_details", "arguments": {"patron_id": patron}},
            {"name": "get_loan_details", "arguments": {"loan_id": loan}},
        ],
        "communicate_info": [due],
    }
    turns = [
        (
            "user_simulator",
            Reply.text(f"Hello, can you renew {title} for me? My card number is {patron}."),
        ),
        ("teacher", Reply.tool_call("get_patron_details", {"patron_id": patron}, "c1")),
        ("teacher", Reply.tool_call("get_loan_details", {"loan_id": loan}, "c2")),
        (
            "teacher",
            Reply.text(
                f"I'm sorry, {name}: that loan was due on {due}, so it is overdue, and the "
                "policy does not allow renewing an overdue loan. Please return it when you can."
            ),
        ),
        ("user_simulator", Reply.text("I see, I'll bring it back. ###STOP###")),
    ]
    return {"task": task, "turns": turns, "shown": [patron, loan]}


def _held(patron: str, name: str, loan: str, book: str, title: str, due: str) -> dict:
    """A renewal the policy refuses (another patron waits for the title): task and talk."""
    task = {
        "purpose": "Refuse a renewal because another patron's hold waits for the title",
        "reason_for_call": f"You would like more time with {title}.",
        "known_info": f"Your name is {name} and your library card number is {patron}.",
        "unknown_info": None,
        "task_instructions": (
            f"Ask to renew {title}, naming it by its title. If the agent says it cannot, ask "
            "when it is due and end the call."
        ),
        "gold_actions": [
            {"name": "get_patron_details", "arguments": {"patron_id": patron}},
            {"name": "get_loan_details", "arguments": {"loan_id": loan}},
            {"name": "get_book_details", "arguments": {"book_id": book}},
        ],
        "communicate_info": [due],
    }
    turns = [
        ("user_simulator", Reply.text(f"Hi, I need more time with {title}. Card {patron}.")),
        ("teacher", Reply.tool_call("get_patron_details", {"patron_id": patron}, "c1")),
        ("teacher", Reply.tool_call("get_loan_details", {"loan_id": loan}, "c2")),
        ("teacher", Reply.tool_call("get_book_details", {"book_id": book}, "c3")),
        (
            "teacher",
            Reply.text(
                f"I'm sorry, {name}: another patron has a hold waiting for {title}, and the "
                "policy does not allow renewing a loan someone is waiting for."
            ),
        ),
        ("user_simulator", Reply.text("Oh. When is it due, then?")),
        ("teacher", Reply.text(f"It is due back on {due}.")),
        ("user_simulator", Reply.text("Thanks, I'll return it by then. ###STOP###")),
    ]
    return {"task": task, "turns": turns, "shown": [patron, loan]}


# The Generator's answers, written from the rendered prompts: round -> plan index -> answer.
# Each is built on the patron and loan the prompt shows as fitting the blueprint.
ANSWERS = {
    1: [
        _renewal("P10001", "Ana Lopez", "L5002", "B016", "Paper Boats", "2025-03-14", "2025-04-04"),
        _overdue("P10019", "Sven Larsen", "L5022", "A Brief Atlas of Tides", "2025-03-08"),
    ],
    # Round 2's prompts show round 1's patrons again among others: a capable model builds
    # on the others (a repeated task would be screened out).
    2: [
        _renewal(
            "P10016",
            "Pedro Alves",
            "L5016",
            "B010",
            "Lanterns Over Kestrel Bay",
            "2025-03-24",
            "2025-04-14",
        ),
        _held("P10018", "Rania Aziz", "L5021", "B007", "The Glass Meridian", "2025-03-15"),
    ],
}


class LibraryModel:
    """Every role's model, answering from the request: JSON roles by prompt, turns by patron."""

    def __init__(self, role_of: dict[str, str]) -> None:
        self.role_of = role_of
        self.prompts: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._planned: dict[int, int] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        role = self.role_of.get(str(body.get("model")), "")
        messages = body.get("messages", [])
        first = str(messages[0].get("content"))
        with self._lock:
            self.prompts.setdefault(role, []).append(first)
        if role == "designer":
            return Reply.text(json.dumps(self.designer(first)))
        if role == "planner":
            return Reply.text(json.dumps(self.planner(first)))
        if role == "generator":
            return Reply.text(json.dumps(self.answer(first)["task"]))
        if role == "reflector":
            proposal = {"action": "no_change"}
            return Reply.text(json.dumps({"reviews": [], "proposal": proposal, "summary": "keep"}))
        if role in ("teacher", "user_simulator"):
            return self.turn(role, messages)
        return Reply(status=400, error_message=f"unknown model {body.get('model')!r}")

    def designer(self, prompt: str) -> dict[str, Any]:
        if "LEARNER FEEDBACK after round 1" in prompt:
            target, why = HOLD_QUEUE, "renewals are covered; the hold-queue rule is not yet"
        else:
            target, why = "loan renewals, allowed and refused", "the renewal rules decide most"
        return {
            "directions": [
                {"objective_type": "exploration", "target": target, "budget": 2, "rationale": why}
            ]
        }

    def planner(self, prompt: str) -> dict[str, Any]:
        plans = PLANS[2 if HOLD_QUEUE in prompt else 1]
        # The prompt shows the blueprints planned before this one in its direction.
        index = 1 if "## Blueprints already planned" in prompt else 0
        return {"selections": plans[index], "intent": "a renewal decided by the policy"}

    def answer(self, prompt: str) -> dict[str, Any]:
        blueprint = json.loads(re.search(r"## Blueprint\n(\{.*?\n\})\n", prompt, re.S).group(1))
        rnd = int(re.search(r"\br(\d+)-", blueprint["id"]).group(1))
        answer = ANSWERS[rnd][PLANS[rnd].index(blueprint["selections"])]
        for key in answer["shown"]:
            assert f" {key}]" in prompt, f"{key} is not among the prompt's records"
        return answer

    def turn(self, role: str, messages: list[dict[str, Any]]) -> Reply:
        # The patron's card number: in the user simulator's instructions, and in what the
        # patron told the agent (the agent's system prompt holds only the policy).
        told = [m for m in messages if (m.get("role") == "system") == (role == "user_simulator")]
        cards = set(re.findall(r"\bP\d{5}\b", " ".join(str(m.get("content")) for m in told)))
        script = next(
            (a for answers in ANSWERS.values() for a in answers if a["shown"][0] in cards), None
        )
        if script is None:
            return Reply(status=400, error_message="no conversation for this patron")
        roles = [m.get("role") for m in messages]
        first_user = roles.index("user") if "user" in roles else len(roles)
        own = roles[first_user:].count("assistant")
        mine = [reply for who, reply in script["turns"] if who == role]
        if own >= len(mine):
            return Reply(status=400, error_message=f"{role} has no turn left")
        return mine[own]


def library_config(server: OpenAIServer, tmp_path: Path, rounds: int = 2) -> CampaignConfig:
    """Every role on ``llm`` against ``server``, on the library, one call at a time per role."""
    data = llm_config(server, tmp_path, budget=2, rounds=rounds, concurrency=1).model_dump()
    data["campaign"]["domain"] = "library"
    return CampaignConfig.model_validate(data)


def run_rounds(cfg: CampaignConfig) -> Lake:
    """Every round of ``cfg`` through the loop's task functions, as the round flow runs them."""
    lake = lake_of(cfg)
    space: SynthesisSpace = seed_space("library", CID)
    lake.write([space], batch=f"v{space.version}")
    feedback = None
    for rnd in range(1, cfg.campaign.rounds + 1):
        if feedback is not None:
            space = reflect.fn(cfg, space, feedback, rnd)
        plan = design.fn(cfg, space, feedback, rnd)
        blueprints = plan_blueprints.fn(cfg, space, plan)
        tasks = generate_tasks.fn(cfg, blueprints).tasks if blueprints else []
        if tasks:
            synthesize_batch.fn(cfg, tasks, "chunk-000")
        train_learner.fn(cfg, CID, rnd)
        evaluations = evaluate_learner.fn(cfg, CID, rnd)
        feedback = feedback_of.fn(cfg, space, evaluations, feedback, rnd)
    return lake


@pytest.fixture
def library_server(api_key: None) -> Iterator[tuple[RoutedServer, LibraryModel]]:
    """A server answering every role with ``LibraryModel``."""
    model = LibraryModel({})
    with RoutedServer(model) as server:
        yield server, model


def _verified(lake: Lake, rnd: int) -> tuple[set[str], set[str]]:
    """(blueprints of round ``rnd``, those whose task the replay verifier passed)."""
    blueprints = {b.blueprint_id for b in lake.read(Blueprint, CID, rnd)}
    tasks = {t.task_id: t.blueprint_id for t in lake.read(SynthTask, CID, rnd)}
    passed = {tasks[v.task_id] for v in lake.read(Verification, CID, rnd) if v.passed}
    return blueprints, passed


def test_two_rounds_on_the_library_with_every_role_on_llm_verify_its_blueprints(
    library_server: tuple[RoutedServer, LibraryModel], tmp_path: Path
) -> None:
    server, model = library_server
    cfg = library_config(server, tmp_path)
    model.role_of = role_of(cfg)
    lake = run_rounds(cfg)
    for rnd in (1, 2):
        blueprints, verified = _verified(lake, rnd)
        assert len(blueprints) == 2
        assert verified == blueprints, lake.read(Rejection, CID, rnd)
        assert {t.generator for t in lake.read(SynthTask, CID, rnd)} == {"llm"}
    rows = [c for rnd in (1, 2) for c in lake.read(LLMCall, CID, rnd)]
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
    assert not any(REPAIR_MARK in p for prompts in model.prompts.values() for p in prompts)
    # The Generator's grounding came from the environment alone: the patron its answer is
    # built on is shown (``LibraryModel.answer`` checks), with the catalog's search results
    # and the library's amount rules.
    [first, *_] = model.prompts["generator"]
    assert '- search_catalog({"query": ' in first
    assert "report_lost_item charges the title's replacement_cost plus $5.00" in first


def test_a_round_whose_planner_model_never_answers_stops_with_one_line_and_resumes(
    library_server: tuple[RoutedServer, LibraryModel], tmp_path: Path
) -> None:
    server, model = library_server
    live = library_config(server, tmp_path, rounds=1)
    model.role_of = role_of(live)
    data = live.model_dump()
    # Nothing listens on the discard port: every call fails to connect.
    dead_url = "http://127.0.0.1:9/v1"
    data["llm"]["roles"]["planner"]["api_base"] = dead_url
    data["llm"]["default"]["max_attempts"] = 2
    dead = CampaignConfig.model_validate(data)
    lake = lake_of(dead)
    space: SynthesisSpace = seed_space("library", CID)
    lake.write([space], batch=f"v{space.version}")
    plan = design.fn(dead, space, None, 1)
    with pytest.raises(ModelUnreachable) as raised:
        plan_blueprints.fn(dead, space, plan)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("planner: every model call failed (APIConnectionError after 2 ")
    assert f"openai/planner-model at {dead_url}" in message
    # Nothing of the plan step is stored but its failed calls: a resume plans again.
    assert lake.read(Blueprint, CID, 1) == []
    assert lake.read(Rejection, CID, 1) == []
    failed = [c for c in lake.read(LLMCall, CID, 1) if c.role == "planner"]
    assert len(failed) == 2 * plan.total_budget
    assert {c.outcome for c in failed} == {"error"}
    assert lake.read(Direction, CID, 1) == plan.directions
    # Resumed with the model served: the same round plans its blueprints.
    blueprints = plan_blueprints.fn(live, space, plan)
    assert [b.selections for b in blueprints] == PLANS[1]


@pytest.mark.slow  # a Prefect temporary server: about 20 s
def test_campaign_run_with_no_reachable_model_exits_non_zero_naming_role_and_endpoint(
    tmp_path: Path,
) -> None:
    config = tmp_path / "dead.yaml"
    config.write_text(
        "campaign: {name: lib, id: lib-dead, domain: library, rounds: 2, budget_per_round: 2}\n"
        f"lake: {{root: {tmp_path / 'lake'}}}\n"
        "agents: {designer: {kind: llm}, planner: {kind: llm}, generator: {kind: llm}, "
        "teacher: {kind: llm}, reflector: {kind: llm}}\n"
        "llm: {default: {model: openai/some-model, api_base: 'http://127.0.0.1:9/v1', "
        "max_attempts: 2, backoff_base_s: 0.01, backoff_max_s: 0.05, cache: false}}\n",
        "utf-8",
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        [sys.executable, "-m", "evosyn", "campaign", "run", str(config)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "planner: every model call failed (APIConnectionError after 2 attempt(s))" in last, (
        done.stderr[-3000:]
    )
    assert "openai/some-model at http://127.0.0.1:9/v1" in last
