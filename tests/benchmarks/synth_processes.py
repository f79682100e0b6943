"""Programmatic rounds on one core and on N synthesis worker processes, side by side (#38).

A plain script (not a pytest test):

    python tests/benchmarks/synth_processes.py [--blueprints 960] [--rounds 2] [--workers 2]
        [--domain airline] [--repeat 1] [--all-cores] [--profile]

Each run is a campaign of the domain's offline config (``deployments/campaigns/
<domain>-offline.yaml``, ``--rounds`` rounds of ``--blueprints``) in a fresh interpreter, as
``evosyn campaign run`` starts one: ``campaign_flow``'s own body with its Prefect tasks run as
plain functions (``plain_flows``), so Prefect's server is left out; imports and start-up are
not. The first run of a pair has ``EVOSYN_SYNTH_WORKERS=1`` (synthesis in the round's process,
today's default) and is held to one core (``--all-cores``: not held); the second has
``--workers`` processes and as many cores. Both use the same config and seed, so the same
blueprints. Round 1 starts the workers (and every cache) cold; round 2 is a round of a
campaign under way. Printed per run:

- ``process``: the interpreter's wall time, start-up and imports included; ``cpu``: CPU
  seconds of the round's process plus every process it started (fork server, workers);
- ``free``: the cores this machine gave to ``--workers`` busy loops just before the pair (a
  shared machine gives fewer than it has: read the times with it), and ``load``, the load
  average after the run;
- per round: its wall time (its ``rounds`` row), and that of its Generator step and of its
  rollout chunks.

Then the speed-ups (one-core time over N-process time) and whether every table's rows are
identical once clocks and durations are set aside. The issue's target: ≥ 1.6x for a
960-blueprint round on a 2-core machine, rows identical.

``--profile`` then runs each once more under ``py-spy record --gil --subprocesses`` (py-spy on
PATH or beside this Python) and prints the share of sampled CPU in module imports (stacks under
``importlib._bootstrap._find_and_load``), per process and overall; target (issue #38): ≤ 10% of
a 960-blueprint round's CPU. Profiled runs are slower; their times are not compared.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest.mock import patch

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
# Columns that legitimately differ between two runs: clocks and durations.
CLOCKS = {"created_at", "started_at", "finished_at", "seconds", "latency_s"}
CAMPAIGN = "bench-processes"


def _child(root: Path, domain: str, blueprints: int, rounds: int, out: Path) -> None:
    """The campaign's rounds in this interpreter; what they measured written to ``out``."""
    sys.path[:0] = [str(TESTS)]
    from plain_flows import Span, plain_flows

    from evosyn.config import load_config
    from evosyn.flows import campaign as campaign_module
    from evosyn.flows import round as round_module
    from evosyn.records import RoundSummary
    from evosyn.storage import Lake

    config = REPO / "deployments" / "campaigns" / f"{domain}-offline.yaml"
    overrides = [
        f"campaign.rounds={rounds}",
        "campaign.patience=null",
        f"campaign.budget_per_round={blueprints}",
        f"campaign.id={CAMPAIGN}",
        f"lake.root={root}",
    ]
    cfg = load_config(config, overrides, environ={})
    spans: list[Span] = []
    # Clocks of both kinds at one moment: spans are perf_counter seconds, rounds datetimes.
    now, counter = datetime.now(UTC), time.perf_counter()
    # Artifacts are Prefect's: publishing one would start its server in this process.
    with (
        plain_flows(round_module, campaign_module, spans=spans),
        patch.object(campaign_module, "publish_campaign_artifact", lambda *_a, **_k: None),
    ):
        campaign_module.campaign_flow.fn(cfg, CAMPAIGN)
    summaries = sorted(Lake(root).read(RoundSummary, CAMPAIGN), key=lambda r: r.round)

    def stage(name: str, summary: RoundSummary) -> float:
        start = (summary.started_at - now).total_seconds() + counter
        end = (summary.finished_at - now).total_seconds() + counter
        mine = [(a, b) for task, a, b in spans if task == name and start <= a <= end]
        return max(b for _, b in mine) - min(a for a, _ in mine) if mine else 0.0

    result = {
        "rounds": [
            {
                "round_s": (r.finished_at - r.started_at).total_seconds(),
                "generate_s": stage("generate", r),
                "roll_out_s": stage("synthesize", r),
                "verified": r.n_verified,
            }
            for r in summaries
        ],
        "cpu_s": time.process_time() + sum(_descendants_cpu(os.getpid()).values()),
    }
    out.write_text(json.dumps(result))


