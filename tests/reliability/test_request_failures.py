"""Errors are not data: a role that raises is retried, then counted as a failed request.

A one-round offline campaign runs in-process (the flows' own bodies) with roles that raise
for chosen requests, as CPython 3.11's thread-unsafe AST constructor once made a rollout
raise: an error that passes on a retry leaves no trace; one that persists is counted in the
round's ``n_failed``, stored as no rejection, and a resume with working roles does the
request, after which the synthesis tables equal an uninterrupted run's.
"""

from __future__ import annotations

import dataclasses
import io
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from plain_flows import plain_flows
from rich.console import Console

from evosyn.campaign_cli import round_table
from evosyn.config import load_config
from evosyn.records import Rejection, RoundSummary, SynthTask, Trajectory, Verification
from evosyn.storage import Lake

CONFIG = Path("deployments/campaigns/airline-offline.yaml").resolve()
CAMPAIGN = "failing"
OVERRIDES = ["campaign.rounds=1", "campaign.budget_per_round=60"]
SYNTHESIS = (SynthTask, Trajectory, Verification, Rejection)
# Columns that differ between two runs with the same seed: clocks and durations.
CLOCKS = {"created_at", "started_at", "finished_at", "seconds"}
ERROR = "AST constructor recursion depth mismatch (before=50, after=51)"


class Raising:
    """A role that raises SystemError for chosen keys, ``fails[key]`` times, then delegates."""

    def __init__(self, inner: Any, method: str, key: str, fails: dict[str, int]) -> None:
        self.inner, self.method, self.key, self.fails = inner, method, key, fails
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.inner, name)
        if name != self.method:
            return real

        def call(first: Any, *args: Any, **kwargs: Any) -> Any:
            key = str(getattr(first, self.key))
            self.calls[key] += 1
            if self.calls[key] <= self.fails.get(key, 0):
                raise SystemError(ERROR)
            return real(first, *args, **kwargs)

        return call


def plain_campaign(root: Path) -> None:
    """``campaign_flow``'s body, every flow and task it calls run as a plain function."""
    from evosyn.flows import campaign as campaign_module
    from evosyn.flows import round as round_module

    cfg = load_config(
        CONFIG, [*OVERRIDES, f"lake.root={root}", f"campaign.id={CAMPAIGN}"], environ={}
    )
    with plain_flows(round_module, campaign_module):
        campaign_module.campaign_flow.fn(cfg, CAMPAIGN)


@contextmanager
def raising_roles(**roles: Raising) -> Iterator[None]:
    """Every round task's roles with ``roles`` (built around the real ones) in their place."""
    from evosyn.tasks import loop

    real = loop.roles_for

    def roles_for(cfg: Any) -> Any:
        built = real(cfg)
        for name, wrapper in roles.items():
            wrapper.inner = getattr(built, name)
        return dataclasses.replace(built, **roles)

    with patch.object(loop, "roles_for", roles_for):
        yield


def rows(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The synthesis tables of the lake, without clocks, sorted."""
    lake = Lake(root)
    out = {}
    for record in SYNTHESIS:
        dumped = [r.model_dump(mode="json", exclude=CLOCKS) for r in lake.read(record)]
        out[record.TABLE] = sorted(dumped, key=repr)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run with roles that never raise."""
    root = tmp_path_factory.mktemp("reference") / "lake"
    plain_campaign(root)
    return root


def test_a_raising_role_is_retried_counted_as_failed_and_done_by_a_resume(
    reference: Path, tmp_path: Path
) -> None:
    lake = Lake(reference)
    [clean] = lake.read(RoundSummary, CAMPAIGN)
    assert (clean.n_failed, clean.status) == (0, "succeeded")
    # Tasks verified at the first try, so each role is called once per request.
    verdicts = lake.read(Verification, CAMPAIGN)
    passed = sorted(v.task_id for v in verdicts if v.passed and v.repair_attempts == 0)
    tasks = {t.task_id: t for t in lake.read(SynthTask, CAMPAIGN)}
    once, always, verifier_once, ungenerated = passed[:4]
    blueprint = tasks[ungenerated].blueprint_id

    teacher = Raising(None, "rollout", "task_id", {once: 1, always: 10**6})
    verifier = Raising(None, "verify", "id", {verifier_once: 1})
    generator = Raising(None, "generate", "blueprint_id", {blueprint: 10**6})
    root = tmp_path / "lake"
    with raising_roles(teacher=teacher, verifier=verifier, generator=generator):
        plain_campaign(root)
    failing = Lake(root)
    [summary] = failing.read(RoundSummary, CAMPAIGN)
    # The once-raising teacher and Verifier were retried: their tasks verified, nothing rejected.
    assert (teacher.calls[once], verifier.calls[verifier_once]) == (2, 2)
    got = {v.task_id for v in failing.read(Verification, CAMPAIGN) if v.passed}
    assert {once, verifier_once} <= got and always not in got
    # The persistent errors: two tries each, counted as failed requests, stored as nothing.
    assert generator.calls[blueprint] == 2
    assert (summary.n_failed, summary.status) == (2, "failed")
    stored = failing.read(Rejection, CAMPAIGN)
    assert len(stored) == summary.n_rejected
    assert not [r for r in stored if r.error_class == "SystemError"]
    assert not [r for r in stored if r.blueprint_id in {blueprint, tasks[always].blueprint_id}]

    # The round table shows them in a column of their own (absent while there are none).
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(round_table(CAMPAIGN, [summary], simulated=True))
    console.print(round_table(CAMPAIGN, [clean], simulated=True))
    failed_table, clean_table = console.export_text().split(f"campaign {CAMPAIGN}")[1:]
    assert "failed" in failed_table and "retried by a resume" in failed_table
    assert "failed" not in clean_table

    # A resume with roles that work does both requests; the rest is reused, not duplicated.
    plain_campaign(root)
    [resumed] = failing.read(RoundSummary, CAMPAIGN)
    assert (resumed.n_failed, resumed.status) == (0, "succeeded")
    assert (resumed.n_verified, resumed.n_rejected) == (clean.n_verified, clean.n_rejected)
    assert rows(root) == rows(reference)
