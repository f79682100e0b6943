"""Parallel learner evaluation: τ²-bench episodes at once against a server with 1 s per call.

Runs ``--episodes`` evaluation episodes (airline's 50 official tasks, as many trials each as it
takes) through ``EpisodeRunner.evaluate`` at ``--concurrency`` against ``tests/openai_server.py``,
whose every reply (learner and user simulator alike) takes ``--latency`` seconds and repeats the
request's last user line. The floor is what the calls would take if the server were always
full: calls / concurrency x latency. The same episodes then run one at a time with no latency
(the echo is a pure function of the request, so latency cannot change a result); the two runs
must store the same rows. Issue 33 asks for at most 1.2x the floor at concurrency 32.

    python tests/benchmarks/parallel_episodes.py                 # 300 episodes, 32 at once
    python tests/benchmarks/parallel_episodes.py --episodes 64 --concurrency 8
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openai_server import OpenAIServer, Reply

from evosyn.agents.gateway import Gateway, GatewaySettings
from evosyn.agents.learner.base import DiagnosticItem
from evosyn.agents.learner.episodes import EpisodeRunner, EpisodeSettings
from evosyn.environments import get_domain
from evosyn.records import EvalResult, Training

TRAINING = Training(
    campaign_id="bench",
    round=1,
    training_id="bench-r1",
    learner="icl",
    recipe={},
    dataset_snapshot="",
    n_samples=0,
    status="succeeded",
)


def evaluate(
    server: OpenAIServer, domain: str, episodes: int, concurrency: int, max_steps: int
) -> list[EvalResult]:
    """``episodes`` episodes over the domain's official tasks, ``concurrency`` at a time."""
    official = get_domain(domain).tasks()
    trials = math.ceil(episodes / len(official))
    tasks = {t.id: t for t in official[: math.ceil(episodes / trials)]}
    items = [DiagnosticItem(task_id=i, split="diagnostic", realized={}) for i in tasks]
    # One model string for both roles: the gateways' shared limit is the server's width.
    settings = GatewaySettings(
        model="openai/bench",
        api_base=server.url,
        cache=False,
        max_attempts=1,
        timeout=60,
        concurrency=concurrency,
    )
    runner = EpisodeRunner(
        domain,
        Gateway("learner", settings),
        Gateway("user_simulator", settings),
        lambda task: "POLICY",
        EpisodeSettings(
            trials=trials, max_steps=max_steps, infra_retries=0, concurrency=concurrency
        ),
    )
    results = runner.evaluate(TRAINING, tasks, items)
    if runner.failures:
        raise SystemExit(f"infra failures: {runner.failures[:3]}")
    return results


def main() -> None:
    """Time the parallel run against its floor and compare it with a serial run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=1.0, help="Seconds per call.")
    parser.add_argument("--max-steps", type=int, default=8, help="Orchestrator steps/episode.")
    parser.add_argument("--domain", default="airline")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")

    with OpenAIServer(default=Reply.echo_user(delay_s=args.latency)) as server:
        start = time.perf_counter()
        parallel = evaluate(server, args.domain, args.episodes, args.concurrency, args.max_steps)
        seconds = time.perf_counter() - start
        calls, widest = server.request_count, server.max_in_flight
    with OpenAIServer(default=Reply.echo_user()) as server:
        start = time.perf_counter()
        serial = evaluate(server, args.domain, args.episodes, 1, args.max_steps)
        serial_seconds = time.perf_counter() - start
    floor = calls / args.concurrency * args.latency
    same = [r.model_dump() for r in parallel] == [r.model_dump() for r in serial]
    print(
        json.dumps(
            {
                "episodes": len(parallel),
                "concurrency": args.concurrency,
                "latency_s": args.latency,
                "calls": calls,
                "max_in_flight": widest,
                "seconds": round(seconds, 2),
                "floor_s": round(floor, 2),
                "ratio_to_floor": round(seconds / floor, 3),
                "serial_no_latency_s": round(serial_seconds, 2),
                "same_results_as_serial": same,
            },
            indent=2,
        )
    )
    if not same:
        raise SystemExit("the parallel run stored other rows than the serial run")


if __name__ == "__main__":
    main()
