"""Round overhead against the LLM-latency floor, and the same round under LLM faults (issue #10).

A plain script (not a pytest test):

    python tests/benchmarks/round_overhead.py [--blueprints 1500] [--latency 1.0]
        [--concurrency 32] [--timeout 5.0] [--retry-after 1.0] [--max-attempts 5]
        [--adaptive [--serial]] [--generation-window W]

One round with every role on ``llm`` (Designer, Planner, Generator, teacher, user simulator,
Reflector) against the local OpenAI-compatible test server (``tests/llm_scripts.py``'s
``RoutedServer``), which answers every request after a fixed latency L. The server runs in a
process of its own, as a model server would, so its CPU is not the client's. Every role asks
for one shared model string (``llm_config(shared_model=True)``), so the gateways' limit of C
requests in flight (``llm.default.concurrency``) holds for the whole round, as with one served
model. The round is ``round_flow``'s own body (flows/round.py) with its tasks run as plain
functions (``plain_flows``) and the synthesis chunks on a thread pool with one thread per chunk,
as Prefect's thread-pool task runner (unbounded) gives them; then the Reflector's decision on it
(``reflect``, round 2).

Printed per run, with calls = requests the server received:

- ``ceil(calls/C)·L``: every call of the round spread evenly over C slots (the target's floor);
- stage floor: the loop's stages are barriers (design, plan, generate, roll out, reflect run
  one after the other: the Generator is one step for the round, before the rollout chunks),
  so sum over stages of ceil(calls_in_stage/C)·L, the rollout stage at least its longest
  conversation (the turn chain, teacher and user turns alternating);
- loop floor: the stage floor, where the round schedules as before issue #38 (``--serial``'s
  arms) also with each rollout chunk's calls one after another and each Generator window
  (``--generation-window``; by default C, the Generator's concurrency, as the round sets it,
  and 8 blueprints, the fixed window before issue #38, in ``--serial``'s arms) at least a call.

A chunk's conversations run at once (``agents.synthesis.roll_out_each``, up to
``CONVERSATIONS_PER_SLOT`` · C in the process), and the Generator's next ``WINDOWS_AHEAD``
windows send their first calls while a window is screened (``agents.synthesis.generate``).

The round's client CPU per request is printed too: with C/L requests per second to issue, the
client needs (C/L)·(CPU per request) of a core, and a round whose client is short of a core
cannot meet its floor, whatever the orchestration does.

The faulty run is the same round with 20% 429 (with Retry-After), 5% 500 and 2% replies slower
than the client timeout, drawn per request, and 5% malformed JSON on the JSON roles' answers
(Designer, Planner, Generator, Reflector). It must complete with every requested blueprint
accounted for (verified, or rejected with a reason; a call that failed names its error class)
and no call over ``max_attempts`` attempts; its wall time is compared with the clean run's.
Targets (issue #10): clean wall ≤ 1.15 × floor, faulty wall ≤ 1.30 × clean wall, for the
issue's 1,500 blueprints (the default; about 15 minutes per run at L=1 s, C=32).

``--adaptive`` (issue #38) runs the clean round instead against a server that batches like
vLLM (``openai_server.Batching``: C requests decode together, a request alone takes L, the
rest queue), with the gateways' adaptive concurrency on and off, for two servers: one whose
latency stays L up to a full batch, and one where a full batch takes twice as long (2L per
request, still twice the throughput of half a batch). Each run's floor is
ceil(calls/C) · (the latency of a full batch), what C requests in flight at all times would
give; also printed, the loop floor at that latency (see above) and the adaptive limit's
changes, and ``on / off``: the wall with the adaptive limit over the wall without it (what
the limit costs), then each stage's wall against its floor and the client's CPU per request.
``--serial`` adds, per server, the round scheduled as before issue #38 (a chunk's
conversations one after another, the Generator's windows one at a time), adaptive on.
Targets, adaptive on: ≤ 1.10 × the loop floor at L, ≤ 1.25 × when a full batch doubles it
(the verdict). The loop floor, not ceil(calls/C)·L: a round of 100 blueprints is bound by its
longest conversation's turn chain (26 turns, one after another) more than by C, and the
floor issue #38 measured its 291 s against (7.9×, so 37 s) was that one.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from llm_scripts import (
    MODELS,
    RoutedServer,
    ScriptedModel,
    account_for_blueprints,
    llm_config,
    realizable_pool,
    task_json,
)
from openai_server import Batching, Faults
from plain_flows import Span, plain_flows

from evosyn.agents import synthesis
from evosyn.agents.gateway import SHARED_LIMITER
from evosyn.agents.prompt_context import forget_grounding
from evosyn.config import CampaignConfig
from evosyn.records import Feedback, LLMCall, Rejection, SynthesisSpace
from evosyn.space import seed_space

FLOOR_TARGET = 1.15
FAULT_TARGET = 1.30
# Adaptive concurrency against a vLLM-like server (issue #38): the full batch's slowdown and
# the target ratio to its floor.
ADAPTIVE_TARGETS = {1.0: 1.10, 2.0: 1.25}
CID = "llm-e2e"  # the campaign id of ``llm_config``
STAGE_OF = {
    "designer": "design",
    "planner": "plan",
    "generator": "generate",
    "teacher": "rollout",
    "user_simulator": "rollout",
    "reflector": "reflect",
}
STAGES = ("design", "plan", "generate", "rollout", "reflect")
# The round's loop tasks (their spans) -> the stage of their calls.
SPANS = {
    "design": "design",
    "plan": "plan",
    "generate": "generate",
    "synthesize": "rollout",
    "reflect": "reflect",
}


@contextmanager
def plain_tasks(workers: int, spans: list[Span]) -> Iterator[Any]:
    """flows/round.py with its Prefect tasks swapped for timed plain functions on ``workers``."""
    from evosyn.flows import round as round_module

    with plain_flows(round_module, workers=workers, spans=spans):
        yield round_module


@dataclass
class Run:
    """What one round did: wall time, the server's requests and the lake's accounting."""

    wall: float
    cpu: float
    requests: Counter[str]  # stage -> requests received
    answered: Counter[str]  # stage -> requests answered after the latency (status 200)
    max_in_flight: int
    chunks: int
    verified: int
    rejected: int
    failed: int  # rejections that name an error class or a failed model call
    max_attempts_seen: int
    calls: int  # distinct gateway calls (call ids)
    stage_wall: dict[str, float] = field(default_factory=dict)
    faults: Counter[str] = field(default_factory=Counter)
    malformed: int = 0
    llm_rows: int = 0  # llm_calls rows in the lake
    llm_distinct: int = 0  # distinct (call id, attempt) among them
    limits: list[float] = field(default_factory=list)  # the adaptive limit after each change


@dataclass(frozen=True)
class _Endpoint:
    """Where the server process listens (all ``llm_config`` needs of a server)."""

    url: str


def _serve(spec: dict[str, Any], conn: Any) -> None:
    """The scripted server, in a process of its own; its accounting is sent back at the end."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pool = realizable_pool(seed_space("airline", "pool"), spec["pool"], task_json)
    roles = {name: role for role, name in MODELS.items()}
    model = ScriptedModel(roles, spec["n"], pool, p_malformed=spec["p_malformed"], seed=3)
    batching = spec.get("batching")
    server = RoutedServer(model, spec["faults"], latency_s=0.0 if batching else spec["latency"])
    if batching:
        max_batch, slowdown = batching
        server.batching = Batching(max_batch, spec["latency"], slowdown)
    with server:
        conn.send(server.url)
        conn.recv()  # the round is over
        requests: Counter[str] = Counter()
        answered: Counter[str] = Counter()
        for seen in server.requests:
            stage = STAGE_OF[roles[str(seen.body.get("model")).removeprefix("openai/")]]
            requests[stage] += 1
            answered[stage] += seen.status == 200
        conn.send(
            {
                "requests": requests,
                "answered": answered,
                "faults": Counter(
                    k for (_, k), n in server.faults_served.items() for _ in range(n)
                ),
                "max_in_flight": server.max_in_flight,
                "malformed": sum(
                    n for (_, k), n in model.served.items() if k.endswith("malformed")
                ),
            }
        )


