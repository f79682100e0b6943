"""EvoSyn: closed-loop agentic data synthesis on τ²-bench domains.

The core package holds the records (:mod:`evosyn.records`), synthesis-space maths
(:mod:`evosyn.space`), campaign config (:mod:`evosyn.config`) and the CLI (:mod:`evosyn.cli`).
The design card's folders are installed beside it as ``evosyn.agents``, ``evosyn.environments``,
``evosyn.storage``, ``evosyn.tasks`` and ``evosyn.flows``.
"""

import os

from loguru import logger

# litellm (imported by τ²-bench) fetches its price map from the internet at import time and
# retries for seconds when offline; its bundled copy is the same data.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# τ²-bench logs every tool response through loguru; quiet unless EVOSYN_TAU2_LOG asks.
if not os.environ.get("EVOSYN_TAU2_LOG"):
    logger.disable("tau2")

__version__ = "0.1.0"
