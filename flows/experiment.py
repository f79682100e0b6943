"""An experiment as a Prefect flow: every (arm, seed) campaign, one after another, resumable.

``evosyn experiment run --workers N`` runs N of these flows at once, each on its share of the
campaigns (evosyn.experiment_pool).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager

from prefect import flow

from evosyn.config import CampaignConfig
from evosyn.experiment import Experiment
from evosyn.flows.campaign import campaign_flow
from evosyn.flows.dispatch import dispatched, evaluate_on_pool
from evosyn.flows.evaluate import evaluate_flow
from evosyn.records import EvalResult, ExperimentArm
from evosyn.tasks.loop import lake_of

ArmSink = Callable[[str, int, str], None]
"""Called with (arm, seed, event): ``start``, ``done`` or ``skip`` (finished before)."""
_sinks: list[ArmSink] = []
_lock = threading.Lock()


@contextmanager
def arms_to(sink: ArmSink) -> Iterator[None]:
    """Report every arm the experiment flow starts, finishes or skips to ``sink`` while inside."""
    with _lock:
        _sinks.append(sink)
    try:
        yield
    finally:
        with _lock:
            _sinks.remove(sink)


def _tell(arm: str, seed: int, event: str) -> None:
    for sink in list(_sinks):
        sink(arm, seed, event)


def finished_arms(experiment: Experiment) -> dict[str, ExperimentArm]:
    """The experiment's finished arms in its lake, by campaign id."""
    lake = lake_of(experiment.lake_config())
    ids = {experiment.campaign_id(arm, seed) for arm, seed in experiment.grid()}
    return {
        row.campaign_id: row
        for cid in sorted(ids)
        for row in lake.read(ExperimentArm, cid)
        if row.experiment == experiment.name
    }


def final_test(cfg: CampaignConfig, campaign_id: str, round: int) -> list[EvalResult]:
    """The round's learner on the official test split: three trials at temperature 1.

    Where the learner's work is dispatched, on its pool; stored results are reused.
    """
    if dispatched(cfg):
        return evaluate_on_pool(cfg, campaign_id, round, "test")
    return evaluate_flow(campaign_id, round, config=cfg.model_dump(mode="json"), split="test")


@flow(name="evosyn-experiment", flow_run_name="{experiment.experiment.name}")
def experiment_flow(
    experiment: Experiment, campaigns: Collection[str] | None = None
) -> list[ExperimentArm]:
    """Run every arm × seed campaign not finished yet; one ``experiment_arms`` row each.

    Arms run seed by seed. An arm whose row is in the lake is skipped; one interrupted midway
    resumes where its campaign stopped (the campaign flow reuses what the lake holds).
    ``campaigns``: only these campaign ids (a worker's share, evosyn.experiment_pool).
    """
    done = finished_arms(experiment)
    rows: list[ExperimentArm] = []
    for arm, seed in experiment.grid():
        cid = experiment.campaign_id(arm, seed)
        if campaigns is not None and cid not in campaigns:
            continue
        if cid in done:
            rows.append(done[cid])
            _tell(arm, seed, "skip")
            continue
        _tell(arm, seed, "start")
        cfg = experiment.config(arm, seed)
        started = time.monotonic()
        summaries = campaign_flow(cfg, cid)
        if experiment.experiment.final_test and summaries:
            final_test(cfg, cid, summaries[-1].round)
        row = ExperimentArm(
            campaign_id=cid,
            round=0,
            experiment=experiment.name,
            arm=arm,
            seed=seed,
            overrides=experiment.arms[arm],
            rounds=len(summaries),
            seconds=round(time.monotonic() - started, 3),
        )
        # Written last: the row is the arm's done-marker.
        lake_of(cfg).write([row], batch="arm")
        rows.append(row)
        _tell(arm, seed, "done")
    return rows
