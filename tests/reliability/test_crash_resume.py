"""Crash and resume: kill a campaign at random points and between any two writes, resume it,
compare the lake with an uninterrupted run's.

SIGKILL trials: each starts ``evosyn campaign run`` in a subprocess (its own process group, so
the kill takes everything it started), watches its log for Prefect's stage lines, kills it a
random moment after a randomly chosen stage, then runs it again with ``--resume``. The resumed
lake must equal an uninterrupted run's: the same ids in every table, the same row counts, no
duplicates, no half-written file. Kill points are drawn from a seeded generator; the stage each
trial hit is in the assertion messages.

Write-boundary trials: a kill at a random moment rarely lands in the milliseconds between two
writes of one task, so the campaign is also run in-process (the flows' own bodies, each task as
its plain function) and stopped right after its k-th lake write, for every k, then resumed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import duckdb
import pytest
from campaign_processes import campaign_env
from plain_flows import plain_flows

from evosyn.config import load_config
from evosyn.records import TABLES
from evosyn.storage import Lake

pytestmark = pytest.mark.heavy

CONFIG = Path("deployments/campaigns/airline-offline.yaml").resolve()
CAMPAIGN = "crash"
# Two rounds of 60 blueprints: every stage runs twice and each round fans out over two chunks.
OVERRIDES = ["campaign.rounds=2", "campaign.budget_per_round=60"]
# Prefect's console lines that mark a stage starting or ending.
STAGE = re.compile(r"(Beginning (?:sub)?flow run|Task run '[^']+' - Finished|Flow run '[^']+' - )")
# Columns that legitimately differ between two runs with the same seed: clocks and durations.
TIMESTAMPS = {"created_at", "started_at", "finished_at", "seconds", "latency_s"}
EVOSYN = Path(sys.executable).with_name("evosyn")


@dataclass
class Run:
    """One campaign process: its exit code, its stage lines, and whether it was killed."""

    returncode: int
    stages: list[str]
    output: str
    killed_after: str | None = None


def _campaign(
    root: Path,
    api_url: str,
    *,
    resume: bool = False,
    kill_at: int | None = None,
    delay_s: float = 0.0,
    timeout: float = 600,
) -> Run:
    """Run the campaign; with ``kill_at``, SIGKILL it ``delay_s`` after stage line ``kill_at``."""
    args = [str(EVOSYN), "campaign", "run", str(CONFIG), "--campaign-id", CAMPAIGN]
    for item in [*OVERRIDES, f"lake.root={root}"]:
        args += ["--set", item]
    if resume:
        args.append("--resume")
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # INFO: the stage lines the kill points are drawn from (`campaign run` logs WARNING).
        env=campaign_env(api_url, PREFECT_LOGGING_LEVEL="INFO"),
        start_new_session=True,
    )
    assert proc.stdout is not None
    stages: list[str] = []
    lines: list[str] = []
    killed: list[str] = []
    timer: threading.Timer | None = None

    def kill(stage: str) -> None:
        if proc.poll() is None:
            killed.append(stage)
            os.killpg(proc.pid, signal.SIGKILL)

    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        lines.append(line)
        if STAGE.search(line):
            stages.append(line.strip())
            if kill_at is not None and len(stages) == kill_at + 1 and timer is None:
                timer = threading.Timer(delay_s, kill, args=(line.strip(),))
                timer.start()
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"campaign ran past {timeout}s:\n{''.join(lines[-30:])}")
    returncode = proc.wait()
    if timer is not None:
        timer.join()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        # Anything the campaign started (Prefect workers, Ray) goes with it.
        os.killpg(proc.pid, signal.SIGKILL)
    return Run(returncode, stages, "".join(lines), killed[0] if killed else None)


def snapshot(root: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows under ``root`` (schema files excluded), timestamps dropped, sorted."""
    con = duckdb.connect()
    out: dict[str, list[tuple[object, ...]]] = {}
    try:
        for table in TABLES:
            files = sorted(
                p.as_posix()
                for p in (root / table).glob("*/*/*.parquet")
                if "/_schema/" not in p.as_posix()
            )
            if not files:
                out[table] = []
                continue
            rel = con.read_parquet(files, union_by_name=True)
            columns = [c for c in rel.columns if c not in TIMESTAMPS]
            quoted = ", ".join(f'"{c}"' for c in columns)
            # The stored config names the lake's own folder, which differs between lakes.
            rows = [
                tuple(v.replace(str(root), "<lake>") if isinstance(v, str) else v for v in row)
                for row in rel.project(quoted).fetchall()
            ]
            out[table] = sorted(rows, key=repr)
    finally:
        con.close()
    return out


