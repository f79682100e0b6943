"""Gateway overhead against the LLM-latency floor (issue #5).

A plain script (not a pytest test):

    python tests/benchmarks/llm_overhead.py [--n 1500] [--concurrency 64] [--latency 1.0]
        [--shards 1 2]

The local OpenAI-compatible test server runs in its own process and answers every request
after a fixed latency L. N calls go through ``Gateway.complete`` (real litellm over HTTP) with
C in flight at once; the floor is ceil(N/C)·L and the target is wall ≤ 1.10 × floor. It prints
the ratio and the client CPU per call. With ``--shards P`` the calls are split over P client
processes of C/P threads each (same total concurrency), for when one process's CPU for
litellm (several ms per call) would not keep up; every shard count is run and shown.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 1.10


def _serve(latency: float, ports: Any, stop: Any) -> None:
    from openai_server import OpenAIServer, Reply

    with OpenAIServer(default=Reply(content="ok", delay_s=latency)) as server:
        ports.put(server.port)
        stop.wait()


def _gateway(url: str, concurrency: int) -> Any:
    from evosyn.agents.gateway import ConcurrencyLimiter, Gateway
    from evosyn.config import LLMSection, ModelSettings

    llm = LLMSection(default=ModelSettings(model="openai/bench-model", api_base=url, timeout=60.0))
    return Gateway.from_config(
        llm, "teacher", limiter=ConcurrencyLimiter(), concurrency=concurrency, max_attempts=1
    )


def _client(url: str, calls: int, threads: int, start: Any, results: Any) -> None:
    """One client process: warm up, wait for the others, then make ``calls`` calls."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    gateway = _gateway(url, threads)
    messages = [{"role": "user", "content": "ping"}]
    with ThreadPoolExecutor(threads) as pool:
        # Imports, connection setup and litellm's first-call work are not overhead per call.
        list(pool.map(lambda _: gateway.complete(messages), range(threads)))
        start.wait()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        answers = list(pool.map(lambda i: gateway.complete(messages, seed=i), range(calls)))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    ok = sum(a.text == "ok" for a in answers)
    results.put((wall, cpu, ok))


def run(url: str, n: int, concurrency: int, shards: int) -> tuple[float, float, int]:
    """Wall seconds, total client CPU seconds and successful calls over ``shards`` processes."""
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(shards + 1)
    results = ctx.Queue()
    sizes = [n // shards + (i < n % shards) for i in range(shards)]
    threads = concurrency // shards
    procs = [
        ctx.Process(target=_client, args=(url, size, threads, start, results)) for size in sizes
    ]
    for proc in procs:
        proc.start()
    start.wait()
    wall0 = time.perf_counter()
    outs = [results.get() for _ in procs]
    wall = time.perf_counter() - wall0
    for proc in procs:
        proc.join()
    return wall, sum(o[1] for o in outs), sum(o[2] for o in outs)


def main() -> int:
    """Run the benchmark; exit 1 when no shard count meets the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1500, help="calls")
    parser.add_argument("--concurrency", type=int, default=64, help="calls in flight")
    parser.add_argument("--latency", type=float, default=1.0, help="server latency L (s)")
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2], help="client processes")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    ctx = mp.get_context("spawn")
    ports, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(args.latency, ports, stop), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ports.get(timeout=60)}/v1"
    floor = math.ceil(args.n / args.concurrency) * args.latency
    print(
        f"N={args.n} C={args.concurrency} L={args.latency:g}s  floor ceil(N/C)*L = {floor:.2f}s"
        f"  target <= {TARGET:.2f}x  (cores: {os.cpu_count()})"
    )
    print(f"{'shards':>6} {'wall s':>8} {'ratio':>7} {'CPU ms/call':>12} {'ok':>6}  verdict")
    passed = False
    try:
        for shards in args.shards:
            wall, cpu, ok = run(url, args.n, args.concurrency, shards)
            ratio = wall / floor
            good = ratio <= TARGET and ok == args.n
            passed |= good
            print(
                f"{shards:>6} {wall:>8.2f} {ratio:>7.3f} {1000 * cpu / args.n:>12.2f} "
                f"{ok:>6}  {'PASS' if good else 'MISS'}"
            )
    finally:
        stop.set()
        server.join(timeout=10)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
