"""The one reuse-or-run rule of round tasks: write order, done-marker, no loss on a kill."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import ConcurrencyLimiter, Gateway
from evosyn.config import LLMSection, ModelSettings
from evosyn.records import LakeRecord, LLMCall, Probe, ValueFeedback
from evosyn.storage import Lake
from evosyn.tasks.lake_step import Calls, Ran, lake_step


class Killed(BaseException):
    """Stands for a SIGKILL between two writes (not an Exception: nothing catches it)."""


class KillOnce(Lake):
    """A lake whose process dies on the first write of one batch key."""

    def __init__(self, root: Path, batch: str) -> None:
        super().__init__(root)
        self.batch = batch
        self.killed = False

    def write(self, records: Sequence[LakeRecord], batch: str) -> str:
        if batch == self.batch and not self.killed:
            self.killed = True
            raise Killed
        return super().write(records, batch)


def _probe(name: str) -> Probe:
    return Probe(
        campaign_id="c",
        round=1,
        name=name,
        distribution={"0": 3},
        failure_rate={"0": 0.5},
        coverage={"0": 1.0},
        cmi=0.1,
        p_value=0.5,
    )


def _value(v: str) -> ValueFeedback:
    return ValueFeedback(
        campaign_id="c", round=1, factor="task_family", value=v, coverage=0.5, n_verified=1
    )


def _step(lake: Lake, runs: list[int]) -> list[ValueFeedback]:
    def stored() -> list[ValueFeedback] | None:
        return lake.read(ValueFeedback, "c", 1) or None

    def run() -> Ran[list[ValueFeedback]]:
        runs.append(1)
        values = [_value("a"), _value("b")]
        return Ran(values, marker=[(values, "values")], rows=[([_probe("p")], "probes")])

    return lake_step(lake, stored, run, None)


def test_a_stored_output_is_reused_and_the_step_not_run_again(tmp_path: Path) -> None:
    lake, runs = Lake(tmp_path / "lake"), []
    first = _step(lake, runs)
    again = _step(lake, runs)
    assert runs == [1]
    assert again == first


def test_a_kill_before_the_marker_reruns_without_duplicating_rows(tmp_path: Path) -> None:
    lake, runs = KillOnce(tmp_path / "lake", batch="values"), []
    with pytest.raises(Killed):
        _step(lake, runs)
    # The probes landed, the marker did not: the step is not done.
    assert len(lake.read(Probe, "c", 1)) == 1
    assert lake.read(ValueFeedback, "c", 1) == []
    _step(lake, runs)
    assert runs == [1, 1]
    assert [p.name for p in lake.read(Probe, "c", 1)] == ["p"]
    assert [v.value for v in lake.read(ValueFeedback, "c", 1)] == ["a", "b"]


def test_model_calls_land_first_and_even_when_the_step_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    lake = KillOnce(tmp_path / "lake", batch="values")
    with OpenAIServer() as server:
        server.script(Reply.text("one"), Reply.text("two"))
        llm = LLMSection(default=ModelSettings(model="openai/m", api_base=server.url, timeout=5.0))
        gateway = Gateway.from_config(
            llm, "designer", limiter=ConcurrencyLimiter(), seed=0, cache_dir=str(tmp_path / "k")
        )
        calls = Calls([gateway], "c", 1, "design")

        def failing() -> Ran[list[ValueFeedback]]:
            gateway.complete([{"role": "user", "content": "a"}])
            raise RuntimeError("the role failed")

        with pytest.raises(RuntimeError, match="the role failed"):
            lake_step(lake, lambda: None, failing, calls)
        assert [c.role for c in lake.read(LLMCall, "c", 1)] == ["designer"]

        def killed_at_marker() -> Ran[list[ValueFeedback]]:
            gateway.complete([{"role": "user", "content": "b"}])
            return Ran([_value("a")], marker=[([_value("a")], "values")])

        with pytest.raises(Killed):
            lake_step(lake, lambda: None, killed_at_marker, calls)
    # Killed at the marker: the call that preceded it is already accounted for.
    assert len(lake.read(LLMCall, "c", 1)) == 2
    assert lake.read(ValueFeedback, "c", 1) == []
