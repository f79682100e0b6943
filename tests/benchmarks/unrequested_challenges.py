"""Unrequested interaction challenges in synthesized dialogues (issue 30 item 5; a plain script).

    python tests/benchmarks/unrequested_challenges.py [--n 100] [--seed 90210]
        [--domain airline ...] [--lake-root /tmp] [--show 3]

Per domain, runs ``evosyn synth --domain D --n N --seed S --campaign-id u --lake ROOT/hc-D``
(a fresh lake each time), then reads the lake: for each verified dialogue, the challenges its
verification realized (``realized['interaction_challenges']``, labelled by
:func:`~evosyn.environments.dialogue_acts.realized_challenges`) less those its task requested
are unrequested realizations. Prints, per domain, the verified count and the unrequested
realizations by challenge; ``--show`` prints that many user turns of each such dialogue.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb

_EVOSYN = Path(sys.executable).with_name("evosyn")

_QUERY = """
select t.task_id, t.requested['interaction_challenge'] as wanted,
       v.realized['interaction_challenges'] as acted, j.messages
from verifications v
join tasks t using (task_id)
join trajectories j using (trajectory_id)
where v.passed
"""


def synth(domain: str, n: int, seed: int, lake: Path) -> None:
    """Synthesize ``n`` blueprints of ``domain`` into a fresh lake at ``lake``."""
    shutil.rmtree(lake, ignore_errors=True)
    command = ["synth", "--domain", domain, "--n", str(n), "--seed", str(seed)]
    subprocess.run(
        [str(_EVOSYN), *command, "--campaign-id", "u", "--lake", str(lake)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def unrequested(lake: Path, show: int) -> tuple[int, Counter[str]]:
    """The verified dialogues in ``lake`` and their unrequested realizations by challenge."""
    here = Path.cwd()
    os.chdir(lake)  # the catalog's views name their parquet files relative to the lake
    try:
        with duckdb.connect("catalog.duckdb", read_only=True) as db:
            rows = db.sql(_QUERY).fetchall()
    finally:
        os.chdir(here)
    counts: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    for task_id, wanted, acted, messages in rows:
        extra = {c for c in (acted or "").split(";") if c and c != "none"} - set(wanted or [])
        counts.update(extra)
        for challenge in sorted(extra):
            if shown[challenge] < show:
                shown[challenge] += 1
                print(f"--- {challenge} in {task_id} (requested: {', '.join(wanted or [])})")
                for message in json.loads(messages):
                    if message.get("role") == "user" and message.get("content"):
                        print("  user:", message["content"][:300])
    return len(rows), counts


def main() -> None:
    """Print, per domain, verified dialogues and unrequested realizations by challenge."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=90210)
    parser.add_argument("--domain", action="append", default=None)
    parser.add_argument("--lake-root", type=Path, default=Path("/tmp"))
    parser.add_argument("--show", type=int, default=0)
    args = parser.parse_args()
    for domain in args.domain or ["airline", "retail", "telecom"]:
        lake = args.lake_root / f"hc-{domain}"
        synth(domain, args.n, args.seed, lake)
        verified, counts = unrequested(lake, args.show)
        detail = ", ".join(f"{c} {k}" for c, k in counts.most_common()) or "-"
        print(
            f"{domain}: verified {verified}/{args.n}, unrequested {sum(counts.values())} ({detail})"
        )


if __name__ == "__main__":
    main()
