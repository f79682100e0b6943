"""The task runner a round fans out on, chosen by ``campaign.task_runner``.

``thread`` is Prefect's thread pool (the default, no extra dependency). ``ray`` is
``prefect-ray``'s ``RayTaskRunner`` (the ``ray`` extra): a local Ray instance on this machine's
cores, or an existing cluster when ``RAY_ADDRESS`` is set (``ray://head:10001`` or ``auto``).
Every role seeds itself from the campaign seed and its batch, so both give identical records.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from evosyn.config import CampaignConfig, ConfigError


def local_cpus() -> int:
    """Cores this process may run on (its affinity, not the whole machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no affinity call
        return os.cpu_count() or 1


def ray_init_kwargs(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Arguments of ``ray.init`` for the Ray task runner.

    A local instance gets this process's cores and no dashboard (it would start a web server
    per round); a cluster named by ``RAY_ADDRESS`` keeps its own resources.
    """
    env = os.environ if environ is None else environ
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if not env.get("RAY_ADDRESS"):
        kwargs["num_cpus"] = local_cpus()
    return kwargs


def task_runner_for(cfg: CampaignConfig) -> TaskRunner[Any]:
    """A fresh task runner for one round of ``cfg``; ConfigError if Ray is asked but missing."""
    if cfg.campaign.task_runner == "thread":
        # Prefect's default size (PREFECT_TASK_RUNNER_THREAD_POOL_MAX_WORKERS): LLM roles wait
        # on the network, so the pool is not bounded by cores.
        return ThreadPoolTaskRunner()
    try:
        # Imported by name: prefect-ray is an optional extra and ships no type information.
        ray_runners = importlib.import_module("prefect_ray.task_runners")
    except ImportError:
        raise ConfigError(
            "config error: campaign.task_runner: 'ray' needs prefect-ray "
            "(pip install 'evosyn[ray]')"
        ) from None
    runner: TaskRunner[Any] = ray_runners.RayTaskRunner(
        address=os.environ.get("RAY_ADDRESS"), init_kwargs=ray_init_kwargs()
    )
    return runner