@contextmanager
def served(spec: dict[str, Any]) -> Iterator[tuple[_Endpoint, dict[str, Any]]]:
    """The server in its own process (a model server runs apart from the client, and this
    keeps its CPU off the client's); the dict is filled with its accounting on exit."""
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(spec, theirs), daemon=True)
    proc.start()
    theirs.close()  # so that a server that dies is an EOFError here, not a hang
    stats: dict[str, Any] = {}
    try:
        yield _Endpoint(ours.recv()), stats
        ours.send("stop")
        stats.update(ours.recv())
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()


def run_round(
    pool_size: int,
    tmp: Path,
    args: argparse.Namespace,
    faults: Faults | None,
    p_malformed: float,
    batching: tuple[int, float] | None = None,
    adaptive: bool = True,
    serial: bool = False,
) -> Run:
    """One round (and the Reflector after it) against a fresh server and an empty lake.

    ``batching``: the server batches like vLLM, ``(max_batch, slowdown of a full batch)``.
    ``adaptive``: the gateways' adaptive concurrency, which starts afresh.
    ``serial``: the round scheduled as before issue #38 (:func:`one_after_another`).
    """
    from evosyn.flows.round import chunk_size, generate_tasks
    from evosyn.tasks.loop import lake_of

    n = args.blueprints
    spec = {
        "pool": pool_size,
        "n": n,
        "p_malformed": p_malformed,
        "faults": faults,
        "latency": args.latency,
        "batching": batching,
    }
    with served(spec) as (server, stats):
        cfg: CampaignConfig = llm_config(
            server,  # type: ignore[arg-type]
            tmp,
            budget=n,
            timeout=args.timeout,
            concurrency=args.concurrency,
            max_attempts=args.max_attempts,
            shared_model=True,
        )
        cfg.llm.default.adaptive_concurrency = adaptive
        SHARED_LIMITER.forget()
        # Each run starts as a worker's first round of the domain: no arm timed on the records
        # and groundings another arm's prompts left in the process's caches.
        forget_grounding()
        space: SynthesisSpace = seed_space("airline", CID)
        lake = lake_of(cfg)
        lake.write([space], batch=f"v{space.version}")
        chunks = math.ceil(n / chunk_size(cfg))
        spans: list[tuple[str, float, float]] = []
        cpu0, wall0 = time.process_time(), time.perf_counter()
        # Where the Generator's step reads its window.
        generation = sys.modules[generate_tasks.fn.__module__]
        window = generation_window(args, serial)
        with (
            plain_tasks(args.workers or chunks, spans) as round_module,
            one_after_another() if serial else nullcontext(),
            patch.object(generation, "generation_window", lambda _generator: window),
        ):
            space, feedback, _ = round_module.round_flow.fn(cfg, space, None, 1)
            feedback_: Feedback = feedback
            round_module.reflect(cfg, space, feedback_, 2)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    verified, rejected = account_for_blueprints(lake, CID, n)
    rejections = lake.read(Rejection, CID, 1)
    if any(not r.reason for r in rejections):
        raise SystemExit("a rejection without a reason")
    rows = lake.read(LLMCall, CID)
    distinct = {(r.call_id, r.attempt) for r in rows}
    attempts: dict[str, int] = defaultdict(int)
    for row in rows:
        attempts[row.call_id] = max(attempts[row.call_id], row.attempt + 1)
    by_task: dict[str, list[float]] = defaultdict(list)
    for name, start, end in spans:
        by_task[name] += [start, end]
    return Run(
        wall=wall,
        cpu=cpu,
        requests=stats["requests"],
        answered=stats["answered"],
        max_in_flight=stats["max_in_flight"],
        chunks=chunks,
        verified=verified,
        rejected=rejected,
        failed=sum(bool(r.error_class) or "model call failed" in r.reason for r in rejections),
        max_attempts_seen=max(attempts.values(), default=0),
        calls=len(attempts),
        stage_wall={k: max(v) - min(v) for k, v in by_task.items()},
        faults=stats["faults"],
        malformed=stats["malformed"],
        llm_rows=len(rows),
        llm_distinct=len(distinct),
        limits=[limit for _, limit in SHARED_LIMITER.history("openai/shared-model")],
    )


