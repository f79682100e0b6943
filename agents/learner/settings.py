"""The settings the ICL, SFT and RL learners read, declared with their kinds in the core.

Each is written flat under ``agents.learner`` beside the keys every learner shares, and read
with ``cfg.agents.learner.kind_settings(SFTSettings)``. They are declared in
:mod:`evosyn.kinds`, where a config is validated without importing the learners (they pull in
litellm and τ²-bench).
"""

from evosyn.kinds import ICLSettings, RLSettings, ServingSettings, SFTSettings

__all__ = ["ICLSettings", "RLSettings", "SFTSettings", "ServingSettings"]
