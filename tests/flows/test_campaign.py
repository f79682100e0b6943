"""The closed loop as Prefect flows on the real airline domain, offline."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evosyn.agents.learner import SimulatedSettings
from evosyn.agents.learner.diagnostic import official_diagnostic
from evosyn.config import CampaignConfig, load_config
from evosyn.flows.campaign import campaign_flow
from evosyn.records import (
    Blueprint,
    Direction,
    EvalResult,
    Probe,
    ReflectorDecision,
    Rejection,
    RoundSummary,
    SynthTask,
    Training,
    Verification,
)
from evosyn.storage import Lake
from evosyn.tasks.loop import STAGES, progress_to

pytestmark = pytest.mark.usefixtures("prefect_server")


def _config(root: Path, rounds: int = 2) -> CampaignConfig:
    return load_config(
        Path("deployments/campaigns/airline-offline.yaml"),
        [
            f"lake.root={root}",
            f"campaign.rounds={rounds}",
            "campaign.budget_per_round=24",
            "campaign.id=t",
        ],
        environ={},
    )


def test_two_round_campaign_accounts_for_every_blueprint_and_resumes_without_duplicates(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path / "lake")
    started = datetime.now(UTC)
    done: Counter[tuple[str, int]] = Counter()
    with progress_to(lambda stage, r, units: done.update({(stage, r): units})):
        summaries = campaign_flow(cfg, "t")
    assert {s for s, _ in done} == set(STAGES)
    assert done[("synthesize", 1)] == done[("synthesize", 2)] == 24
    assert done[("reflect", 2)] == 1 and ("reflect", 1) not in done
    # the Prefect API (and so its UI) shows every role task by name and round
    roles = ("design", "plan", "train", "evaluate", "feedback")
    expected = {f"{stage}-r{r}" for stage in roles for r in (1, 2)}
    expected |= {"reflect-r2", "synthesize-r1-000", "synthesize-r2-000"}
    names = _task_run_names(expected, ["t", "t-round-1", "t-round-2"], started)
    assert expected <= names, sorted(expected - names)
    assert [s.round for s in summaries] == [1, 2]
    lake = Lake(tmp_path / "lake")
    # Success on the fixed set: the official diagnostic split, every trial, every round;
    # the whole diagnostic set also holds the held-out synthesized tasks, so it is larger.
    fixed_n = len(official_diagnostic("airline")) * cfg.agents.learner.trials
    assert [s.fixed_n for s in summaries] == [fixed_n, fixed_n]
    assert all(s.diagnostic_n > s.fixed_n for s in summaries)
    # The planted weakness's slice of the fixed set (write-heavy official tasks, every trial).
    [weak] = cfg.agents.learner.kind_settings(SimulatedSettings).weaknesses
    heavy = [i for i in official_diagnostic("airline") if i.realized[weak.feature] in weak.values]
    assert heavy and all(s.planted_n == len(heavy) * cfg.agents.learner.trials for s in summaries)
    decision = lake.read(ReflectorDecision, "t", 1)[0]
    assert summaries[0].decision == "cold start (seed space)"
    assert summaries[1].decision.startswith(decision.in_words())
    if decision.new_factor is not None:
        # The probe behind an added factor, with the figures the report shows for it.
        [probe] = [p for p in lake.read(Probe, "t", 1) if p.name == decision.new_factor.name]
        assert summaries[1].decision.endswith(f"p={probe.p_value:.3f}")
    for r in (1, 2):
        blueprints = lake.read(Blueprint, "t", r)
        assert len(blueprints) == 24 == sum(d.budget for d in lake.read(Direction, "t", r))
        tasks = {t.blueprint_id: t.task_id for t in lake.read(SynthTask, "t", r)}
        passed = {v.task_id for v in lake.read(Verification, "t", r) if v.passed}
        rejected = {x.blueprint_id for x in lake.read(Rejection, "t", r)}
        for b in blueprints:
            ended = b.blueprint_id in rejected or tasks.get(b.blueprint_id) in passed
            assert ended, f"blueprint {b.blueprint_id} vanished"
        assert passed, "some verified data every round"
        assert lake.read(Training, "t", r)[0].learner == "simulated"
        assert lake.read(EvalResult, "t", r)
    before = {
        cls: len(lake.read(cls, "t"))
        for cls in (Blueprint, SynthTask, Verification, Rejection, EvalResult)
    }
    again = campaign_flow(cfg, "t")  # a resumed run reuses every stored output
    assert [s.n_verified for s in again] == [s.n_verified for s in summaries]
    after = {cls: len(lake.read(cls, "t")) for cls in before}
    assert after == before
    assert len(lake.read(RoundSummary, "t")) == 2
    # Where a UI-triggered run lands: the campaign's artifact, its latest version every round.
    artifact = _latest_artifact("evosyn-t-campaign")
    assert artifact.type == "markdown" and "# t: 2 round(s)" in str(artifact.data)
    assert decision.in_words() in str(artifact.data)


def _latest_artifact(key: str) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactCollectionFilter, ArtifactCollectionFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_latest_artifacts(
            artifact_filter=ArtifactCollectionFilter(key=ArtifactCollectionFilterKey(any_=[key]))
        )
    assert len(found) == 1, found
    return found[0]


def _task_run_names(expected: set[str], flows: list[str], since: datetime) -> set[str]:
    """The names of ``expected`` task runs in the flow runs named ``flows`` started ``since``.

    The session's Prefect server holds other tests' runs, often of the same task names.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterName,
        FlowRunFilterStartTime,
        TaskRunFilter,
        TaskRunFilterName,
    )

    runs = FlowRunFilter(
        name=FlowRunFilterName(any_=flows), start_time=FlowRunFilterStartTime(after_=since)
    )
    tasks = TaskRunFilter(name=TaskRunFilterName(any_=sorted(expected)))
    # Task runs reach the API through events, a moment after the flow returns.
    deadline = time.monotonic() + 30
    while True:
        with get_client(sync_client=True) as client:
            found = client.read_task_runs(flow_run_filter=runs, task_run_filter=tasks)
        names = {r.name for r in found}
        if expected <= names or time.monotonic() > deadline:
            return names


def test_a_stored_campaign_resumes_only_with_its_config(tmp_path: Path) -> None:
    """Deployments and experiments resume through the flow: it refuses a changed config."""
    from evosyn.config import ConfigError
    from evosyn.flows.campaign import start_campaign
    from evosyn.records import Campaign

    cfg = _config(tmp_path / "lake")
    space = start_campaign(cfg, "t")
    [row] = Lake(tmp_path / "lake").read(Campaign, "t")
    assert start_campaign(cfg, "t") == space  # the same config: a resume
    # Where it runs and its spend caps are not the campaign: they may change.
    moved = load_config(data=cfg.model_dump(mode="json"), overrides=["llm.budget_usd=2"])
    start_campaign(moved, "t")
    longer = load_config(data=cfg.model_dump(mode="json"), overrides=["campaign.rounds=3"])
    with pytest.raises(
        ConfigError,
        match=r"^campaign 't' was started with another config: "
        r"campaign\.rounds: 2 -> 3; .*reconfigure",
    ):
        start_campaign(longer, "t")
    start_campaign(longer, "t", free=("campaign.rounds",))  # as the round deployment does
    assert Lake(tmp_path / "lake").read(Campaign, "t") == [row]
    start_campaign(longer, "t", reconfigure=True)
    [stored] = Lake(tmp_path / "lake").read(Campaign, "t")
    assert stored.config["campaign"]["rounds"] == 3 and stored.created_at == row.created_at


def test_a_relative_lake_is_resolved_once_where_the_campaign_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every child run (a round, a training on the gpu pool) gets the same absolute place."""
    from evosyn.flows.campaign import with_absolute_lake

    monkeypatch.chdir(tmp_path)
    relative = load_config(None, ["lake.root=lake"], environ={})
    assert with_absolute_lake(relative).lake.root == str(tmp_path / "lake")
    for root in ("s3://bucket/lake", str(tmp_path / "elsewhere")):
        cfg = load_config(None, [f"lake.root={root}"], environ={})
        assert with_absolute_lake(cfg) is cfg