@contextmanager
def one_after_another() -> Iterator[None]:
    """The round's scheduling before issue #38: a chunk's conversations one after another, and
    the Generator's windows one at a time (no window's first calls out early)."""
    with (
        patch.object(synthesis, "conversation_slots", lambda _roles: None),
        patch.object(synthesis, "WINDOWS_AHEAD", 0),
    ):
        yield


def stage_floors(
    run: Run,
    latency: float,
    full: float,
    c: int,
    chain: int,
    blueprints: int,
    window: int,
    serial: bool = False,
) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per stage: its calls spread over C slots at ``full`` (a full batch's latency),
    the rollouts at least the longest turn chain at ``latency`` (a request alone); then the
    same where the round schedules as before issue #38 (``serial``: a chunk's conversations
    one after another, each Generator window at least a call)."""
    calls = run.answered
    stage = {s: math.ceil(calls[s] / c) * full for s in STAGES}
    stage["rollout"] = max(stage["rollout"], chain * latency)
    loop = dict(stage)
    if serial:
        loop["generate"] = max(stage["generate"], math.ceil(blueprints / window) * latency)
        per_chunk = math.ceil(calls["rollout"] / run.chunks)
        loop["rollout"] = max(stage["rollout"], per_chunk * latency)
    return stage, loop


def floors(
    run: Run,
    latency: float,
    full: float,
    c: int,
    chain: int,
    blueprints: int,
    window: int,
    serial: bool = False,
) -> dict[str, float]:
    """The three floors of a run, from the requests answered after the latency."""
    stage, loop = stage_floors(run, latency, full, c, chain, blueprints, window, serial)
    return {
        "ceil(calls/C)·L": math.ceil(sum(run.answered.values()) / c) * full,
        "stage floor": sum(stage.values()),
        "loop floor": sum(loop.values()),
    }


#: Blueprints a model-backed Generator worked on at once before issue #38, whatever its limit.
WINDOW_BEFORE = 8


def generation_window(args: argparse.Namespace, serial: bool = False) -> int:
    """Blueprints the Generator works on at once in the runs of ``args``: the round's own
    window (the Generator's concurrency, C here), or as before issue #38 (``serial``)."""
    return int(args.generation_window or (WINDOW_BEFORE if serial else args.concurrency))


def main() -> int:
    """Run the clean and the faulty round; print the table. Exit 0 (figures, not assertions)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blueprints", type=int, default=1500, help="round budget")
    parser.add_argument("--latency", type=float, default=1.0, help="server latency L (s)")
    parser.add_argument("--concurrency", type=int, default=32, help="C: requests in flight")
    parser.add_argument("--timeout", type=float, default=5.0, help="client timeout (s)")
    parser.add_argument("--retry-after", type=float, default=1.0, help="429 Retry-After (s)")
    parser.add_argument("--max-attempts", type=int, default=5, help="attempts per call")
    parser.add_argument("--workers", type=int, default=0, help="chunk threads (0: one each)")
    parser.add_argument("--pool", type=int, default=12, help="distinct scripted tasks")
    parser.add_argument("--clean-only", action="store_true", help="skip the faulty run")
    parser.add_argument(
        "--generation-window",
        type=int,
        default=0,
        help="blueprints the Generator works on at once (0: the round's own)",
    )
    parser.add_argument(
        "--serial",
        action="store_true",
        help="with --adaptive: also each server with the round scheduled as before issue #38 "
        "(a chunk's conversations one after another, Generator windows one at a time), "
        "adaptive on",
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="instead: adaptive concurrency on and off against vLLM-like servers (issue #38)",
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    pool = realizable_pool(seed_space("airline", "pool"), args.pool, task_json)
    # The longest conversation: the first rollout's turns (a repair would start again).
    chain = max(len(p.turns) for p in pool)
    base = Path(tempfile.mkdtemp(prefix="evosyn-round-"))
    # Warm-up (imports, prompt templates, litellm's first call), not timed.
    warm = argparse.Namespace(**{**vars(args), "blueprints": 4, "latency": 0.01})
    run_round(args.pool, base / "warm", warm, None, 0.0)
    if args.adaptive:
        arms = [(True, False), (False, False), *([(True, True)] if args.serial else [])]
        runs = {
            (slowdown, adaptive, serial): run_round(
                args.pool,
                base / f"x{slowdown:g}-{adaptive}-{serial}",
                args,
                None,
                0.0,
                batching=(args.concurrency, slowdown),
                adaptive=adaptive,
                serial=serial,
            )
            for slowdown in ADAPTIVE_TARGETS
            for adaptive, serial in arms
        }
        report_adaptive(args, chain, runs)
        return 0
    clean = run_round(args.pool, base / "clean", args, None, 0.0)
    faulty = None
    if not args.clean_only:
        faults = Faults(
            p_rate_limit=0.20,
            p_server_error=0.05,
            p_slow=0.02,
            retry_after=args.retry_after,
            slow_s=2 * args.timeout,
            seed=7,
        )
        faulty = run_round(args.pool, base / "faulty", args, faults, 0.05)
    report(args, chain, clean, faulty)
    return 0


def report_adaptive(
    args: argparse.Namespace, chain: int, runs: dict[tuple[float, bool, bool], Run]
) -> None:
    """Print adaptive concurrency on and off, side by side, per server."""
    from rich.console import Console
    from rich.table import Table

    c = args.concurrency
    table = Table(
        title=f"Adaptive concurrency vs a vLLM-like server: {args.blueprints} blueprints, "
        f"every role on llm, L={args.latency:g}s alone, batch of C={c} "
        f"(cores: {os.cpu_count()})"
    )
    for col in (
        "full batch",
        "adaptive",
        "rollouts",
        "wall s",
        "requests",
        "floor s",
        "wall / floor",
        "loop floor s",
        "wall / loop floor",
        "target",
        "verdict",
        "on / off",
        "limit changes",
        "lowest limit",
    ):
        table.add_column(col, justify="right")
    for (slowdown, adaptive, serial), run in runs.items():
        full = args.latency * slowdown
        floor = floors(
            run,
            args.latency,
            full,
            c,
            chain,
            args.blueprints,
            generation_window(args, serial),
            serial,
        )
        ratio = run.wall / floor["loop floor"]
        target = ADAPTIVE_TARGETS[slowdown]
        table.add_row(
            f"{slowdown:g}× L",
            "on" if adaptive else "off",
            "in turn" if serial else "at once",
            f"{run.wall:.1f}",
            str(sum(run.requests.values())),
            f"{floor['ceil(calls/C)·L']:.1f}",
            f"{run.wall / floor['ceil(calls/C)·L']:.2f}",
            f"{floor['loop floor']:.1f}",
            f"{ratio:.2f}",
            f"≤ {target:.2f}" if adaptive else "",
            ("PASS" if ratio <= target else "MISS") if adaptive else "",
            f"{run.wall / runs[(slowdown, False, False)].wall:.2f}" if adaptive else "",
            str(len(run.limits)),
            f"{min([float(c), *run.limits]):g}",
        )
    console = Console(width=160)
    console.print(table)
    stages = Table(
        title="Per stage: wall s / floor s (ceil(calls/C) · full batch; the rollouts at least "
        "the longest conversation's turns · L)"
    )
    for col in (
        "full batch",
        "adaptive",
        "rollouts",
        *SPANS.values(),
        "rest",
        "CPU ms / request",
    ):
        stages.add_column(col, justify="right")
    window = generation_window(args)
    for (slowdown, adaptive, serial), run in runs.items():
        full = args.latency * slowdown
        floor, _ = stage_floors(run, args.latency, full, c, chain, args.blueprints, window)
        cells = [
            f"{run.stage_wall.get(span, 0.0):.1f} / {floor[stage]:.1f}"
            for span, stage in SPANS.items()
        ]
        rest = run.wall - sum(run.stage_wall.get(span, 0.0) for span in SPANS)
        requests = max(sum(run.requests.values()), 1)
        cpu = f"{1000 * run.cpu / requests:.1f}"
        on = "on" if adaptive else "off"
        mode = "in turn" if serial else "at once"
        stages.add_row(f"{slowdown:g}× L", on, mode, *cells, f"{rest:.1f}", cpu)
    console.print(stages)


def report(args: argparse.Namespace, chain: int, clean: Run, faulty: Run | None) -> None:
    """Print the figures of both runs."""
    from rich.console import Console
    from rich.table import Table

    c, latency = args.concurrency, args.latency
    console = Console(width=150)
    head = Table(
        title=f"Round overhead: {args.blueprints} blueprints, every role on llm, L={latency:g}s, "
        f"C={c} per model, {clean.chunks} chunks on {args.workers or clean.chunks} threads "
        f"(cores: {os.cpu_count()})"
    )
    for col in ("run", "wall s", "CPU s", "requests", *STAGES, "max in flight"):
        head.add_column(col, justify="right")
    for name, run in (("clean", clean), ("faulty", faulty)):
        if run is None:
            continue
        head.add_row(
            name,
            f"{run.wall:.1f}",
            f"{run.cpu:.1f}",
            str(sum(run.requests.values())),
            *(str(run.requests[s]) for s in STAGES),
            str(run.max_in_flight),
        )
    console.print(head)

    table = Table(title="Clean round vs the LLM-latency floors")
    for col in ("floor", "seconds", "wall / floor", f"target ≤ {FLOOR_TARGET}"):
        table.add_column(col, justify="right")
    window = generation_window(args)
    for name, seconds in floors(clean, latency, latency, c, chain, args.blueprints, window).items():
        ratio = clean.wall / seconds
        table.add_row(
            name, f"{seconds:.1f}", f"{ratio:.2f}", "PASS" if ratio <= FLOOR_TARGET else "MISS"
        )
    console.print(table)

    stages = Table(title="Clean round: wall per loop task vs its calls·L (serial) ")
    for col in ("task", "wall s", "requests", "calls·L s", "ms per call beyond L"):
        stages.add_column(col, justify="right")
    serial = {"design": "design", "plan": "plan", "reflect": "reflect"}
    for task, seconds in clean.stage_wall.items():
        stage = serial.get(task)
        n = clean.answered[stage] if stage else 0
        extra = f"{1000 * (seconds - n * latency) / n:.1f}" if n else ""
        stages.add_row(
            task, f"{seconds:.2f}", str(n or ""), f"{n * latency:.2f}" if n else "", extra
        )
    console.print(stages)

    if faulty is not None:
        ratio = faulty.wall / clean.wall
        faults = ", ".join(f"{k} {v}" for k, v in sorted(faulty.faults.items()))
        console.print(
            f"Faulty round: {faults}, malformed {faulty.malformed} of "
            f"{sum(faulty.requests.values())} requests; blueprints {args.blueprints} = "
            f"verified {faulty.verified} + rejected {faulty.rejected} "
            f"(of which failed calls {faulty.failed}); calls {faulty.calls}, most attempts on "
            f"one call {faulty.max_attempts_seen} (max {args.max_attempts}); wall "
            f"{faulty.wall:.1f}s = {ratio:.2f} × clean (target ≤ {FAULT_TARGET}: "
            f"{'PASS' if ratio <= FAULT_TARGET else 'MISS'})"
        )
    for name, run in (("clean", clean), ("faulty", faulty)):
        if run is None:
            continue
        requests = sum(run.requests.values())
        console.print(
            f"{name}: llm_calls rows {run.llm_rows}, distinct attempts {run.llm_distinct}, "
            f"requests {requests}: "
            + (
                "one row per request"
                if run.llm_rows == run.llm_distinct == requests
                else f"{run.llm_rows - run.llm_distinct} duplicated, "
                f"{requests - run.llm_distinct} missing (Gateway.flush from parallel chunks)"
            )
        )
    console.print(
        f"clean: verified {clean.verified}, rejected {clean.rejected}; client CPU "
        f"{1000 * clean.cpu / max(sum(clean.requests.values()), 1):.1f} ms per request"
    )


if __name__ == "__main__":
    raise SystemExit(main())
