"""A round on ``llm`` under ``llm.budget_usd`` or ``llm.round_budget_usd``: stopped at the cap,
resumed with a larger one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_scripts import (
    MODELS,
    RoutedServer,
    Scripted,
    ScriptedModel,
    account_for_blueprints,
    realizable_pool,
    role_of,
    run_round,
)

from evosyn.agents.gateway import BudgetExceeded
from evosyn.agents.gateway.budget import forget_spend
from evosyn.config import CampaignConfig, ModelPrice
from evosyn.records import TABLES, LLMCall, SynthTask, Trajectory, Verification
from evosyn.space import seed_space
from evosyn.storage import Lake

CID = "llm-e2e"
BUDGET = 2
# litellm cannot price the test server's models: the configured price does.
PRICES = {
    f"openai/{m}": ModelPrice(input_per_mtok=1000.0, output_per_mtok=4000.0)
    for m in MODELS.values()
}


@pytest.fixture
def routed(
    api_key: None, to_task_json: Callable[..., dict[str, Any]]
) -> Iterator[tuple[RoutedServer, ScriptedModel]]:
    pool: list[Scripted] = realizable_pool(seed_space("airline", "pool"), BUDGET, to_task_json)
    model = ScriptedModel({}, BUDGET, pool)
    with RoutedServer(model) as server:
        yield server, model


def capped(
    make_config: Callable[..., CampaignConfig],
    server: RoutedServer,
    run_dir: Path,
    cap: float | None,
    key: str = "budget_usd",
) -> CampaignConfig:
    cfg = make_config(server, run_dir, budget=BUDGET, cache=None)
    cfg.llm.prices = dict(PRICES)
    setattr(cfg.llm, key, cap)
    return cfg


def keyed_rows(lake: Lake) -> dict[str, Counter[tuple[Any, ...]]]:
    """Each table's row keys (with counts) of the campaign, ``llm_calls`` aside."""
    out = {}
    for name, cls in TABLES.items():
        if cls is LLMCall or not cls.KEY:
            continue
        out[name] = Counter(tuple(getattr(r, k) for k in cls.KEY) for r in lake.read(cls, CID))
    return out


@pytest.mark.parametrize("key", ["budget_usd", "round_budget_usd"])
def test_a_round_stops_at_the_cap_and_a_resume_with_a_larger_cap_finishes_it(
    routed: tuple[RoutedServer, ScriptedModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
    key: str,
) -> None:
    server, model = routed
    # Uncapped, the round costs this much.
    reference = capped(make_config, server, tmp_path / "reference", None)
    model.role_of = role_of(reference)
    whole = run_round(reference)
    total = sum(r.cost or 0.0 for r in whole.read(LLMCall, CID))
    assert total > 0
    assert {r.round for r in whole.read(LLMCall, CID)} == {1}
    sent_whole = server.request_count

    # Capped at half: the round stops with one clear line naming the cap and the figures.
    cap = total / 2
    cfg = capped(make_config, server, tmp_path / "capped", cap, key)
    before = server.request_count
    with pytest.raises(BudgetExceeded) as stopped:
        run_round(cfg)
    message = str(stopped.value)
    assert "\n" not in message and f"${cap:g} cap" in message and f"raise llm.{key} and" in message
    spender = "round 1's" if key == "round_budget_usd" else "the campaign's"
    assert message.startswith(f"llm.{key} reached: {spender} model calls cost $")
    lake = Lake(tmp_path / "capped" / "lake")
    rows = lake.read(LLMCall, CID)
    spent = sum(r.cost or 0.0 for r in rows)
    assert f"${stopped.value.spent_usd:.4f}" in message and stopped.value.spent_usd >= cap
    # The calls were written (the spend survives a restart); they stopped just past the cap.
    assert len(rows) == server.request_count - before
    assert cap <= spent < total
    assert len(lake.read(Verification, CID)) < len(whole.read(Verification, CID))

    # A new process (the spend read back from the lake), a larger cap: the round finishes.
    forget_spend()
    more = capped(make_config, server, tmp_path / "capped", 2 * total, key)
    run_round(more)
    verified, rejected = account_for_blueprints(lake, CID, BUDGET)
    assert (verified, rejected) == account_for_blueprints(whole, CID, BUDGET) == (BUDGET, 0)
    # Nothing lost, nothing duplicated: the same keys, each once, as the uncapped round.
    got, want = keyed_rows(lake), keyed_rows(whole)
    assert got == want
    assert all(n == 1 for counts in got.values() for n in counts.values())
    for cls in (SynthTask, Trajectory, Verification):
        assert len(lake.read(cls, CID)) == len(whole.read(cls, CID))
    # Calls answered before the stop were not paid for twice: the resume's cache served them.
    calls = lake.read(LLMCall, CID)
    assert Counter((r.call_id, r.attempt) for r in calls).most_common(1)[0][1] == 1
    sent_capped = server.request_count - sent_whole
    assert sent_capped <= sent_whole + 2  # at most the calls in flight at the stop, again


def test_the_round_cap_is_per_round_not_per_campaign(
    routed: tuple[RoutedServer, ScriptedModel],
    make_config: Callable[..., CampaignConfig],
    tmp_path: Path,
) -> None:
    server, model = routed
    reference = capped(make_config, server, tmp_path / "reference", None)
    model.role_of = role_of(reference)
    total = sum(r.cost or 0.0 for r in run_round(reference).read(LLMCall, CID))
    # An earlier round's spend, stored in the lake, past this round's cap: round 1 still runs.
    run_dir = tmp_path / "later"
    Lake(run_dir / "lake").write(
        [
            LLMCall(
                campaign_id=CID,
                round=0,
                call_id="earlier",
                attempt=0,
                role="designer",
                model="openai/earlier",
                cost=10 * total,
                outcome="ok",
            )
        ],
        batch="earlier",
    )
    forget_spend()
    lake = run_round(capped(make_config, server, run_dir, 1.5 * total, "round_budget_usd"))
    assert account_for_blueprints(lake, CID, BUDGET) == (BUDGET, 0)