def _ids(root: Path) -> dict[str, list[str]]:
    """Each table's key values ("campaign/round/key...") for a readable diff."""
    keyed: dict[str, list[str]] = {}
    con = duckdb.connect()
    try:
        for table, cls in TABLES.items():
            files = [
                p.as_posix()
                for p in (root / table).glob("*/*/*.parquet")
                if "/_schema/" not in p.as_posix()
            ]
            if not files:
                keyed[table] = []
                continue
            cols = ", ".join(["campaign_id", "CAST(round AS VARCHAR)", *cls.KEY])
            rel = con.read_parquet(files, union_by_name=True).project(cols)
            keyed[table] = sorted("/".join(str(v) for v in row) for row in rel.fetchall())
    finally:
        con.close()
    return keyed


def assert_same_lake(expected: Path, got: Path, context: str) -> None:
    """Same ids per table, same row counts, no duplicate keys, same stored values."""
    want_ids, got_ids = _ids(expected), _ids(got)
    for table in TABLES:
        dupes = sorted({i for i in got_ids[table] if got_ids[table].count(i) > 1})
        assert not dupes, f"{context}: {table} has duplicate keys {dupes[:5]}"
        missing = sorted(set(want_ids[table]) - set(got_ids[table]))
        extra = sorted(set(got_ids[table]) - set(want_ids[table]))
        assert not missing and not extra, (
            f"{context}: {table} ids differ: missing {missing[:5]}, extra {extra[:5]}"
        )
        assert len(got_ids[table]) == len(want_ids[table]), f"{context}: {table} row count"
    want, have = snapshot(expected), snapshot(got)
    for table in TABLES:
        assert have[table] == want[table], f"{context}: {table} values differ"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, api_url: str) -> tuple[Path, list[str]]:
    """An uninterrupted run: its lake and the stage lines it logged."""
    root = tmp_path_factory.mktemp("reference") / "lake"
    run = _campaign(root, api_url)
    assert run.returncode == 0, run.output[-3000:]
    assert len(run.stages) > 10, run.output[-3000:]
    return root, run.stages


def crash_and_resume(
    tmp_path: Path, api_url: str, reference: tuple[Path, list[str]], trial: int
) -> str:
    """One seeded trial: kill, resume, compare; returns the stage the kill followed."""
    expected, stages = reference
    rng = random.Random(1000 + trial)
    # The last two lines (round and campaign finished) come after every write.
    kill_at = rng.randrange(len(stages) - 2)
    delay_s = rng.uniform(0.0, 0.5)
    root = tmp_path / f"trial-{trial}" / "lake"
    crashed = _campaign(root, api_url, kill_at=kill_at, delay_s=delay_s)
    where = f"trial {trial}: killed {delay_s:.2f}s after {stages[kill_at]!r}"
    if crashed.killed_after is None:
        assert crashed.returncode == 0, f"{where}\n{crashed.output[-3000:]}"
        pytest.fail(f"{where}: the campaign finished before the kill; pick an earlier point")
    assert crashed.returncode == -signal.SIGKILL, where
    resumed = _campaign(root, api_url, resume=True)
    if resumed.returncode == 2 and "nothing to resume" in resumed.output:
        # Killed before the campaign row landed: there is nothing to resume, so start again.
        assert not list((root / "campaigns").glob("crash/*/*.parquet")), where
        resumed = _campaign(root, api_url)
    assert resumed.returncode == 0, f"{where}\n{resumed.output[-3000:]}"
    assert_same_lake(expected, root, where)
    return where


@pytest.mark.slow
def test_crash_and_resume_once(
    tmp_path: Path, api_url: str, reference: tuple[Path, list[str]]
) -> None:
    """The short version: one seeded kill point (about 40 s with the reference run)."""
    crash_and_resume(tmp_path, api_url, reference, trial=0)


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(1, 11))
def test_crash_and_resume_trials(
    tmp_path: Path, api_url: str, reference: tuple[Path, list[str]], trial: int
) -> None:
    """Ten more seeded kill points spread over the campaign's stages."""
    crash_and_resume(tmp_path, api_url, reference, trial)


# ------------------------------------------------------------------ Ctrl-C


@dataclass
class Interrupted:
    """A campaign stopped by SIGINT to its process group, as a terminal's Ctrl-C sends it."""

    returncode: int
    stop_s: float
    after: list[str]
    output: str


def _interrupt(root: Path, env: dict[str, str], when: str, timeout: float = 300) -> Interrupted:
    """Run the campaign; SIGINT its process group once a lake file matches ``when``."""
    args = [str(EVOSYN), "campaign", "run", str(CONFIG), "--campaign-id", CAMPAIGN]
    for item in [*OVERRIDES, f"lake.root={root}"]:
        args += ["--set", item]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert proc.stdout is not None
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(
        target=lambda: lines.extend((time.monotonic(), ln) for ln in proc.stdout)
    )
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not list(root.glob(when)):
            assert proc.poll() is None, "the campaign ended before the interrupt point"
            assert time.monotonic() < deadline, f"no {when} after {timeout}s"
            time.sleep(0.05)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        returncode = proc.wait(timeout=60)
        stop_s = time.monotonic() - sent
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        reader.join()
    after = [ln.rstrip("\n") for t, ln in lines if t >= sent and ln.strip()]
    return Interrupted(returncode, stop_s, after, "".join(ln for _, ln in lines))


