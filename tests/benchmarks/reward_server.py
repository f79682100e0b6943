"""Reward-server throughput: verdicts per second per core of the server process.

A plain script (not a pytest test):

    python tests/benchmarks/reward_server.py [--domain airline] [--count 100] [--requests 2000]
        [--batch 50]

Synthesizes ``--count`` blueprints of the domain with the programmatic pipeline (a fifth of the
rollouts with a seeded mistake, so verdicts are mixed) into a temporary lake, starts
``evosyn reward serve --campaign ...`` in its own process (uvicorn, one event loop), and sends
``--requests`` trajectories of the served tasks by task id over keep-alive HTTP: one request
per verdict (``POST /reward``), then batches of ``--batch`` (``POST /rewards``). The figure is
verdicts over the server process's CPU seconds (user + system, read from the OS), so the
client sharing the machine does not count against it; wall-clock verdicts per second are
printed beside it, and the in-process scorer's rate without HTTP. Every verdict is checked
against the replay verifier's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from tau2.data_model.message import AssistantMessage, Message, ToolMessage

from evosyn.agents.episodes import RewardScorer
from evosyn.agents.planner.programmatic import ProgrammaticPlanner
from evosyn.agents.synthesis import SynthesisBatch, synthesize
from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments.registry import domain_plugin
from evosyn.records import Campaign, Direction
from evosyn.space import seed_space
from evosyn.storage import Lake

CAMPAIGN = "reward-bench"


def synthesized(domain: str, count: int, seed: int) -> SynthesisBatch:
    """One exploration round of ``count`` blueprints, a fifth with seeded mistakes."""
    plugin = domain_plugin(domain)
    space = seed_space(domain, CAMPAIGN, round=1)
    direction = Direction(
        campaign_id=CAMPAIGN,
        round=1,
        direction_id="r1-uniform",
        space_version=space.version,
        objective="exploration",
        budget=count,
    )
    blueprints = ProgrammaticPlanner(plugin.infeasible).plan(space, direction, seed=seed)
    teacher = plugin.teacher(mistake_rate=0.2)
    return synthesize(blueprints, plugin.generator(), teacher, ReplayVerifier(domain), seed)


def write_lake(root: Path, domain: str, batch: SynthesisBatch) -> None:
    """The batch as campaign ``reward-bench``'s round 1."""
    lake = Lake(root)
    campaign = Campaign(
        campaign_id=CAMPAIGN, round=0, name="bench", domain=domain, seed=0, config={}
    )
    lake.write([campaign], "campaign")
    lake.write(batch.tasks, "tasks")
    lake.write(batch.trajectories, "trajectories")
    lake.write(batch.verifications, "verifications")


def without_last_call(messages: list[Message]) -> list[Message]:
    """``messages`` without the last assistant tool call and its answers."""
    calls = [i for i, m in enumerate(messages) if isinstance(m, AssistantMessage) and m.tool_calls]
    if not calls:
        return messages[:-1]
    last = calls[-1]
    end = last + 1
    while end < len(messages) and isinstance(messages[end], ToolMessage):
        end += 1
    return messages[:last] + messages[end:]


def free_port() -> int:
    """A free loopback port."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(process: psutil.Process) -> float:
    """User and system CPU seconds of ``process`` so far."""
    times = process.cpu_times()
    return float(times.user + times.system)


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    batch = synthesized(args.domain, args.count, args.seed)
    passed_tasks = {v.task_id for v in batch.verifications if v.passed}
    tasks = {t.task_id: t.task for t in batch.tasks}
    # Every trajectory of a served task, and each without its last tool call (mostly fails).
    pairs: list[tuple[str, list[Message]]] = []
    for t in batch.trajectories:
        if t.task_id in passed_tasks:
            pairs += [(t.task_id, t.messages), (t.task_id, without_last_call(t.messages))]
    bodies = [
        json.dumps(
            {"task_id": task_id, "messages": [m.model_dump(mode="json") for m in messages]}
        ).encode()
        for task_id, messages in pairs
    ]
    verifier = ReplayVerifier(args.domain)
    expected = [verifier.verify(tasks[i], m).passed for i, m in pairs]

    scorer = RewardScorer(args.domain)
    for task_id, messages in pairs:  # warm: databases parsed, gold states cached
        scorer.score(tasks[task_id], messages)
    start = time.perf_counter()
    for i in range(args.requests):
        task_id, messages = pairs[i % len(pairs)]
        scorer.score(tasks[task_id], messages)
    in_process = args.requests / (time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as tmp:
        write_lake(Path(tmp) / "lake", args.domain, batch)
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "evosyn.agents.episodes.cli",
            "serve",
            "--campaign",
            CAMPAIGN,
            "--lake",
            str(Path(tmp) / "lake"),
            "--port",
            str(port),
        ]
        server = subprocess.Popen(command, env=os.environ.copy())
        try:
            figures = measure(server, port, bodies, expected, args)
        finally:
            server.terminate()
            server.wait(30)
    print(
        f"domain {args.domain}: {len(passed_tasks)} tasks served, {len(pairs)} trajectories, "
        f"{sum(expected)} of them passing"
    )
    print(f"figure in_process_verdicts_per_s {in_process:.0f}")
    for name, value in figures.items():
        print(f"figure {name} {value:.0f}")


def measure(
    server: subprocess.Popen[bytes],
    port: int,
    bodies: list[bytes],
    expected: list[bool],
    args: argparse.Namespace,
) -> dict[str, float]:
    """Single and batched throughput against the running server; verdicts checked."""
    url = f"http://127.0.0.1:{port}"
    process = psutil.Process(server.pid)
    headers = {"content-type": "application/json"}
    with httpx.Client(base_url=url, timeout=120) as client:
        deadline = time.monotonic() + 120
        while True:
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the reward server did not start")
            time.sleep(0.2)
        for body in bodies:  # warm: databases parsed, gold states cached
            client.post("/reward", content=body, headers=headers).raise_for_status()

        n = args.requests
        cpu, wall = cpu_seconds(process), time.perf_counter()
        for i in range(n):
            answer = client.post("/reward", content=bodies[i % len(bodies)], headers=headers)
            answer.raise_for_status()
            if answer.json()["passed"] != expected[i % len(bodies)]:
                raise SystemExit(f"verdict {i} differs from the replay verifier's")
        single_cpu, single_wall = cpu_seconds(process) - cpu, time.perf_counter() - wall

        chunks = [list(range(i, min(i + args.batch, n))) for i in range(0, n, args.batch)]
        payloads = [
            b'{"requests": [' + b",".join(bodies[j % len(bodies)] for j in c) + b"]}"
            for c in chunks
        ]
        cpu, wall = cpu_seconds(process), time.perf_counter()
        for chunk, payload in zip(chunks, payloads, strict=True):
            answer = client.post("/rewards", content=payload, headers=headers)
            answer.raise_for_status()
            got = [v["passed"] for v in answer.json()["verdicts"]]
            if got != [expected[j % len(bodies)] for j in chunk]:
                raise SystemExit("a batched verdict differs from the replay verifier's")
        batch_cpu, batch_wall = cpu_seconds(process) - cpu, time.perf_counter() - wall
    return {
        "single_verdicts_per_s_per_core": n / single_cpu,
        "single_verdicts_per_s_wall": n / single_wall,
        "batched_verdicts_per_s_per_core": n / batch_cpu,
        "batched_verdicts_per_s_wall": n / batch_wall,
    }


if __name__ == "__main__":
    main()
