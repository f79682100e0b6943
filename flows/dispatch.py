"""Training and evaluation of a round as runs of their deployments on the learner's work pool.

A round whose learner needs a GPU (``agents.learner.dispatch``: ``auto`` for ``sft``, or
``deployments``) does not train or evaluate where it runs: it starts ``evosyn-train`` and
``evosyn-evaluate`` (work pool ``gpu`` in deployments/prefect.yaml) as child runs, waits for them
and reads what they stored from the lake, which every pool shares. Work the lake already holds
(a resumed round) is not dispatched again.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun, State, Worker, WorkerStatus
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled

from evosyn.agents.roles import implementation
from evosyn.config import CampaignConfig
from evosyn.records import EvalResult, Training
from evosyn.tasks.learning import stored_training
from evosyn.tasks.loop import lake_of

TRAIN_DEPLOYMENT = "evosyn-train/evosyn-train"
EVALUATE_DEPLOYMENT = "evosyn-evaluate/evosyn-evaluate"
# Seconds between looks at the pool's workers and at a dispatched run's state.
POLL_S = 1.0
# A worker is taken for dead after this many heartbeat intervals without one.
LIVE_HEARTBEATS = 2
# Prefect's default heartbeat interval of a worker, for one that does not say its own.
DEFAULT_HEARTBEAT_S = 30


class DispatchError(RuntimeError):
    """A dispatched run could not start or did not complete; the message is one line."""


def dispatched(cfg: CampaignConfig) -> bool:
    """Whether ``cfg``'s rounds train and evaluate through the deployments."""
    dispatch = cfg.agents.learner.dispatch
    return dispatch == "deployments" or (dispatch == "auto" and implementation(cfg, "learner").gpu)


def live(worker: Worker, now: datetime) -> bool:
    """Whether ``worker`` is polling: online, with a heartbeat in its last two intervals.

    Prefect shows a killed worker online until its heartbeats have been missing for a while;
    a worker two heartbeats late is taken for dead here.
    """
    beat = worker.last_heartbeat_time
    interval = worker.heartbeat_interval_seconds or DEFAULT_HEARTBEAT_S
    return (
        worker.status == WorkerStatus.ONLINE
        and beat is not None
        and (now - beat).total_seconds() <= LIVE_HEARTBEATS * interval
    )


def await_worker(deployment: str, wait_s: float) -> str:
    """The work pool of ``deployment`` once a worker polls it (:func:`live`), or DispatchError."""
    with get_client(sync_client=True) as client:
        try:
            pool = client.read_deployment_by_name(deployment).work_pool_name
        except ObjectNotFound:
            raise DispatchError(
                f"deployment {deployment} not found on the Prefect server at {client.api_url}: "
                "run `make deploy`"
            ) from None
        if pool is None:
            raise DispatchError(f"deployment {deployment} has no work pool: run `make deploy`")
        deadline = time.monotonic() + wait_s
        while True:
            workers = client.read_workers_for_work_pool(pool)
            if any(live(w, datetime.now(UTC)) for w in workers):
                return pool
            if time.monotonic() >= deadline:
                raise DispatchError(
                    f"work pool {pool!r} has no online worker after {wait_s:.0f}s: start one "
                    f"with `make worker-{pool}` (agents.learner.worker_wait_s sets the wait)"
                )
            time.sleep(POLL_S)


def _run(
    cfg: CampaignConfig, deployment: str, campaign_id: str, round: int, split: str = "diagnostic"
) -> None:
    pool = await_worker(deployment, cfg.agents.learner.worker_wait_s)
    # The config travels inline, so the worker needs no copy of the campaign file; a path in
    # the deployment's defaults would win over it, hence config_path=None.
    parameters = {
        "campaign_id": campaign_id,
        "round": round,
        "config_path": None,
        "config": cfg.model_dump(mode="json"),
        "overrides": [],
    }
    if deployment == EVALUATE_DEPLOYMENT:
        parameters["split"] = split
    run = run_deployment(deployment, parameters=parameters, timeout=0)
    assert isinstance(run, FlowRun)  # called from sync code: the run, not a coroutine
    claimed = await_claim(run, deployment, pool, cfg.agents.learner.worker_wait_s)
    wait_s = cfg.agents.learner.run_timeout_s
    state = await_end(claimed, wait_s)
    if state is not None and not state.is_final():
        raise DispatchError(
            f"{deployment} run {run.name} on pool {pool!r} is still {state.type.value} after "
            f"{wait_s:.0f}s (agents.learner.run_timeout_s); it goes on, and a resume of the "
            "campaign picks up what it stores"
        )
    if state is None or not state.is_completed():
        status = "no state" if state is None else state.type.value
        why = (state.message or "").splitlines()[0] if state is not None and state.message else ""
        raise DispatchError(
            f"{deployment} run {run.name} on pool {pool!r} ended {status}"
            + (f": {why}" if why else "")
        )


def await_claim(run: FlowRun, deployment: str, pool: str, wait_s: float) -> FlowRun:
    """``run`` once a worker has picked it up (it is no longer Scheduled).

    A run no worker picks up within ``wait_s`` is cancelled, so a worker that comes back later
    does not start it beside a resume's own, and DispatchError says so in one line.
    """
    deadline = time.monotonic() + wait_s
    with get_client(sync_client=True) as client:
        while True:
            run = client.read_flow_run(run.id)
            if run.state is None or not run.state.is_scheduled():
                return run
            if time.monotonic() >= deadline:
                client.set_flow_run_state(
                    run.id,
                    Cancelled(message=f"no worker of pool {pool!r} picked it up in {wait_s:.0f}s"),
                )
                raise DispatchError(
                    f"work pool {pool!r}: no worker picked up {deployment} run {run.name} "
                    f"within {wait_s:.0f}s (agents.learner.worker_wait_s), although one was "
                    f"online; the run is cancelled: check the pool's workers (`make "
                    f"worker-{pool}`) and resume the campaign"
                )
            time.sleep(POLL_S)


def await_end(run: FlowRun, wait_s: float) -> State | None:
    """``run``'s state once it is final, or as it is after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    with get_client(sync_client=True) as client:
        while True:
            state = client.read_flow_run(run.id).state
            if state is None or state.is_final() or time.monotonic() >= deadline:
                return state
            time.sleep(POLL_S)


def train_on_pool(cfg: CampaignConfig, campaign_id: str, round: int) -> Training:
    """The round's training, run as ``evosyn-train`` unless the lake holds it already."""
    training = stored_training(cfg, campaign_id, round)
    if training is None:
        _run(cfg, TRAIN_DEPLOYMENT, campaign_id, round)
        training = stored_training(cfg, campaign_id, round)
    if training is None:
        raise DispatchError(
            f"{TRAIN_DEPLOYMENT} completed but the lake at {cfg.lake.root} has no "
            f"{cfg.agents.learner.kind} training of {campaign_id} round {round}: do the pools "
            "share one lake?"
        )
    return training


def evaluate_on_pool(
    cfg: CampaignConfig, campaign_id: str, round: int, split: str = "diagnostic"
) -> list[EvalResult]:
    """The results of the round's training on ``split``, run as ``evosyn-evaluate`` if missing."""
    training = train_on_pool(cfg, campaign_id, round)

    def stored() -> list[EvalResult]:
        results = lake_of(cfg).read(EvalResult, campaign_id, round)
        return [r for r in results if r.split == split and r.training_id == training.training_id]

    results = stored()
    if not results:
        _run(cfg, EVALUATE_DEPLOYMENT, campaign_id, round, split)
        results = stored()
    return results
