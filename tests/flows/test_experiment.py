"""Experiments: arms × seeds of campaigns as one resumable Prefect flow."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from campaign_processes import campaign_env
from typer.testing import CliRunner

from evosyn.agents.designer.strategies import get_strategy
from evosyn.agents.learner import SimulatedSettings, Weakness
from evosyn.cli import app
from evosyn.config import CampaignConfig, ConfigError
from evosyn.experiment import Experiment, load_experiment
from evosyn.flows import experiment as experiment_module
from evosyn.flows.experiment import arms_to, experiment_flow
from evosyn.records import Campaign, EvalResult, ExperimentArm, RoundSummary, Verification
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

BASE = Path("deployments/campaigns/airline-offline.yaml").resolve()


def _weaknesses(cfg: CampaignConfig) -> list[Weakness]:
    return cfg.agents.learner.kind_settings(SimulatedSettings).weaknesses


def _write(tmp_path: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {
        "experiment": {
            "name": "tiny",
            "campaign": str(BASE),
            "seeds": [0, 1],
            "set": {
                "lake.root": str(tmp_path / "lake"),
                "campaign.rounds": 1,
                "campaign.budget_per_round": 12,
            },
        },
        "arms": {"evosyn": {}, "r_zero": {"campaign.strategy": "r_zero"}},
    }
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            data[section][field] = value
        else:
            data[section] = value
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data), "utf-8")
    return path


@pytest.mark.usefixtures("prefect_server")
def test_every_arm_and_seed_runs_once_and_a_rerun_skips_finished_arms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = load_experiment(_write(tmp_path))
    events: list[tuple[str, int, str]] = []
    with arms_to(lambda arm, seed, event: events.append((arm, seed, event))):
        rows = experiment_flow(experiment)
    grid = [("evosyn", 0), ("r_zero", 0), ("evosyn", 1), ("r_zero", 1)]
    assert [(r.arm, r.seed) for r in rows] == grid
    assert [e for e in events if e[2] == "done"] == [(a, s, "done") for a, s in grid]
    lake = Lake(tmp_path / "lake")
    ids = {f"tiny-{a}-s{s}" for a, s in grid}
    assert {r.campaign_id for r in lake.read(ExperimentArm)} == ids
    for arm, seed in grid:
        [campaign] = lake.read(Campaign, f"tiny-{arm}-s{seed}")
        assert campaign.seed == seed
        assert campaign.config["campaign"]["strategy"] == arm
        assert [s.round for s in lake.read(RoundSummary, f"tiny-{arm}-s{seed}")] == [1]
    verified = len(lake.read(Verification))
    # The paper's final test: the last round on the official test split, three trials a task.
    tested = [r for r in lake.read(EvalResult, "tiny-evosyn-s0", 1) if r.split == "test"]
    assert tested and {r.task_id.rsplit("#", 1)[1] for r in tested} == {
        "trial0",
        "trial1",
        "trial2",
    }
    tests = len([r for r in lake.read(EvalResult) if r.split == "test"])

    # An arm whose row is gone (killed before it finished) runs again; the rest are skipped.
    shutil.rmtree(tmp_path / "lake" / "experiment_arms" / "tiny-r_zero-s1")
    events.clear()
    with arms_to(lambda arm, seed, event: events.append((arm, seed, event))):
        again = experiment_flow(experiment)
    assert [(r.arm, r.seed) for r in again] == grid
    assert [e[2] for e in events] == ["skip", "skip", "skip", "start", "done"]
    assert len(lake.read(Verification)) == verified  # the campaign resumed, nothing duplicated
    assert len([r for r in lake.read(EvalResult) if r.split == "test"]) == tests

    # The command: everything is done, so nothing runs (a campaign would fail here).
    def no_campaign(*_: Any) -> None:
        raise AssertionError("a finished arm ran again")

    monkeypatch.setattr(experiment_module, "campaign_flow", no_campaign)
    result = CliRunner().invoke(app, ["experiment", "run", str(tmp_path / "tiny.yaml")])
    assert result.exit_code == 0, result.output
    assert "4 arms finished (0 run now, 4 found done)" in result.output
    assert "evosyn report --experiment tiny" in result.output
    # A changed file under the same name would mix two configs in one experiment.
    result = CliRunner().invoke(
        app,
        ["experiment", "run", str(tmp_path / "tiny.yaml"), "--set", "campaign.budget_per_round=9"],
    )
    assert result.exit_code == 2, result.output
    assert (
        "campaign 'tiny-evosyn-s0' was started with another config: "
        "campaign.budget_per_round: 12 -> 9" in result.stderr
    )


def test_a_bad_experiment_is_one_line_naming_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"experiment\.reference 'evosyn' is not an arm"):
        load_experiment(_write(tmp_path, arms={"r_zero": {"campaign.strategy": "r_zero"}}))
    with pytest.raises(ConfigError, match=r"arm fixed_state: .*ablations\.fixed_stat"):
        load_experiment(
            _write(tmp_path, arms={"evosyn": {}, "fixed_state": {"ablations.fixed_stat": True}})
        )
    with pytest.raises(ConfigError, match="seeds repeat"):
        load_experiment(_write(tmp_path, experiment__seeds=[1, 1]))
    result = CliRunner().invoke(app, ["experiment", "run", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "file not found" in result.output


@pytest.mark.parametrize("name", ["airline-simulated", "airline-real"])
def test_the_shipped_experiments_compare_the_papers_arms(name: str) -> None:
    experiment = load_experiment(Path(f"deployments/experiments/{name}.yaml"))
    assert isinstance(experiment, Experiment) and experiment.reference == "evosyn"
    arms = {"evosyn", "fixed_state", "no_feedback", "single_agent", "r_zero", "autoplay"}
    assert set(experiment.arms) == arms
    seeds = experiment.experiment.seeds
    assert len(experiment.grid()) == len(arms) * len(seeds)
    base = experiment.config("evosyn", seeds[0])
    for arm in arms:
        cfg = experiment.config(arm, seeds[-1])
        get_strategy(cfg.campaign.strategy)
        assert cfg.campaign.id == f"{name}-{arm}-s{seeds[-1]}"
        # Same budget, rounds, learner and domain in every arm.
        for field in ("rounds", "budget_per_round", "domain"):
            assert getattr(cfg.campaign, field) == getattr(base.campaign, field)
        # the same learner; only the simulated one's stream of evaluation draws is the arm's own
        learner, base_learner = cfg.agents.learner.model_dump(), base.agents.learner.model_dump()
        if base.agents.learner.kind == "simulated":
            assert learner.pop("draw_stream") == arm and base_learner.pop("draw_stream") == "evosyn"
        assert "draw_stream" not in learner and learner == base_learner
        assert cfg.campaign.patience is None  # no arm stops early: the same budget in all
        switched = {k for k, v in cfg.ablations.model_dump().items() if v}
        assert switched <= {arm} and (cfg.campaign.strategy == arm) == (
            arm in ("r_zero", "autoplay") or arm == "evosyn"
        )
    learner = base.agents.learner.kind
    assert learner == ("simulated" if name == "airline-simulated" else "sft")
    if name == "airline-real":
        assert experiment.config("single_agent", 0).llm.roles["single_agent"].model


def _experiment_process(path: Path, api_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("evosyn")), "experiment", "run", str(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=campaign_env(api_url),
        start_new_session=True,  # its own process group, as a terminal's job
    )


@pytest.mark.usefixtures("prefect_server")
def test_ctrl_c_stops_an_experiment_in_seconds_and_the_rerun_resumes_it(tmp_path: Path) -> None:
    """SIGINT mid-arm: exit 130, one line with the resume command, exact resume.

    The interrupted run plays its two arms on two worker processes (``--workers 2``), the
    resume in one: the rows are those of an uninterrupted one-process run all the same.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.settings import PREFECT_API_URL
    from reliability.test_crash_resume import assert_same_lake

    api_url = PREFECT_API_URL.value()
    # The uninterrupted run to compare with, here: the command under test is the interrupted
    # one and its resume.
    reference = tmp_path / "reference"
    reference.mkdir()
    path = _write(reference, experiment__seeds=[0], experiment__final_test=False)
    assert len(experiment_flow(load_experiment(path))) == 2

    interrupted = tmp_path / "interrupted"
    interrupted.mkdir()
    path = _write(interrupted, experiment__seeds=[0], experiment__final_test=False)
    proc = _experiment_process(path, api_url, "--workers", "2")
    lines: list[tuple[float, str]] = []
    assert proc.stdout is not None
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: lines.extend((time.monotonic(), ln) for ln in stdout))
    reader.start()
    try:
        # In the first arm's round, after its tasks and before its verifications.
        deadline = time.monotonic() + 240
        while not list((interrupted / "lake").glob("tasks/tiny-evosyn-s0/1/*.parquet")):
            assert proc.poll() is None, "the experiment ended before the interrupt point"
            assert time.monotonic() < deadline, "no tasks after 240 s"
            time.sleep(0.05)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        returncode = proc.wait(timeout=30)
        stop_s = time.monotonic() - sent
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        reader.join()
    output = "".join(ln for _, ln in lines)
    after = [ln.strip() for t, ln in lines if t >= sent and ln.strip()]
    assert returncode == 130, output[-3000:]
    assert stop_s < 10, f"stopped {stop_s:.1f}s after the SIGINT"
    assert "Traceback" not in output and "Error" not in output, output[-3000:]
    assert after[-1] == f"interrupted: resume with `evosyn experiment run {path} --workers 2`"
    assert sum("interrupted" in line for line in after) == 1, after
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_="tiny"))
        )
    live = [r.name for r in runs if r.state_type is not None and r.state_type.value == "RUNNING"]
    assert not live, live

    resumed = _experiment_process(path, api_url)
    output, _ = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, output[-3000:]
    # Both arms had started; the second worker's may have ended before the interrupt.
    assert re.search(r"2 arms finished \((2 run now, 0|1 run now, 1) found done\)", output), output

    assert_same_lake(reference / "lake", interrupted / "lake", "experiment interrupted in arm 1")


