"""The response cache of a campaign's roles: on by default, one folder per campaign and lake.

A resumed campaign (a new process, the same campaign id and lake) gets its own answers back
without asking the server; another campaign id, or the same id in another lake, asks again;
``cache: false`` always asks; a gateway outside any campaign does not cache unless told to.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import MODELS, gold_script, llm_config, planned_write_task
from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import ConcurrencyLimiter, Gateway, campaign_scope
from evosyn.agents.llm_output import ask_json
from evosyn.agents.roles import build_roles
from evosyn.agents.synthesis import MAX_REPAIRS, synthesize
from evosyn.agents.teacher.llm import LLMTeacher
from evosyn.agents.verifier import ReplayVerifier
from evosyn.config import LLMSection, ModelSettings
from evosyn.records import Blueprint, SynthTask

HELLO = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """A scriptable server, with a dummy OpenAI key in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as srv:
        yield srv


def gateway(
    server: OpenAIServer,
    tmp_path: Path,
    campaign_id: str | None,
    lake: str = "lake",
    model: str = "openai/m",
    **settings: Any,
) -> Gateway:
    """A fresh gateway (as a new process would build it) of role ``teacher``."""
    llm = LLMSection(
        default=ModelSettings(
            model=model,
            api_base=server.url,
            timeout=5.0,
            cache_dir=str(tmp_path / "cache"),
            **settings,
        )
    )
    return Gateway.from_config(
        llm,
        "teacher",
        limiter=ConcurrencyLimiter(),
        campaign_id=campaign_id,
        lake_root=None if campaign_id is None else str(tmp_path / lake),
    )


