"""Verified share of the single-agent arm against the modular arm, on one scripted model.

A plain script (not a pytest test):

    python tests/benchmarks/single_agent_grounding.py [--n 24] [--seed 0]

Both arms ask the same local OpenAI-compatible server, whose model (``GroundedModel`` in
``tests/llm_scripts.py``) writes each task from the records its prompt shows and nothing else.
The modular arm is the LLM Generator and LLM teacher; the single-agent arm is printed as built
(shown the Generator's records) and shown no records (how it was before it was grounded).
Issue #20 asks the grounded single-agent share to be within 10 points of the modular one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm_scripts import grounded_shares


def main() -> None:
    """Print both arms' verified shares, with and without the single agent's records."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24, help="blueprints per arm")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # the local server ignores it
    with tempfile.TemporaryDirectory() as tmp:
        grounded = grounded_shares(args.n, Path(tmp) / "grounded", args.seed)
        bare = grounded_shares(args.n, Path(tmp) / "bare", args.seed, entities=0)
    print(f"{args.n} planned airline blueprints, verified share")
    print(f"  modular (LLM Generator + teacher):  {grounded['modular']:.3f}")
    print(f"  single agent, grounded:             {grounded['single_agent']:.3f}")
    print(f"  single agent, shown no records:     {bare['single_agent']:.3f}")
    gap = abs(grounded["single_agent"] - grounded["modular"])
    print(f"  gap {gap:.3f} ({'within' if gap <= 0.10 else 'beyond'} the 0.10 target)")


if __name__ == "__main__":
    main()