def _resume_line(root: Path) -> str:
    overrides = " ".join(f"--set {item}" for item in [*OVERRIDES, f"lake.root={root}"])
    return (
        f"interrupted: resume with `evosyn campaign run {CONFIG} --campaign-id {CAMPAIGN} "
        f"{overrides} --resume`"
    )


def test_ctrl_c_stops_a_campaign_within_seconds_with_one_line(tmp_path: Path) -> None:
    """Prefect's temporary server, as a user gets it: it receives the SIGINT too."""
    env = {k: v for k, v in campaign_env("").items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")  # the temporary server's database
    root = tmp_path / "lake"
    run = _interrupt(root, env, f"tasks/{CAMPAIGN}/1/*.parquet")
    assert run.returncode == 130, run.output[-3000:]
    assert run.stop_s < 5, f"stopped {run.stop_s:.1f}s after the SIGINT"
    assert "Traceback" not in run.output and "Error" not in run.output, run.output[-3000:]
    # What follows the SIGINT: the progress bars' last frame, then the one line.
    assert run.after[-1] == _resume_line(root), run.after
    assert sum("interrupted" in line for line in run.after) == 1
    assert len(run.after) <= 10, run.after


@pytest.mark.slow
def test_ctrl_c_then_resume_gives_the_uninterrupted_lake(
    tmp_path: Path, api_url: str, reference: tuple[Path, list[str]]
) -> None:
    """SIGINT in round 2 on a Prefect server: runs end Cancelled, resume is exact."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    root = tmp_path / "lake"
    run = _interrupt(root, campaign_env(api_url), f"tasks/{CAMPAIGN}/2/*.parquet")
    assert run.returncode == 130 and run.stop_s < 5, (run.stop_s, run.output[-3000:])
    assert run.after[-1] == _resume_line(root), run.after
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=CAMPAIGN))
        )
    states = [(r.name, r.state_type.value) for r in runs if r.state_type is not None]
    assert not [s for s in states if s[1] == "RUNNING"], states
    assert (f"{CAMPAIGN}-round-2", "CANCELLED") in states, states
    resumed = _campaign(root, api_url, resume=True)
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert_same_lake(reference[0], root, "interrupted in round 2")


# ------------------------------------------------------------------ kills between writes


class Killed(BaseException):
    """Stands in for SIGKILL right after a lake write (not an Exception: nothing catches it)."""


def plain_campaign(root: Path) -> None:
    """``campaign_flow``'s body with every flow and task it calls run as plain functions."""
    from evosyn.flows import campaign as campaign_module
    from evosyn.flows import round as round_module

    cfg = load_config(
        CONFIG, [*OVERRIDES, f"lake.root={root}", f"campaign.id={CAMPAIGN}"], environ={}
    )
    with plain_flows(round_module, campaign_module):
        campaign_module.campaign_flow.fn(cfg, CAMPAIGN)


@contextlib.contextmanager
def kill_after_write(k: int | None) -> Iterator[list[str]]:
    """Count lake writes (their keys land in the yielded list); raise Killed after the k-th."""
    real = Lake.write
    keys: list[str] = []
    lock = threading.Lock()
    counter = itertools.count(1)

    def write(self: Lake, records: Any, batch: str) -> str:
        key = real(self, records, batch)
        with lock:
            n = next(counter)
            keys.append(key)
        if n == k:
            raise Killed(key)
        return key

    with patch.object(Lake, "write", write):
        yield keys


@pytest.fixture(scope="module")
def plain_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """An uninterrupted in-process run: its lake and the keys of its writes, in order."""
    root = tmp_path_factory.mktemp("plain-reference") / "lake"
    with kill_after_write(None) as keys:
        plain_campaign(root)
    return root, list(keys)


@pytest.mark.slow
def test_a_kill_between_any_two_writes_resumes_to_the_same_lake(
    tmp_path: Path, plain_reference: tuple[Path, list[str]]
) -> None:
    """Every write boundary of a campaign: stop after write k, resume, compare."""
    expected, keys = plain_reference
    failures: list[str] = []
    for k in range(1, len(keys)):
        root = tmp_path / f"k{k:03d}" / "lake"
        with pytest.raises(Killed), kill_after_write(k):
            plain_campaign(root)
        plain_campaign(root)  # the resume
        try:
            assert_same_lake(expected, root, f"killed after write {k} ({keys[k - 1]})")
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)