def test_a_campaign_gets_its_own_answers_back_and_another_campaign_new_ones(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.script(Reply.text("c1's answer"), Reply.text("c2's answer"), Reply.text("c1 elsewhere"))
    priced = "openai/gpt-4o-mini"  # in litellm's price map: the reply has a cost
    first = gateway(server, tmp_path, "c1", model=priced).complete(HELLO)
    assert (first.text, first.cached, server.request_count) == ("c1's answer", False, 1)
    assert first.cost is not None and first.cost > 0
    # The same campaign in a new process (a resume): answered from the cache, not the server.
    resumed = gateway(server, tmp_path, "c1", model=priced)
    again = resumed.complete(HELLO)
    assert (again.text, again.cached, server.request_count) == ("c1's answer", True, 1)
    # The reply is described as first produced; the hit itself is free.
    assert (again.usage, again.cost) == (first.usage, first.cost)
    [row] = resumed.records("c1", 1)
    assert (row.outcome, row.tokens_in, row.tokens_out, row.cost) == ("cached", 0, 0, 0.0)
    # Another campaign id draws its own sample.
    other = gateway(server, tmp_path, "c2", model=priced).complete(HELLO)
    assert (other.text, other.cached, server.request_count) == ("c2's answer", False, 2)
    # So does the same id in another lake: an id names a campaign only within its lake.
    elsewhere = gateway(server, tmp_path, "c1", lake="other-lake", model=priced).complete(HELLO)
    assert (elsewhere.text, elsewhere.cached, server.request_count) == ("c1 elsewhere", False, 3)
    folders = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(folders) == 3 and sum(f.startswith("c1-") for f in folders) == 2, folders


def test_cache_false_opts_a_campaign_out(server: OpenAIServer, tmp_path: Path) -> None:
    for _ in range(2):
        assert gateway(server, tmp_path, "c1", cache=False).complete(HELLO).cached is False
    assert server.request_count == 2
    assert not (tmp_path / "cache").exists()


def test_a_gateway_outside_a_campaign_caches_only_when_told(
    server: OpenAIServer, tmp_path: Path
) -> None:
    for _ in range(2):
        assert gateway(server, tmp_path, None).complete(HELLO).cached is False
    assert server.request_count == 2
    assert not (tmp_path / "cache").exists()
    gateway(server, tmp_path, None, cache=True).complete(HELLO)
    assert gateway(server, tmp_path, None, cache=True).complete(HELLO).cached is True
    assert server.request_count == 3


def test_a_repair_turn_is_a_new_request_and_a_resume_replays_the_whole_exchange(
    server: OpenAIServer, tmp_path: Path
) -> None:
    good = json.dumps({"answer": 42})
    server.script(Reply.text(good[:5]), Reply.text(good))

    def parse(data: dict[str, Any]) -> int:
        return int(data["answer"])

    first = gateway(server, tmp_path, "c1")
    assert ask_json(first, "the question", parse, seed=3) == 42
    # The repair turn quotes the bad reply, so it is not answered from the cache.
    assert server.request_count == 2
    assert [r.outcome for r in first.records("c1", 1)] == ["ok", "ok"]
    resumed = gateway(server, tmp_path, "c1")
    assert ask_json(resumed, "the question", parse, seed=3) == 42
    assert server.request_count == 2
    assert [r.outcome for r in resumed.records("c1", 1)] == ["cached", "cached"]
    # A different seed is a different request (as a repair rollout's is).
    server.script(Reply.text(good))
    assert ask_json(resumed, "the question", parse, seed=4) == 42
    assert server.request_count == 3


def test_the_roles_of_a_campaign_cache_in_its_folder(server: OpenAIServer, tmp_path: Path) -> None:
    cfg = llm_config(server, tmp_path, cache=None)
    scope = campaign_scope("llm-e2e", cfg.lake.root)
    gateways = build_roles(cfg).gateways
    # And the labeller (an invented factor's values, for the Generator and the Reflector).
    assert {g.role for g in gateways} == set(MODELS) | {"labeller"}
    for g in gateways:
        assert g.campaign_id == "llm-e2e"
        assert g.cache is not None and g.cache.root == tmp_path / "cache" / scope
    off = build_roles(llm_config(server, tmp_path, cache=False)).gateways
    assert all(g.cache is None for g in off)


def test_campaign_scope_names_a_safe_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert campaign_scope("c1") == "c1"
    assert campaign_scope("c1", "lake") == campaign_scope("c1", "./lake")
    assert campaign_scope("c1", "lake") == campaign_scope("c1", tmp_path / "lake")
    assert campaign_scope("c1", "s3://b/lake") != campaign_scope("c1", "s3://b/other")
    for bad in ("../up", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="cannot name a cache folder"):
            campaign_scope(bad, "lake")


# ------------------------------------------------------------------ repair rollouts


def test_repair_rollouts_ask_the_server_and_a_resume_replays_all_three(
    server: OpenAIServer, tmp_path: Path
) -> None:
    task = planned_write_task("c1")
    blueprint = Blueprint(
        campaign_id="c1",
        round=1,
        blueprint_id=task.blueprint_id,
        direction_id="d0",
        space_version=1,
        selections={},
        intent="test",
    )

    class Fixed:
        def generate(self, blueprint: Blueprint, seed: int, screen: Any = None) -> SynthTask:
            return task

    def teacher() -> LLMTeacher:
        llm = LLMSection(
            default=ModelSettings(
                model="openai/teacher-model",
                api_base=server.url,
                timeout=5.0,
                cache_dir=str(tmp_path / "cache"),
            ),
            roles={"user_simulator": ModelSettings(model="openai/user-model")},
        )
        agent = Gateway.from_config(llm, "teacher", campaign_id="c1", lake_root=tmp_path)
        user = Gateway.from_config(llm, "user_simulator", campaign_id="c1", lake_root=tmp_path)
        return LLMTeacher(agent, user)

    verifier = ReplayVerifier("airline")
    bad = gold_script(task, drop_writes=True)
    server.script(*bad, *bad, *bad)
    first = teacher()
    batch = synthesize([blueprint], Fixed(), first, verifier, seed=3)
    [verdict] = batch.verifications
    assert verdict.repair_attempts == MAX_REPAIRS and not verdict.passed
    # Each repair rollout (its own seed, a repair section) went to the server, none to the
    # cache, though the first turns of the user simulator read alike.
    assert server.request_count == 3 * len(bad)
    rows = [r for g in first.gateways for r in g.records("c1", 1)]
    assert {r.outcome for r in rows} == {"ok"}
    # The same campaign again (a resume): all three rollouts come back from the cache.
    again = teacher()
    replayed = synthesize([blueprint], Fixed(), again, verifier, seed=3)
    assert server.request_count == 3 * len(bad)
    assert replayed.trajectories == batch.trajectories
    assert replayed.verifications[0].reasons == verdict.reasons
    rows = [r for g in again.gateways for r in g.records("c1", 1)]
    assert len(rows) == 3 * len(bad) and {r.outcome for r in rows} == {"cached"}