def _descendants_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of every live descendant of ``pid``, by pid (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces.
        fields = text[text.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    found: dict[int, float] = {}
    for child in cpu:
        ancestor = parents.get(child)
        while ancestor is not None and ancestor not in (pid, 0, 1):
            ancestor = parents.get(ancestor)
        if ancestor == pid:
            found[child] = cpu[child]
    return found


def _spin(seconds: float) -> float:
    """Busy for ``seconds`` of CPU; the CPU seconds spent."""
    start = time.process_time()
    while time.process_time() - start < seconds:
        sum(range(1000))
    return time.process_time() - start


def free_cores(n: int, seconds: float = 0.5) -> float:
    """Cores ``n`` busy processes got at once just now: their CPU time over the wall time."""
    with multiprocessing.get_context("spawn").Pool(n) as pool:
        pool.map(_spin, [0.01] * n)  # started
        start = time.perf_counter()
        spent = sum(pool.map(_spin, [seconds] * n))
        return spent / (time.perf_counter() - start)


def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def run(
    workers: int,
    domain: str,
    blueprints: int,
    rounds: int,
    root: Path,
    cores: int | None,
    profile: Path | None = None,
) -> dict[str, Any]:
    """A campaign in a fresh interpreter with ``workers`` synthesis processes on ``cores``."""
    out = root.with_suffix(".json")
    command = [sys.executable, __file__, "--child", str(root), "--domain", domain]
    command += ["--blueprints", str(blueprints), "--rounds", str(rounds), "--out", str(out)]
    if cores is not None and hasattr(os, "sched_getaffinity"):
        cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:cores])
        command = ["taskset", "-c", cpus, *command]
    if profile is not None:
        spy = _py_spy()
        if spy is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy)")
        record = [spy, "record", "--gil", "--subprocesses", "-r", "100", "--format", "raw"]
        command = [*record, "-o", str(profile), "--", *command]
    env = os.environ | {"EVOSYN_SYNTH_WORKERS": str(workers)}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    result: dict[str, Any] = json.loads(out.read_text())
    return result | {"process_s": wall, "load": os.getloadavg()[0], "workers": workers}


def tables(root: Path) -> dict[str, list[str]]:
    """Every table's rows of the campaign, clocks left out, as JSON in stored order."""
    from evosyn.records import TABLES
    from evosyn.storage import Lake

    lake = Lake(root)
    return {
        table: [
            # The stored config names the run's own lake folder.
            json.dumps(r.model_dump(mode="json", exclude=CLOCKS), sort_keys=True).replace(
                str(root), "<lake>"
            )
            for r in lake.read(cls, CAMPAIGN)
        ]
        for table, cls in TABLES.items()
    }


def import_share(raw: Path) -> tuple[float, list[tuple[str, int, int]]]:
    """Share of py-spy samples in module imports; per process: (process, samples, imports)."""
    total = imports = 0
    by_process: Counter[str] = Counter()
    importing: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        n = int(count)
        # With --subprocesses every stack starts with its process chain; the last is its own.
        process = [f for f in frames if f.startswith("process ")][-1][:90]
        total += n
        by_process[process] += n
        if any(f.startswith("_find_and_load ") for f in frames):
            imports += n
            importing[process] += n
    rows = [(p, n, importing[p]) for p, n in by_process.most_common()]
    return (imports / total if total else 0.0), rows


def main() -> None:
    """Run the benchmark and print the runs side by side."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blueprints", type=int, default=960, help="per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per campaign")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs, alternating")
    parser.add_argument("--all-cores", action="store_true", help="do not hold run 1 to a core")
    parser.add_argument("--profile", action="store_true", help="then profile one pair")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.domain, args.blueprints, args.rounds, args.out)
        return

    baseline = "1 process" + ("" if args.all_cores else " on 1 core")
    print(
        f"{args.rounds} round(s) of {args.blueprints} blueprints, {args.domain}; {baseline} vs "
        f"{args.workers} worker processes on {args.workers} cores; {os.cpu_count()} cores here"
    )
    print(
        f"{'pair':<5}{'workers':>8}{'process s':>10}{'cpu s':>7}{'free':>6}{'load':>6}"
        f"{'round':>6}{'round s':>9}{'generate s':>11}{'roll out s':>11}{'verified':>9}"
    )
    one_core = None if args.all_cores else 1
    args_run = (args.domain, args.blueprints, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for i in range(args.repeat):
            free = free_cores(args.workers)
            pair = []
            for workers, cores in ((1, one_core), (args.workers, args.workers)):
                root = Path(tmp) / f"lake-{i}-{workers}"
                r = run(workers, *args_run, root, cores)
                pair.append(r)
                for number, one in enumerate(r["rounds"], start=1):
                    head = (
                        f"{i:<5}{workers:>8}{r['process_s']:>10.1f}{r['cpu_s']:>7.1f}"
                        f"{free:>6.2f}{r['load']:>6.1f}"
                        if number == 1
                        else " " * 42
                    )
                    print(
                        f"{head}{number:>6}{one['round_s']:>9.1f}{one['generate_s']:>11.1f}"
                        f"{one['roll_out_s']:>11.1f}{one['verified']:>9}"
                    )
            pairs.append((pair[0], pair[1]))
        print(
            "speed-up, process: "
            + ", ".join(f"{a['process_s'] / b['process_s']:.2f}x" for a, b in pairs)
        )
        for key, label in (
            ("round_s", "round"),
            ("generate_s", "generate"),
            ("roll_out_s", "roll out"),
        ):
            for number in range(len(pairs[0][0]["rounds"])):
                ratios = ", ".join(
                    f"{a['rounds'][number][key] / b['rounds'][number][key]:.2f}x" for a, b in pairs
                )
                print(f"speed-up, {label}, round {number + 1}: {ratios}")
        same = tables(Path(tmp) / "lake-0-1") == tables(Path(tmp) / f"lake-0-{args.workers}")
        print(f"rows identical (every table, clocks aside): {'yes' if same else 'NO'}")
        if args.profile:
            for workers, cores in ((1, one_core), (args.workers, args.workers)):
                raw = Path(tmp) / f"profile-{workers}.txt"
                root = Path(tmp) / f"lake-profile-{workers}"
                run(workers, *args_run, root, cores, profile=raw)
                share, rows = import_share(raw)
                print(f"imports, {workers} worker(s): {share:.1%} of sampled CPU (py-spy --gil)")
                for process, n, imported in rows:
                    print(f"  {n:>7} samples, {imported / n:>6.1%} imports: {process}")


if __name__ == "__main__":
    main()
