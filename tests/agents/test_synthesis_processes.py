"""Programmatic synthesis on worker processes writes the rows one process writes (issue #38)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from plain_flows import plain_flows
from process_roles import Dying, FailingOn
from synthesis_checks import exploration, hand_blueprint

from evosyn.agents import synthesis_pool
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, generate, roll_out_each
from evosyn.agents.synthesis_pool import (
    SYNTH_WORKERS_ENV,
    CampaignRoles,
    ProcessSynthesis,
    RoleSource,
    local_cores,
    synthesis_workers,
)
from evosyn.config import load_config
from evosyn.environments.dedup import SeenTasks
from evosyn.environments.registry import domain_plugin
from evosyn.records import TABLES, Blueprint, SynthTask
from evosyn.space import seed_space
from evosyn.storage import Lake
from evosyn.tasks.loop import synthesis_processes

pytestmark = pytest.mark.heavy

# Columns that legitimately differ between two runs: clocks and durations.
CLOCKS = {"created_at", "started_at", "finished_at", "seconds", "latency_s"}
SEED = 7
OFFLINE = Path("deployments/campaigns/airline-offline.yaml")


def _source(domain: str) -> CampaignRoles:
    # Teacher slips, so Repair and its verdicts are compared too.
    overrides = [f"campaign.domain={domain}", "agents.teacher.mistake_rate=0.1"]
    return CampaignRoles.of(load_config(None, overrides, environ={}))


def _planned(domain: str, count: int, direction_id: str) -> list[Blueprint]:
    space = seed_space(domain, "procs")
    direction = exploration(space, count, direction_id=direction_id)
    return ProgrammaticPlanner(domain_plugin(domain).infeasible).plan(space, direction, SEED)


def _rows(batch: SynthesisBatch) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [r.model_dump(mode="json", exclude=CLOCKS) for r in getattr(batch, name)]
        for name in ("tasks", "trajectories", "verifications", "rejections")
    }


def _synthesized(
    source: RoleSource,
    blueprints: list[Blueprint],
    earlier: list[SynthTask],
    processes: ProcessSynthesis | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Generate (screened against ``earlier``) and roll out, here or on ``processes``."""
    roles = _built_here(source)
    seen = SeenTasks(earlier[0].domain) if earlier else None
    for synth in earlier:
        assert seen is not None
        seen.add(synth.task)
    made = generate(blueprints, roles.generator, SEED, seen=seen, processes=processes)
    if processes is None:
        rolled = roll_out_each(made.tasks, roles.teacher, roles.verifier, SEED, tries=2)
    else:
        rolled = processes.roll_out(made.tasks, SEED, tries=2)
    return _rows(made), _rows(rolled)


_here: dict[str, Any] = {}


def _built_here(source: CampaignRoles) -> Any:
    """This process's roles of ``source``, built once (the domains' set-up is paid once)."""
    if source.config_json not in _here:
        _here[source.config_json] = source()
    return _here[source.config_json]


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_two_processes_give_the_rows_of_one(domain: str) -> None:
    source = _source(domain)
    # Tasks kept in an earlier round: the workers screen against them too.
    earlier = generate(_planned(domain, 20, "earlier"), _built_here(source).generator, SEED)
    blueprints = _planned(domain, 60, "now")
    processes = ProcessSynthesis(source, 2)
    many = _synthesized(source, blueprints, earlier.tasks, processes)
    one = _synthesized(source, blueprints, earlier.tasks, None)
    assert many == one
    made, rolled = one
    assert len(made["tasks"]) + len(made["rejections"]) == len(blueprints)
    assert len(rolled["verifications"]) == len(made["tasks"])


def test_a_guess_that_missed_a_task_kept_meanwhile_is_generated_again_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One family, one outcome: the blueprints' first candidates repeat the first task. One
    # blueprint per job, all eight sent at once, four to each worker: the second worker's
    # guesses cannot know what the first kept.
    monkeypatch.setattr(synthesis_pool, "GENERATION_CHUNK", 1)
    monkeypatch.setattr(synthesis_pool, "GENERATION_QUEUED", 4)
    blueprints = [
        hand_blueprint(
            "billing_issue",
            "fulfill",
            focus=("eligibility_check",),
            patterns=("multi_hop_retrieval",),
            index=i,
        )
        for i in range(8)
    ]
    source = _source("telecom")
    processes = ProcessSynthesis(source, 2)
    assert _synthesized(source, blueprints, [], processes) == _synthesized(
        source, blueprints, [], None
    )
    assert processes.regenerated >= 1


def test_a_blueprint_whose_worker_raised_is_generated_again_here() -> None:
    source = _source("airline")
    blueprints = _planned("airline", 24, "now")
    failing = {b.blueprint_id for b in blueprints if b.blueprint_id.endswith("3")}
    processes = ProcessSynthesis(FailingOn(source, "3"), 2)
    roles = _built_here(source)
    many = generate(blueprints, roles.generator, SEED, processes=processes)
    one = generate(blueprints, roles.generator, SEED)
    assert _rows(many) == _rows(one)
    assert failing and processes.regenerated >= len(failing)