def test_arms_draw_independently_unless_common_random_numbers_are_asked(tmp_path: Path) -> None:
    own = load_experiment(_write(tmp_path))

    def stream(experiment: Experiment, arm: str) -> str:
        return experiment.config(arm, 0).agents.learner.kind_settings(SimulatedSettings).draw_stream

    assert {arm: stream(own, arm) for arm in own.arms} == {"evosyn": "evosyn", "r_zero": "r_zero"}
    shared = load_experiment(_write(tmp_path, experiment__common_random_numbers=True))
    assert {stream(shared, arm) for arm in shared.arms} == {""}


def test_seed_overrides_apply_to_every_arm_at_that_seed_only(tmp_path: Path) -> None:
    weak = [{"feature": "num_read", "values": ["5+"], "penalty": 0.5}]
    experiment = load_experiment(
        _write(tmp_path, experiment__seed_set={1: {"agents.learner.weaknesses": weak}})
    )
    for arm in experiment.arms:
        assert [w.feature for w in _weaknesses(experiment.config(arm, 1))] == ["num_read"]
        # seed 0 keeps the base campaign's weakness
        assert [w.feature for w in _weaknesses(experiment.config(arm, 0))] == ["num_write"]


def test_a_sweep_file_prints_its_design_then_runs_every_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evosyn.sweep as sweep_module

    realized = [{"num_read": str(i % 3), "task_family": "a" if i < 4 else "b"} for i in range(10)]
    monkeypatch.setattr(sweep_module, "official_realized", lambda _: realized)
    ran: list[Experiment] = []

    def fake_flow(experiment: Experiment, campaigns: object = None) -> list[ExperimentArm]:
        ran.append(experiment)
        return [
            ExperimentArm(
                campaign_id=experiment.campaign_id(arm, seed),
                round=0,
                experiment=experiment.name,
                arm=arm,
                seed=seed,
                rounds=1,
                seconds=0.0,
            )
            for arm, seed in experiment.grid()
        ]

    monkeypatch.setattr(experiment_module, "experiment_flow", fake_flow)
    sweep = {
        "sweep": {
            "name": "sw",
            "campaign": str(BASE),
            "registration_seed": 5,
            "seeds": [0, 1],
            "penalties": [0.4, 0.8],
            "features": ["num_read", "task_family"],
            "max_share": 0.6,
            "set": {"lake.root": str(tmp_path / "lake")},
        },
        "arms": {"evosyn": {}, "autoplay": {"campaign.strategy": "autoplay"}},
    }
    path = tmp_path / "sw.yaml"
    path.write_text(yaml.safe_dump(sweep), "utf-8")
    result = CliRunner().invoke(
        app, ["experiment", "run", str(path), "--workers", "1"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert [e.name for e in ran] == ["sw.p40", "sw.p80", "sw.null"]
    out = result.output
    assert out.index("Registration seed 5") < out.index("12 arms finished (0 run now")
    assert "sweep: 3 cells × 2 arms × 2 seeds = 12 campaigns" in out
    assert f"evosyn report --sweep {path}" in out
    # the two penalty cells plant the same draw; the null plants none
    p40, p80, null = ran
    for seed in (0, 1):
        [a] = _weaknesses(p40.config("evosyn", seed))
        [b] = _weaknesses(p80.config("autoplay", seed))
        assert (a.feature, a.values, a.penalty) == (b.feature, b.values, 0.4) and b.penalty == 0.8
        assert _weaknesses(null.config("evosyn", seed)) == []
