"""The in-context learner: an LLM agent whose prompt carries similar verified trajectories.

Training indexes D_<=r (the passed, not held-out verifications of rounds <= r); evaluating a
task retrieves the ``demonstrations`` indexed trajectories whose tasks read most like it (cosine
similarity of word counts over the user's scenario) and shows them in the system prompt. The
episodes run through the same τ²-bench path as the SFT learner, with the model of role
``learner`` behind the gateway. This closes the loop for real without a GPU.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Literal

import jinja2
from tau2.data_model.message import AssistantMessage, ToolMessage
from tau2.data_model.tasks import Task

from evosyn.agents.learner.base import (
    DiagnosticItem,
    EvalInputs,
    Evaluation,
    LakeInput,
    Trained,
    TrainingData,
    Weakness,
    succeeded_by,
)
from evosyn.agents.learner.episodes import EpisodeRunner, learner_gateways
from evosyn.agents.learner.export import training_examples
from evosyn.agents.learner.settings import ICLSettings
from evosyn.agents.learner.sft import episode_settings
from evosyn.config import CampaignConfig
from evosyn.environments import get_domain
from evosyn.records import Training, Trajectory

_WORD = re.compile(r"[a-z0-9]+")
_OBSERVATION_CHARS = 400


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("icl.j2")


def task_text(task: Task) -> str:
    """What retrieval compares: the user's scenario of the task."""
    return str(task.user_scenario)


def word_bag(text: str) -> Counter[str]:
    """Lower-cased word counts of ``text``."""
    return Counter(_WORD.findall(text.lower()))


def similarity(a: Counter[str], b: Counter[str]) -> float:
    """Cosine similarity of two word-count bags."""
    dot = sum(n * b[w] for w, n in a.items())
    norm = math.sqrt(sum(n * n for n in a.values())) * math.sqrt(sum(n * n for n in b.values()))
    return dot / norm if norm else 0.0


def demonstration(trajectory: Trajectory) -> list[str]:
    """The agent's view of a trajectory as prompt lines (long observations shortened)."""
    lines: list[str] = []
    for m in trajectory.messages:
        if m.role == "system" or (isinstance(m, ToolMessage) and m.requestor == "user"):
            continue
        if isinstance(m, AssistantMessage) and m.tool_calls:
            for call in m.tool_calls:
                lines.append(f"assistant calls {call.name}({json.dumps(call.arguments)})")
        elif isinstance(m, ToolMessage):
            text = m.content or ""
            cut = text[:_OBSERVATION_CHARS] + ("..." if len(text) > _OBSERVATION_CHARS else "")
            lines.append(f"tool: {cut}")
        elif (m.content or "").strip() and m.role in ("user", "assistant"):
            lines.append(f"{m.role}: {m.content}")
    return lines


class ICLLearner:
    """An LLM task agent with retrieved verified demonstrations in its prompt.

    Args:
        cfg: The campaign config (``agents.learner``, ``llm``, the domain, and ``lake.root``,
            which scopes the spend caps its gateways count against).
    """

    name = "icl"
    reads: frozenset[LakeInput] = frozenset({"examples", "tasks"})

    def __init__(self, cfg: CampaignConfig) -> None:
        self.cfg = cfg
        self.settings = cfg.agents.learner.kind_settings(ICLSettings)
        self.domain = get_domain(cfg.campaign.domain)
        self._index: list[tuple[Counter[str], Trajectory]] = []
        self.planted: tuple[Weakness, ...] = ()

    def preflight(self, stage: Literal["train", "evaluate"]) -> None:
        """Nothing to check: its model is behind the gateway."""

    def answers(self, training: Training) -> bool:
        """Any succeeded ICL training: its recipe names the demonstrations it indexed."""
        return succeeded_by(training, self.name)

    def train(self, data: TrainingData, round: int, training_id: str) -> Trained:
        """Index D_<=round: the record names every indexed trajectory."""
        ids = [trajectory.trajectory_id for _, trajectory, _ in training_examples(data)]
        digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
        training = Training(
            campaign_id=data.campaign_id,
            round=round,
            training_id=training_id,
            learner=self.name,
            recipe={
                "demonstrations": self.settings.demonstrations,
                "retrieval": "cosine of word counts over the user scenario",
                "index": ids,
                "held_out": data.held_out,
            },
            dataset_snapshot=f"sha256:{digest}",
            n_samples=len(ids),
            status="succeeded",
        )
        return Trained(training=training)

    def load_index(self, training: Training, data: TrainingData) -> None:
        """The indexed trajectories of ``training`` in ``data``, with their tasks' word bags."""
        wanted = set(training.recipe.get("index", []))
        self._index = [
            (word_bag(task_text(task.task)), trajectory)
            for _, trajectory, task in training_examples(data)
            if trajectory.trajectory_id in wanted
        ]

    def retrieve(self, task: Task) -> list[Trajectory]:
        """The indexed trajectories most similar to ``task`` (its own trajectory excluded)."""
        query = word_bag(task_text(task))
        ranked = sorted(
            (
                (similarity(query, bag), t.trajectory_id, t)
                for bag, t in self._index
                if t.task_id != task.id
            ),
            key=lambda x: (-x[0], x[1]),
        )
        return [t for _, _, t in ranked[: self.settings.demonstrations]]

    def system_prompt(self, task: Task) -> str:
        """The policy and the retrieved demonstrations for ``task``."""
        demos = [demonstration(t) for t in self.retrieve(task)]
        return (
            _template()
            .render(domain=self.domain.name, policy=self.domain.policy(), demonstrations=demos)
            .strip()
        )

    def evaluate(
        self, training: Training, items: Sequence[DiagnosticItem], inputs: EvalInputs
    ) -> Evaluation:
        """τ²-bench episodes of the prompted model, with infra failures and model calls.

        ``inputs`` holds the items' tasks and the training's D_<=r (its demonstrations).
        """
        if inputs.data is None:
            raise ValueError(f"evaluating {training.training_id} needs its training data")
        self.load_index(training, inputs.data)
        agent, user = learner_gateways(self.cfg, training)
        runner = EpisodeRunner(
            self.domain.name,
            agent,
            user,
            self.system_prompt,
            episode_settings(self.cfg),
        )
        return runner.run(training, inputs.tasks, items)
