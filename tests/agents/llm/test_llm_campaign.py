"""Every role on ``llm`` against the test server: one round end to end, clean and with faults.

The scripted models live in ``tests/llm_scripts.py`` (the round-overhead benchmark uses them
too). A ``RoutedServer`` answers each request from the request itself (the role's model, the
blueprint in the Generator prompt, the task reference in the teacher and user prompts), so a
whole round runs against one server however many calls it makes. Transport faults (429 with
Retry-After, 500, replies slower than the timeout) come from the server's seeded ``Faults``;
malformed JSON (an answer cut off mid-object) from ``ScriptedModel``. Both are counted, and the
tests check that ``llm_calls`` rows and rejection reasons account for every one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import (
    JSON_ROLES,
    REPAIR_MARK,
    RoutedServer,
    Scripted,
    ScriptedModel,
    account_for_blueprints,
    realizable_pool,
    role_of,
    run_round,
)
from openai_server import Faults

from evosyn.config import CampaignConfig
from evosyn.records import (
    Direction,
    LLMCall,
    ReflectorDecision,
    Rejection,
    SynthTask,
    Verification,
)
from evosyn.space import seed_space
from evosyn.storage import Lake
from evosyn.tasks.loop import roles_for


@pytest.fixture(scope="module")
def pool(to_task_json: Callable[..., dict[str, Any]]) -> list[Scripted]:
    return realizable_pool(seed_space("airline", "pool"), 6, to_task_json)


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
    called = {c.role for c in lake.read(LLMCall, "llm-e2e")}
    called |= {g.role for g in gateways if g.pending}
    assert called == set(model.role_of.values())
    # The labeller reads invented factors only: this campaign invents none.
    assert {g.role for g in gateways} - called == {"labeller"}
