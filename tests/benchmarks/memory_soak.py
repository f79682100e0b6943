"""Memory soak: the client's RSS over many LLM gateway calls stays flat after warm-up.

A plain script (not a pytest test):

    python tests/benchmarks/memory_soak.py [--n 20000] [--concurrency 64] [--block 1000]
        [--warmup 4000] [--no-flush]

The local OpenAI-compatible test server runs in its own process (its request log grows; the
client's must not) and answers at once. The client sends N calls through one
``Gateway.complete`` (real litellm over HTTP), C in flight, in blocks; after each block it
flushes the gateway's accounting rows to a lake, as a synthesis task does per batch, and samples
its RSS. Growth is measured from the sample at the end of warm-up to the last one; the target is
at most 10%. ``--no-flush`` keeps every accounting row in memory, to show what flushing saves.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 0.10


def _serve(ports: Any, stop: Any) -> None:
    from openai_server import OpenAIServer, Reply

    with OpenAIServer(default=Reply(content="ok")) as server:
        ports.put(server.port)
        stop.wait()


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


def main() -> int:
    """Run the soak and print the RSS samples; exit 1 when growth misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="calls")
    parser.add_argument("--concurrency", type=int, default=64, help="calls in flight")
    parser.add_argument("--block", type=int, default=1000, help="calls between RSS samples")
    parser.add_argument("--warmup", type=int, default=4000, help="calls before the baseline")
    parser.add_argument("--no-flush", action="store_true", help="keep accounting rows in memory")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_API_KEY", "sk-soak")

    ctx = mp.get_context("spawn")
    ports, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(ports, stop), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ports.get(timeout=60)}/v1"

    from evosyn.agents.gateway import ConcurrencyLimiter, Gateway
    from evosyn.config import LLMSection, ModelSettings
    from evosyn.storage import Lake
    from evosyn.tasks.lake_step import Calls, flush_calls

    llm = LLMSection(default=ModelSettings(model="openai/soak-model", api_base=url, timeout=60.0))
    gateway = Gateway.from_config(
        llm, "teacher", limiter=ConcurrencyLimiter(), concurrency=args.concurrency
    )
    lake = Lake(Path(tempfile.mkdtemp(prefix="evosyn-soak-")) / "lake")
    proc = psutil.Process()
    messages = [{"role": "user", "content": "ping"}]
    samples: list[tuple[int, int, float, int]] = []  # calls, rss, seconds, pending rows
    done = ok = 0
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(args.concurrency) as pool:
            while done < args.n:
                size = min(args.block, args.n - done)
                answers = list(
                    pool.map(lambda i: gateway.complete(messages, seed=i), range(done, done + size))
                )
                ok += sum(a.text == "ok" for a in answers)
                done += size
                if not args.no_flush:
                    flush_calls(lake, Calls([gateway], "soak", 1, f"calls-{done:06d}"))
                samples.append(
                    (done, proc.memory_info().rss, time.perf_counter() - start, gateway.pending)
                )
    finally:
        stop.set()
        server.join(timeout=10)

    base = next((s for s in samples if s[0] >= args.warmup), samples[0])
    last = samples[-1]
    growth = (last[1] - base[1]) / base[1]
    peak = max(s[1] for s in samples[samples.index(base) :])
    print(
        f"N={args.n} C={args.concurrency} latency 0  flush={'no' if args.no_flush else 'yes'}"
        f"  ok={ok}  {done / last[2]:,.0f} calls/s  (cores: {os.cpu_count()})"
    )
    print(f"{'calls':>7} {'RSS MiB':>8} {'vs base':>8} {'seconds':>8} {'pending':>8}")
    for calls, rss, secs, pending in samples:
        mark = "  <- baseline (end of warm-up)" if (calls, rss) == base[:2] else ""
        print(
            f"{calls:>7} {_mib(rss):>8} {100 * (rss - base[1]) / base[1]:>+7.1f}% "
            f"{secs:>8.1f} {pending:>8}{mark}"
        )
    verdict = "PASS" if growth <= TARGET and ok == args.n else "MISS"
    print(
        f"growth after warm-up: {100 * growth:+.1f}% (peak {_mib(peak)} MiB, base "
        f"{_mib(base[1])} MiB); target <= {100 * TARGET:.0f}%: {verdict}"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
