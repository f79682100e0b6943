"""Crash and resume with every role on ``llm``: a resume re-sends only the calls in flight.

The campaign runs as ``evosyn campaign run`` in a subprocess against a scripted
OpenAI-compatible server in this process, which outlives the kill. An uninterrupted run counts
the requests a whole campaign makes (U). A second run in a fresh lake is killed in the middle
of synthesis: once the server has seen a share of the generate and rollout requests it stops
answering (requests keep arriving and wait, as requests in flight do), the answers already
sent have time to be received, and then the campaign's process group gets SIGKILL. The requests
it had sent (R1) include the H that were held, unanswered, at the kill. ``--resume`` then
finishes the campaign with R2 more requests. The chunks the kill interrupted run again, and
the campaign's response cache answers every call the killed run had been answered, so
R1 + R2 - U, the calls sent twice, is at most H. The resumed lake equals the uninterrupted
run's in every table but ``llm_calls`` (whose ids and clocks differ by nature); there, no key
repeats and every request of the resume is one ``ok`` row.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from campaign_processes import campaign_env
from llm_scripts import (
    MODELS,
    RoutedServer,
    Scripted,
    ScriptedModel,
    llm_config,
    realizable_pool,
    task_json,
)
from openai_server import Reply

from evosyn.records import TABLES, LLMCall
from evosyn.space import seed_space
from evosyn.storage import Lake

CID = "llm-e2e"  # the campaign id of ``llm_config``
BUDGET = 8  # two synthesis chunks of four blueprints, run at once
SEED = 0  # the campaign seed of ``llm_config``
EVOSYN = Path(sys.executable).with_name("evosyn")
ROLE_OF = {model: role for role, model in MODELS.items()}
SYNTHESIS = {"generator", "teacher", "user_simulator"}
# Columns that differ between two runs with the same seed: clocks and durations.
CLOCKS = {"created_at", "started_at", "finished_at", "seconds", "latency_s"}


class SlottedModel(ScriptedModel):
    """``ScriptedModel`` whose Planner answer follows from the request, not from call order.

    The Planner's calls overlap (directions and waves of slots at once), so the k-th call to
    arrive is not the same slot in two runs. Here the slot is read off the request: the
    direction's objective in the prompt, and the seed (campaign seed + round + slot index).
    """

    def __call__(self, body: dict[str, Any]) -> Reply:
        if self.role_of.get(str(body.get("model"))) != "planner":
            return super().__call__(body)
        prompt = str(body["messages"][0]["content"])
        first = BUDGET // 2 if '"objective": "under_covered"' in prompt else 0
        slot = first + int(body["seed"]) - SEED - 1
        answer = {"selections": self.pool[slot].selections, "intent": "a scripted blueprint"}
        return Reply.text(json.dumps(answer))


class Gate:
    """The server's answers: a ``ScriptedModel`` behind a gate that can stop answering.

    ``close_after(n)`` shuts the gate on the n-th synthesis request (Generator, teacher or user
    simulator): from then on every request is held unanswered until ``release``.
    """

    def __init__(self) -> None:
        self.model: ScriptedModel | None = None
        self._lock = threading.Lock()
        self._open = threading.Event()
        self._open.set()
        self._close_at: int | None = None
        self.received = 0
        self.synthesis = 0
        self.held = 0
        self.last_at = time.monotonic()

    def use(self, model: ScriptedModel) -> None:
        """Answer from ``model`` (a fresh one per campaign run)."""
        self.model = model

    def close_after(self, n: int) -> None:
        """Hold every request from the ``n``-th synthesis request on (counting from now)."""
        with self._lock:
            self._close_at = self.synthesis + n
            self.held = 0

    @property
    def closed(self) -> bool:
        """Whether the gate holds requests now."""
        return not self._open.is_set()

    def release(self) -> None:
        """Answer the held requests and every later one."""
        with self._lock:
            self._close_at = None
            self._open.set()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.received += 1
            self.last_at = time.monotonic()
            if ROLE_OF.get(str(body.get("model"))) in SYNTHESIS:
                self.synthesis += 1
                if self._close_at is not None and self.synthesis >= self._close_at:
                    self._open.clear()
            if not self._open.is_set():
                self.held += 1
        self._open.wait()
        assert self.model is not None
        return self.model(body)


@dataclass
class Run:
    """One campaign process: exit code, output tail and the requests it sent."""

    returncode: int
    output: str
    requests: int
    held_at_kill: int = 0


def write_config(server: RoutedServer, run_dir: Path) -> Path:
    """The campaign's YAML: every role on ``llm``, the cache at its default (on, per campaign)."""
    cfg = llm_config(server, run_dir, budget=BUDGET, timeout=30.0, cache=None)
    path = run_dir / "campaign.yaml"
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json", exclude_none=True)), "utf-8")
    return path


def campaign(
    config: Path,
    gate: Gate,
    api_url: str,
    *,
    resume: bool = False,
    kill_after: int | None = None,
    timeout: float = 150.0,
) -> Run:
    """Run the campaign; with ``kill_after``, SIGKILL it once the gate closed on that request."""
    before = gate.received
    args = [str(EVOSYN), "campaign", "run", str(config), "--campaign-id", CID]
    if resume:
        args.append("--resume")
    if kill_after is not None:
        gate.close_after(kill_after)
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=campaign_env(api_url, OPENAI_API_KEY="sk-test"),
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    held = 0
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if kill_after is not None and gate.closed:
                # Answers sent before the gate closed reach the client (and its cache), and its
                # other conversations send their next request, which waits: once no request
                # came for a second (1.5 s at least), the crash.
                closed_at = time.monotonic()
                while time.monotonic() < closed_at + 10 and (
                    time.monotonic() < closed_at + 1.5 or time.monotonic() < gate.last_at + 1.0
                ):
                    time.sleep(0.05)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                # Requests still in the server's accept queue are read (and held) after the kill.
                time.sleep(0.5)
                held = gate.held
                break
            time.sleep(0.05)
        if proc.poll() is None:
            pytest.fail(f"campaign ran past {timeout}s:\n{''.join(lines[-30:])}")
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        gate.release()
        reader.join(timeout=5)
    return Run(proc.returncode, "".join(lines)[-4000:], gate.received - before, held)


def table_rows(run_dir: Path) -> dict[str, list[str]]:
    """Every table but ``llm_calls``, rows as sorted JSON, clocks dropped, paths made relative."""
    lake = Lake(run_dir / "lake")
    out: dict[str, list[str]] = {}
    for name, cls in TABLES.items():
        if cls is LLMCall:
            continue
        rows = []
        for record in lake.read(cls, CID):
            data = {k: v for k, v in record.model_dump(mode="json").items() if k not in CLOCKS}
            rows.append(json.dumps(data, sort_keys=True).replace(str(run_dir), "<run>"))
        out[name] = sorted(rows)
    return out


def first_difference(want: list[str], got: list[str]) -> str:
    """Where the first two differing rows part, with a little context."""
    for a, b in zip(want, got, strict=True):
        if a != b:
            at = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
            return f"expected ...{a[max(at - 120, 0) : at + 80]!r}, got ...{b[at : at + 80]!r}"
    return "no difference"


@dataclass
class Served:
    """The server of the module, its gate, and the uninterrupted run's figures."""

    server: RoutedServer
    gate: Gate
    pool: list[Scripted]
    reference: Path
    requests: int
    synthesis: int

    def model(self) -> ScriptedModel:
        """A fresh model for one campaign (one scripted task per blueprint, so no two
        conversations are the same request)."""
        return SlottedModel(ROLE_OF, BUDGET, self.pool)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, api_url: str) -> Iterator[Served]:
    """The scripted server, and an uninterrupted campaign run against it (U requests)."""
    pool = realizable_pool(seed_space("airline", "pool"), BUDGET, task_json)
    gate = Gate()
    with RoutedServer(gate) as server:
        reference = tmp_path_factory.mktemp("reference")
        out = Served(server, gate, pool, reference, 0, 0)
        gate.use(out.model())
        whole = campaign(write_config(server, reference), gate, api_url)
        assert whole.returncode == 0, whole.output
        out.requests, out.synthesis = whole.requests, gate.synthesis
        assert out.synthesis > 4 * BUDGET, out.synthesis
        rows = Lake(reference / "lake").read(LLMCall, CID)
        # No request of the campaign repeats another, so every one is a call of its own.
        assert len(rows) == out.requests and {r.outcome for r in rows} == {"ok"}
        yield out


@pytest.mark.slow  # a Prefect server and five campaign processes: about two minutes
@pytest.mark.parametrize("share", [0.4, 0.8])
def test_a_killed_llm_campaign_resumes_resending_only_the_calls_in_flight(
    served: Served, tmp_path: Path, api_url: str, share: float
) -> None:
    """Kill once ``share`` of the synthesis requests were sent; resume; count and compare."""
    gate, u = served.gate, served.requests
    gate.use(served.model())
    run_dir = tmp_path / "crashed"
    config = write_config(served.server, run_dir)
    crashed = campaign(config, gate, api_url, kill_after=int(share * served.synthesis))
    assert crashed.returncode == -signal.SIGKILL, crashed.output
    r1, in_flight = crashed.requests, crashed.held_at_kill
    kill_time = time.time()
    resumed = campaign(config, gate, api_url, resume=True)
    assert resumed.returncode == 0, resumed.output
    r2 = resumed.requests

    reissued = r1 + r2 - u
    figures = f"U={u} R1={r1} R2={r2} re-issued={reissued} in flight at kill={in_flight}"
    print(f"kill at {share:.0%} of synthesis: {figures}")
    assert in_flight >= 1, f"the kill caught no request in flight: {figures}"
    assert 0 <= reissued <= in_flight, figures

    # The lake is the uninterrupted run's, table by table.
    want, got = table_rows(served.reference), table_rows(run_dir)
    for name in want:
        assert len(got[name]) == len(want[name]), f"{name}: row count ({figures})"
        assert got[name] == want[name], f"{name}: {first_difference(want[name], got[name])}"
    assert want["verifications"], "the campaign verified nothing"

    # llm_calls: no key twice; every request of the resume is one ok row, replays are cached.
    rows = Lake(run_dir / "lake").read(LLMCall, CID)
    keys = Counter((r.call_id, r.attempt) for r in rows)
    assert not [k for k, n in keys.items() if n > 1], "llm_calls repeats keys"
    assert {r.outcome for r in rows} <= {"ok", "cached"}
    after = [r for r in rows if r.started_at.timestamp() >= kill_time]
    before = [r for r in rows if r.started_at.timestamp() < kill_time]
    assert sum(r.outcome == "ok" for r in after) == r2, figures
    assert all(r.outcome == "ok" for r in before)
    assert len(before) <= r1 - in_flight, "more rows than answers before the kill"
    assert any(r.outcome == "cached" for r in after), "the resume replayed nothing"
