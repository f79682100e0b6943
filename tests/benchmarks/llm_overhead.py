"""Gateway overhead against the LLM-latency floor, and client CPU per call by client path.

A plain script (not a pytest test):

    python tests/benchmarks/llm_overhead.py [--n 1500] [--concurrency 64] [--latency 1.0]
        [--shards 1 2] [--paths gateway gateway-fixed litellm openai]

The local OpenAI-compatible test server runs in its own process and answers every request
after a fixed latency L. N calls go with C in flight at once; the floor is ceil(N/C)·L and the
target is wall ≤ 1.10 × floor. Each client path is run in the same session, side by side, and
printed with its wall/floor ratio, its client CPU per call and that CPU as a share of the
gateway's (issue #20 asks for ≤ 3 ms per call at C = 64):

- ``gateway``: ``Gateway.complete`` as every role calls it (litellm underneath, the adaptive
  per-model limit on);
- ``gateway-fixed``: the same with ``adaptive_concurrency: false`` (what AIMD costs);
- ``litellm``: ``litellm.completion`` alone, no gateway (what the gateway adds to litellm);
- ``openai``: the ``openai`` SDK's client, one shared per process (the floor of a cheaper path
  that keeps OpenAI-compatible servers, which litellm itself uses underneath).

With ``--shards P`` the calls are split over P client processes of C/P threads each (same total
concurrency), for when one process's CPU per call would not keep up.
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
PATHS = ("gateway", "gateway-fixed", "litellm", "openai")


def _serve(latency: float, ports: Any, stop: Any) -> None:
    from openai_server import OpenAIServer, Reply

    with OpenAIServer(default=Reply(content="ok", delay_s=latency)) as server:
        ports.put(server.port)
        stop.wait()


def _caller(path: str, url: str, concurrency: int) -> Any:
    """A function ``call(seed) -> text`` of one client path."""
    messages = [{"role": "user", "content": "ping"}]
    if path in ("gateway", "gateway-fixed"):
        from evosyn.agents.gateway import ConcurrencyLimiter, Gateway
        from evosyn.config import LLMSection, ModelSettings

        llm = LLMSection(
            default=ModelSettings(model="openai/bench-model", api_base=url, timeout=60.0)
        )
        gateway = Gateway.from_config(
            llm,
            "teacher",
            limiter=ConcurrencyLimiter(),
            concurrency=concurrency,
            max_attempts=1,
            adaptive_concurrency=path == "gateway",
        )
        return lambda seed: gateway.complete(messages, seed=seed).text
    if path == "litellm":
        import litellm

        return lambda seed: (
            litellm.completion(
                model="openai/bench-model",
                messages=messages,
                api_base=url,
                timeout=60.0,
                seed=seed,
                num_retries=0,
                max_retries=0,
            )
            .choices[0]
            .message.content
        )
    if path == "openai":
        import openai

        client = openai.OpenAI(base_url=url, timeout=60.0, max_retries=0)
        return lambda seed: (
            client.chat.completions.create(
                model="bench-model",
                messages=messages,  # type: ignore[arg-type]
                seed=seed,
            )
            .choices[0]
            .message.content
        )
    raise ValueError(f"unknown client path {path!r}")


def _client(path: str, url: str, calls: int, threads: int, start: Any, results: Any) -> None:
    """One client process: warm up, wait for the others, then make ``calls`` calls."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    call = _caller(path, url, threads)
    with ThreadPoolExecutor(threads) as pool:
        # Imports, connection setup and litellm's first-call work are not overhead per call.
        list(pool.map(lambda i: call(-1 - i), range(threads)))
        start.wait()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        answers = list(pool.map(call, range(calls)))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    ok = sum(a == "ok" for a in answers)
    results.put((wall, cpu, ok))


def run(path: str, url: str, n: int, concurrency: int, shards: int) -> tuple[float, float, int]:
    """Wall seconds, total client CPU seconds and successful calls over ``shards`` processes."""
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(shards + 1)
    results = ctx.Queue()
    sizes = [n // shards + (i < n % shards) for i in range(shards)]
    threads = concurrency // shards
    procs = [
        ctx.Process(target=_client, args=(path, url, size, threads, start, results))
        for size in sizes
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
    """Run the benchmark; exit 1 when no shard count of the gateway meets the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1500, help="calls")
    parser.add_argument("--concurrency", type=int, default=64, help="calls in flight")
    parser.add_argument("--latency", type=float, default=1.0, help="server latency L (s)")
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2], help="client processes")
    parser.add_argument(
        "--paths", nargs="+", default=list(PATHS), choices=PATHS, help="client paths to compare"
    )
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
    print(
        f"{'path':>13} {'shards':>6} {'wall s':>8} {'ratio':>7} {'CPU ms/call':>12} "
        f"{'vs gateway':>10} {'ok':>6}  verdict"
    )
    passed = False
    reference: dict[int, float] = {}
    try:
        for shards in args.shards:
            for path in args.paths:
                wall, cpu, ok = run(path, url, args.n, args.concurrency, shards)
                ratio = wall / floor
                good = ratio <= TARGET and ok == args.n
                if path == "gateway":
                    passed |= good
                per_call = 1000 * cpu / args.n
                reference.setdefault(shards, per_call)
                print(
                    f"{path:>13} {shards:>6} {wall:>8.2f} {ratio:>7.3f} {per_call:>12.2f} "
                    f"{per_call / reference[shards]:>10.2f} {ok:>6}  {'PASS' if good else 'MISS'}",
                    flush=True,
                )
    finally:
        stop.set()
        server.join(timeout=10)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
