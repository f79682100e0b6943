"""What a flow-run process imports before it runs anything.

Every Prefect flow run (a campaign, its rounds on a worker, a training, an evaluation) starts a
fresh interpreter that imports the flows; tests/benchmarks/cli_startup.py times it.
"""

from __future__ import annotations

import subprocess
import sys

#: Imported only by the steps that use them: scipy (with datasketch's LSH, which pulls it in)
#: adds a second to every start otherwise.
LAZY = ("scipy", "datasketch", "matplotlib")
FLOWS = ("evosyn.flows.campaign", "evosyn.flows.train", "evosyn.flows.evaluate")


def test_importing_the_flows_loads_no_statistics_or_plotting() -> None:
    code = f"import sys, {', '.join(FLOWS)}\nprint(*(m for m in {LAZY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == []
