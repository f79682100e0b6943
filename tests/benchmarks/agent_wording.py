"""How templated the programmatic teacher's turns read: masked turns shared across dialogues.

A plain script (not a pytest test):

    python tests/benchmarks/agent_wording.py [--n 100] [--seed 7] [--top 10] [--top-user 10]
        [--domain airline --domain retail ...] [--lake DIR]

For each domain (default: airline, retail and mock) it runs ``evosyn synth --domain D --n N
--seed S`` into a fresh lake, takes the trajectories that passed verification, masks every
agent text turn with :func:`evosyn.environments.quality.mask` (ids, numbers, dates, codes) and
prints the share of agent turns whose masked text also occurs in another dialogue. τ²-bench's
fixed greeting ("Hi! How can I help you today?") is the orchestrator's, not the agent's
wording, and is left out. The same share is printed for the user's turns; ``--top`` and
``--top-user`` list the most repeated masked turns, the ones to vary next. Issue 30 asks for
at most 0.35 on agent turns (the audit's ``shared_agent_turns`` row counts the same way).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tau2.data_model.message import AssistantMessage, Message, UserMessage

from evosyn.environments import quality
from evosyn.records import Trajectory, Verification
from evosyn.storage import Lake

DOMAINS = ("airline", "retail", "telecom", "mock")


def shared_share(turns: Sequence[tuple[str, int]]) -> float:
    """Share of ``turns`` (masked text, dialogue index) whose text another dialogue also has."""
    owners: dict[str, set[int]] = collections.defaultdict(set)
    for key, index in turns:
        owners[key].add(index)
    shared = sum(1 for key, index in turns if owners[key] - {index})
    return shared / max(1, len(turns))


def turns(dialogues: Sequence[Sequence[Message]], role: type[Message]) -> list[tuple[str, int]]:
    """(masked text, dialogue index) of every text turn of ``role`` but the fixed greeting."""
    out: list[tuple[str, int]] = []
    for index, messages in enumerate(dialogues):
        for m in messages:
            if isinstance(m, role) and m.content and m.content != quality.AGENT_GREETING:
                out.append((quality.mask(m.content), index))
    return out


def synth(domain: str, n: int, seed: int, lake: Path) -> list[list[Message]]:
    """The verified dialogues of ``evosyn synth`` for ``domain`` at ``seed``."""
    cid = f"wording-{domain}-{seed}"
    evosyn = Path(sys.executable).with_name("evosyn")
    subprocess.run(
        [
            *(str(evosyn), "synth", "--domain", domain, "--n", str(n), "--seed", str(seed)),
            *("--lake", str(lake), "--campaign-id", cid),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    store = Lake(lake, create=False)
    passed = {v.trajectory_id for v in store.read(Verification, cid) if v.passed}
    return [t.messages for t in store.read(Trajectory, cid) if t.trajectory_id in passed]


def main() -> None:
    """Synthesize per domain and print the shares of masked turns shared across dialogues."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--domain", action="append", choices=DOMAINS)
    parser.add_argument("--top", type=int, default=0, help="most repeated agent turns to list")
    parser.add_argument("--top-user", type=int, default=0, help="most repeated user turns")
    parser.add_argument("--lake", type=Path, help="lake folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lake = args.lake or Path(tmp) / "lake"
        print(
            f"{'domain':8} {'seed':>5} {'dialogues':>9} {'agent turns':>11} "
            f"{'agent shared':>12} {'user shared':>11}"
        )
        for domain in args.domain or DOMAINS:
            dialogues = synth(domain, args.n, args.seed, lake)
            agent = turns(dialogues, AssistantMessage)
            user = turns(dialogues, UserMessage)
            print(
                f"{domain:8} {args.seed:>5} {len(dialogues):>9} {len(agent):>11} "
                f"{shared_share(agent):>12.2f} {shared_share(user):>11.2f}",
                flush=True,
            )
            for top, said in ((args.top, agent), (args.top_user, user)):
                counts = collections.Counter(key for key, _ in said)
                for key, k in counts.most_common(top):
                    print(f"    {k:4d}  {key[:150]}")


if __name__ == "__main__":
    main()
