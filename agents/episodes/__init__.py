"""Episodes and rewards for reinforcement learning on verified tasks.

An episode API over any verified task set (:class:`EpisodeEnv`: ``reset`` then ``step``, ended
and scored as τ²-bench's orchestrator and evaluators would) and a reward server (a
trajectory in, the replay verifier's reward and reasons out; :mod:`.server`).
"""

from evosyn.agents.episodes.episode import (
    Episode,
    EpisodeEnv,
    EpisodeError,
    EpisodeOutcome,
    EpisodeSettings,
    Opening,
    Policy,
    ReplayPolicy,
    Turn,
    assistant_turn,
    play,
    run_episodes,
)
from evosyn.agents.episodes.reward import RewardScorer, RewardVerdict
from evosyn.agents.episodes.tasks import EpisodeTask, TaskSet, TaskSetError
from evosyn.agents.episodes.users import FILLER, ScriptedUser, UserTurn

__all__ = [
    "FILLER",
    "Episode",
    "EpisodeEnv",
    "EpisodeError",
    "EpisodeOutcome",
    "EpisodeSettings",
    "EpisodeTask",
    "Opening",
    "Policy",
    "ReplayPolicy",
    "RewardScorer",
    "RewardVerdict",
    "ScriptedUser",
    "TaskSet",
    "TaskSetError",
    "Turn",
    "UserTurn",
    "assistant_turn",
    "play",
    "run_episodes",
]