def test_a_round_that_starts_the_workers_generates_here_until_they_answer() -> None:
    # Three workers: a pool of its own, started by this call.
    source = _source("mock")
    blueprints = _planned("mock", 80, "now")
    processes = ProcessSynthesis(source, 3)
    assert _synthesized(source, blueprints, [], processes) == _synthesized(
        source, blueprints, [], None
    )
    assert processes.before_start >= 1


def test_rollouts_on_processes_report_progress_per_task() -> None:
    source = _source("mock")
    made = generate(_planned("mock", 25, "now"), _built_here(source).generator, SEED)
    counted: list[int] = []
    ProcessSynthesis(source, 2).roll_out(made.tasks, SEED, progress=counted.append)
    assert sum(counted) == len(made.tasks) > synthesis_pool.ROLLOUT_PIECE


def test_the_worker_count_comes_from_the_environment_first() -> None:
    assert synthesis_workers(3, environ={}) == 3
    assert synthesis_workers(1, environ={SYNTH_WORKERS_ENV: "4"}) == 4
    assert synthesis_workers(2, environ={SYNTH_WORKERS_ENV: "0"}) == local_cores()
    assert synthesis_workers(0, environ={}) == local_cores()
    for bad in ("two", "-1"):
        with pytest.raises(ValueError, match=SYNTH_WORKERS_ENV):
            synthesis_workers(1, environ={SYNTH_WORKERS_ENV: bad})
    with pytest.raises(ValueError, match="2 or more"):
        ProcessSynthesis(_source("mock"), 1)


def test_only_programmatic_roles_go_to_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    programmatic = load_config(OFFLINE, [], environ={})
    monkeypatch.delenv(SYNTH_WORKERS_ENV, raising=False)
    assert synthesis_processes(programmatic) is None  # one process unless asked
    configured = load_config(OFFLINE, ["campaign.synthesis_workers=3"], environ={})
    processes = synthesis_processes(configured)
    assert processes is not None and processes.workers == 3
    monkeypatch.setenv(SYNTH_WORKERS_ENV, "2")  # the machine's setting wins
    processes = synthesis_processes(configured)
    assert processes is not None and processes.workers == 2
    on_model = load_config(
        OFFLINE, ["agents.generator.kind=llm", "llm.default.model=openai/m"], environ={}
    )
    assert synthesis_processes(on_model) is None  # its work is waiting on calls: threads


def _campaign_tables(root: Path, campaign_id: str, *more: str) -> dict[str, list[str]]:
    """One round of the offline campaign (plain functions for Prefect's tasks); its rows."""
    from evosyn.flows import campaign as campaign_module
    from evosyn.flows import round as round_module

    overrides = [
        "campaign.rounds=1",
        "campaign.budget_per_round=60",
        f"campaign.id={campaign_id}",
        f"lake.root={root}",
        *more,
    ]
    cfg = load_config(OFFLINE, overrides, environ={})
    # Artifacts are Prefect's: publishing one would start its server in this process.
    with (
        plain_flows(round_module, campaign_module),
        patch.object(campaign_module, "publish_campaign_artifact", lambda *_a, **_k: None),
    ):
        campaign_module.campaign_flow.fn(cfg, campaign_id)
    lake = Lake(root)
    return {
        table: [
            json.dumps(r.model_dump(mode="json", exclude=CLOCKS), sort_keys=True).replace(
                str(root), "<lake>"
            )
            for r in lake.read(cls, campaign_id)
        ]
        for table, cls in TABLES.items()
    }


def test_a_round_on_two_processes_writes_the_tables_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SYNTH_WORKERS_ENV, raising=False)
    one = _campaign_tables(tmp_path / "one", "twin")
    used: list[int] = []
    roll_out = ProcessSynthesis.roll_out

    def counted(self: ProcessSynthesis, tasks: list[SynthTask], *args: Any) -> Any:
        used.append(len(tasks))
        return roll_out(self, tasks, *args)

    monkeypatch.setattr(ProcessSynthesis, "roll_out", counted)
    many = _campaign_tables(tmp_path / "many", "twin", "campaign.synthesis_workers=2")
    # The campaign row records its config, which names the workers; every other row is equal.
    assert '"synthesis_workers": 2' in many.pop("campaigns")[0]
    assert '"synthesis_workers": 1' in one.pop("campaigns")[0]
    assert many == one
    assert sum(used) == len(one["tasks"])  # every rollout ran on the workers
    assert len(one["verifications"]) > 50


def test_a_worker_that_dies_fails_the_step_and_the_next_call_starts_afresh() -> None:
    with pytest.raises(RuntimeError, match=f"worker process stopped.*{SYNTH_WORKERS_ENV}=1"):
        ProcessSynthesis(Dying(), 2).warm()
    source = _source("mock")
    made = generate(_planned("mock", 8, "now"), _built_here(source).generator, SEED)
    assert ProcessSynthesis(source, 2).roll_out(made.tasks, SEED).verifications
