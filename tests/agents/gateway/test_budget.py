"""Spend: configured prices for models litellm cannot price, and the campaign's cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import BudgetExceeded, ConcurrencyLimiter, Gateway
from evosyn.agents.gateway.budget import forget_spend, stored_spend_by_round
from evosyn.config import LLMSection, ModelPrice, ModelSettings
from evosyn.records import LLMCall
from evosyn.storage import Lake

MODEL = "openai/self-hosted"
HELLO = [{"role": "user", "content": "one two three"}]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    with OpenAIServer() as srv:
        yield srv


def llm(server: OpenAIServer, tmp_path: Path, **section: object) -> LLMSection:
    default = ModelSettings(
        model=MODEL, api_base=server.url, timeout=5.0, cache_dir=str(tmp_path / "cache")
    )
    return LLMSection(default=default, **section)  # type: ignore[arg-type]


def test_configured_price_counts_when_litellm_has_none(
    server: OpenAIServer, tmp_path: Path
) -> None:
    prices = {MODEL: ModelPrice(input_per_mtok=2_000_000.0, output_per_mtok=10_000_000.0)}
    gw = Gateway.from_config(llm(server, tmp_path, prices=prices), "teacher", cache=False)
    answer = gw.complete(HELLO)  # 3 prompt words in, echoed: 3 out
    assert answer.cost == pytest.approx(3 * 2.0 + 3 * 10.0)
    [row] = gw.records("c", 1)
    assert row.cost == pytest.approx(36.0)
    # Another model string is not priced by it.
    other = Gateway.from_config(
        llm(server, tmp_path, prices=prices), "teacher", cache=False, model="openai/other"
    )
    assert other.complete(HELLO).cost is None


def test_gpu_hour_price_is_shared_by_the_requests_in_flight(
    server: OpenAIServer, tmp_path: Path
) -> None:
    prices = {MODEL: ModelPrice(gpu_hour=3600.0)}  # $1 per GPU-second
    server.script(Reply.slow(0.2, "late"))
    gw = Gateway.from_config(llm(server, tmp_path, prices=prices), "teacher", cache=False)
    cost = gw.complete(HELLO).cost
    assert cost is not None and 0.2 <= cost < 1.0


def test_the_cap_refuses_calls_and_names_itself(server: OpenAIServer, tmp_path: Path) -> None:
    prices = {MODEL: ModelPrice(output_per_mtok=1_000_000.0)}  # $1 per completion token
    section = llm(server, tmp_path, prices=prices, budget_usd=5.0)
    lake = tmp_path / "lake"
    gw = Gateway.from_config(section, "teacher", campaign_id="c1", lake_root=lake, cache=False)
    gw.complete(HELLO)  # $3
    gw.complete(HELLO)  # $6: past the cap, but it was sent under it
    with pytest.raises(BudgetExceeded) as caught:
        gw.complete(HELLO)
    message = str(caught.value)
    assert "\n" not in message
    assert "llm.budget_usd" in message and "$5 cap" in message and "$6.0000" in message
    assert server.request_count == 2
    # Every gateway of the campaign shares the spend; another campaign does not.
    planner = Gateway.from_config(section, "planner", campaign_id="c1", lake_root=lake)
    with pytest.raises(BudgetExceeded, match="planner call refused"):
        planner.complete(HELLO)
    other = Gateway.from_config(section, "planner", campaign_id="c2", lake_root=lake)
    assert other.complete(HELLO).text == "one two three"


def test_spend_is_read_back_from_the_lake_after_a_restart(
    server: OpenAIServer, tmp_path: Path
) -> None:
    lake_root = tmp_path / "lake"
    lake = Lake(lake_root)
    paid = [
        LLMCall(
            campaign_id="c9",
            round=r,
            call_id=f"x{r}",
            attempt=0,
            role="teacher",
            model=MODEL,
            cost=2.5,
            outcome="ok",
        )
        for r in (1, 2)
    ]
    for row in paid:
        lake.write([row], batch=f"b{row.round}")
    lake.write(
        [
            LLMCall(
                campaign_id="c8",
                round=1,
                call_id="y",
                attempt=0,
                role="teacher",
                model=MODEL,
                cost=100.0,
                outcome="ok",
            )
        ],
        batch="b",
    )
    assert sum(stored_spend_by_round("c9", lake_root).values()) == pytest.approx(5.0)
    assert sum(stored_spend_by_round("c9", tmp_path / "no-lake").values()) == 0.0
    capped = llm(server, tmp_path, budget_usd=5.0)
    gw = Gateway.from_config(capped, "teacher", campaign_id="c9", lake_root=lake_root)
    with pytest.raises(BudgetExceeded, match=r"\$5\.0000 of its \$5 cap"):
        gw.complete(HELLO)
    assert server.request_count == 0
    # A larger cap lets the campaign go on.
    raised = llm(server, tmp_path, budget_usd=6.0)
    gw = Gateway.from_config(raised, "teacher", campaign_id="c9", lake_root=lake_root)
    assert gw.complete(HELLO).text == "one two three"


def test_a_cached_answer_is_served_past_the_cap(server: OpenAIServer, tmp_path: Path) -> None:
    prices = {MODEL: ModelPrice(output_per_mtok=1_000_000.0)}
    section = llm(server, tmp_path, prices=prices, budget_usd=1.0)
    lake = tmp_path / "lake"
    gw = Gateway.from_config(section, "teacher", campaign_id="c3", lake_root=lake)
    gw.complete(HELLO)
    assert gw.complete(HELLO).cached
    assert server.request_count == 1
    with pytest.raises(BudgetExceeded):
        gw.complete([{"role": "user", "content": "new"}])


def test_without_a_cap_nothing_is_read_or_refused(server: OpenAIServer, tmp_path: Path) -> None:
    gw = Gateway.from_config(
        llm(server, tmp_path),
        "teacher",
        campaign_id="c4",
        lake_root=tmp_path / "lake",
        limiter=ConcurrencyLimiter(),
    )
    assert gw.ledger is None
    gw.complete(HELLO)


def test_the_round_cap_refuses_the_rounds_calls_only(server: OpenAIServer, tmp_path: Path) -> None:
    prices = {MODEL: ModelPrice(output_per_mtok=1_000_000.0)}  # $1 per completion token: $3 a call
    section = llm(server, tmp_path, prices=prices, round_budget_usd=5.0)
    lake = tmp_path / "lake"
    gw = Gateway.from_config(section, "teacher", campaign_id="c5", lake_root=lake, cache=False)
    assert gw.ledger is not None
    gw.for_round(1)
    gw.complete(HELLO)
    gw.complete(HELLO)  # $6 in round 1: past the cap, but it was sent under it
    with pytest.raises(BudgetExceeded) as caught:
        gw.complete(HELLO)
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        "llm.round_budget_usd reached: round 1's model calls cost $6.0000 of its $5 cap "
        "(teacher call refused); raise llm.round_budget_usd and resume"
    )
    assert (caught.value.key, caught.value.round) == ("llm.round_budget_usd", 1)
    # The next round has its own allowance; the campaign has no cap of its own here.
    gw.for_round(2)
    gw.complete(HELLO)
    assert gw.ledger.spent_usd == pytest.approx(9.0) and gw.ledger.round_spent(2) == 3.0
    assert server.request_count == 3


def test_the_round_spend_is_read_back_from_the_lake_by_round(
    server: OpenAIServer, tmp_path: Path
) -> None:
    lake_root = tmp_path / "lake"
    rows = [
        LLMCall(
            campaign_id="c6",
            round=r,
            call_id=f"x{r}-{i}",
            attempt=0,
            role="teacher",
            model=MODEL,
            cost=cost,
            outcome="ok",
        )
        for r, i, cost in ((1, 0, 2.0), (1, 1, 2.0), (2, 0, 1.0))
    ]
    for row in rows:
        Lake(lake_root).write([row], batch=row.call_id)
    assert stored_spend_by_round("c6", lake_root) == {1: 4.0, 2: 1.0}
    # A new process: round 1 is at its cap, round 2 is not, the campaign cap is far off.
    forget_spend()
    section = llm(server, tmp_path, round_budget_usd=4.0, budget_usd=100.0)
    gw = Gateway.from_config(section, "planner", campaign_id="c6", lake_root=lake_root)
    with pytest.raises(BudgetExceeded, match=r"round 1's model calls cost \$4\.0000 of its \$4"):
        gw.for_round(1).complete(HELLO)
    assert gw.for_round(2).complete(HELLO).text == "one two three"
    # A gateway bound only for spend (a learner's) shares the ledger but not the cache.
    learner = Gateway.from_config(section, "learner").bind_spend("c6", lake_root, 1)
    assert learner.ledger is gw.ledger and learner.cache is None
    with pytest.raises(BudgetExceeded, match="learner call refused"):
        learner.complete(HELLO)
    assert server.request_count == 1
