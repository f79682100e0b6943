"""The episode API: a policy plays τ²-bench conversations one assistant turn at a time.

``EpisodeEnv.reset(task)`` starts an episode on its own copy of the domain's databases and
returns it with the agent's system prompt, tools and opening (the orchestrator's greeting and
the user's first turn); ``Episode.step(assistant message)`` returns what the agent hears back
(the tools' answers, or the user's next turn) until the episode ends; its outcome carries the
replay verifier's reward and reasons.

The conversation is driven by τ²-bench's own ``Orchestrator``: its ``initialize`` and ``step``
run every turn, and this module only repeats what its ``run`` loop adds between steps (the
step and error limits), so an episode ends exactly where ``Orchestrator.run`` would end it.
The policy sits in the agent's seat; the user is the offline :class:`ScriptedUser` or, with a
gateway, τ²-bench's user simulator on the configured model. Episodes share nothing mutable
but the scorer (which locks), so many run at once (:func:`run_episodes`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field
from tau2.agent.base import BaseAgent, is_valid_agent_history_message
from tau2.config import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
)
from tau2.data_model.simulation import TerminationReason
from tau2.data_model.tasks import Task
from tau2.environment.environment import Environment
from tau2.orchestrator.orchestrator import Orchestrator, Role
from tau2.user.base import BaseUser
from tau2.utils.llm_utils import to_litellm_messages
from tau2.utils.utils import get_now

from evosyn.agents.episodes.reward import RewardScorer, RewardVerdict
from evosyn.agents.episodes.tasks import EpisodeTask, TaskSet
from evosyn.agents.episodes.users import Script, ScriptedUser, fresh, script_of
from evosyn.agents.gateway import Gateway
from evosyn.agents.learner.episodes import SimulatedUser
from evosyn.config import CampaignConfig
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import get_domain


class EpisodeSettings(BaseModel):
    """Limits and seed of episodes (τ²-bench's defaults)."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(
        default=DEFAULT_MAX_STEPS, ge=1, description="Orchestrator steps before MAX_STEPS."
    )
    max_errors: int = Field(
        default=DEFAULT_MAX_ERRORS, ge=1, description="Erroring tool calls before it stops."
    )
    seed: int = Field(default=0, description="Seed of an episode reset without one.")


class EpisodeError(RuntimeError):
    """A call the episode's state does not allow (a step after the end)."""


class Opening(BaseModel):
    """What the policy is given when an episode starts."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: str = Field(description="The agent's system prompt (policy and instructions).")
    tools: list[dict[str, Any]] = Field(description="The agent's tools, OpenAI function schemas.")
    messages: list[Message] = Field(
        description="The conversation so far as the agent sees it: the greeting (or the "
        "task's history) and the user's first turn."
    )


class EpisodeOutcome(BaseModel):
    """A finished episode: its conversation and the verifier's reward."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="The task played.")
    seed: int = Field(description="The episode's seed.")
    termination_reason: str = Field(description="How τ²-bench's orchestrator ended it.")
    verdict: RewardVerdict = Field(description="Reward and reasons (replay verifier).")
    messages: list[Message] = Field(
        description="The whole conversation, system prompt first, as τ²-bench records it."
    )
    steps: int = Field(description="Orchestrator steps taken.")
    policy_turns: int = Field(description="Assistant turns the policy sent.")

    @property
    def reward(self) -> float:
        """The episode's reward."""
        return self.verdict.reward


class Turn(BaseModel):
    """What one assistant turn brought back."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(
        description="What the agent hears back: tool answers or the user's next turn."
    )
    done: bool = Field(description="The episode ended.")
    outcome: EpisodeOutcome | None = Field(default=None, description="Set once it ended.")


def assistant_turn(message: AssistantMessage | Mapping[str, Any]) -> AssistantMessage:
    """An assistant turn from a τ²-bench message or an OpenAI-format assistant message.

    Tool calls win over text, as τ²-bench's protocol allows one or the other; arguments that
    are no JSON object are passed on under ``__raw_arguments__`` for the tool to reject.
    """
    if isinstance(message, AssistantMessage):
        return message
    calls: list[ToolCall] = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"__raw_arguments__": arguments}
        if not isinstance(arguments, dict):
            arguments = {"__raw_arguments__": json.dumps(arguments)}
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{len(calls)}"),
                name=str(function.get("name") or ""),
                arguments=arguments,
                requestor="assistant",
            )
        )
    content = message.get("content")
    return AssistantMessage(
        role="assistant",
        content=None if calls else (content if isinstance(content, str) else None),
        tool_calls=calls or None,
    )


class _PolicySeat(BaseAgent):  # type: ignore[misc]  # tau2 is untyped here
    """The agent's seat at τ²-bench's orchestrator: it says what ``Episode.step`` hands it."""

    def __init__(self) -> None:
        self.pending: AssistantMessage | None = None

    def get_init_state(self, message_history: list[Message] | None = None) -> None:
        return None

    def generate_next_message(self, message: Any, state: None) -> tuple[AssistantMessage, None]:
        reply, self.pending = self.pending, None
        if reply is None:
            raise EpisodeError("the orchestrator asked for a turn no step gave")
        return reply, state

    def set_seed(self, seed: int) -> None:
        """The policy is seeded by whoever runs it."""

    def stop(self, message: Any = None, state: Any = None) -> None:
        """Nothing to release."""


class Episode:
    """One conversation of a policy on a task, stepped one assistant turn at a time.

    Made by :meth:`EpisodeEnv.reset`, which also opens it.
    """

    def __init__(
        self,
        item: EpisodeTask,
        seed: int,
        user: BaseUser,
        scorer: RewardScorer,
        system_prompt: str,
        settings: EpisodeSettings,
        script: Script | None = None,
    ) -> None:
        self.item = item
        self.seed = seed
        self.scorer = scorer
        self.settings = settings
        #: The scripted conversation the offline user plays from (None with a model user).
        self.script = script
        self.system_prompt = system_prompt
        domain = scorer.domain
        self._seat = _PolicySeat()
        self._orchestrator = Orchestrator(
            domain=domain.name,
            agent=self._seat,
            user=user,
            environment=domain.blank_state().env,  # this episode's own databases
            task=item.task,
            max_steps=settings.max_steps,
            max_errors=settings.max_errors,
            seed=seed,
        )
        self.policy_turns = 0
        self.outcome: EpisodeOutcome | None = None
        self._orchestrator.initialize()
        self._advance()
        self.opening = Opening(
            system_prompt=system_prompt,
            tools=domain.tool_schemas("assistant"),
            messages=self.view(),
        )

    @property
    def task(self) -> Task:
        """The task played."""
        return self.item.task

    @property
    def environment(self) -> Environment:
        """The episode's τ²-bench environment (its own databases)."""
        environment: Environment = self._orchestrator.environment
        return environment

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        return self.outcome is not None

    def view(self) -> list[Message]:
        """The conversation as the agent sees it (no system prompt, no user tool calls)."""
        return [
            fresh(m) for m in self._orchestrator.trajectory if is_valid_agent_history_message(m)
        ]

    def openai_messages(self) -> list[dict[str, Any]]:
        """The agent's prompt in OpenAI chat format: system prompt, then :meth:`view`."""
        system = SystemMessage(role="system", content=self.system_prompt)
        messages: list[dict[str, Any]] = to_litellm_messages([system, *self.view()])
        return messages

    def step(self, message: AssistantMessage | Mapping[str, Any]) -> Turn:
        """Send the policy's next assistant turn; what comes back, and whether it ended.

        Raises:
            EpisodeError: If the episode has already ended.
        """
        if self.outcome is not None:
            raise EpisodeError(f"episode of {self.item.task_id} has ended")
        turn = assistant_turn(message)
        self.policy_turns += 1
        orchestrator = self._orchestrator
        before = len(orchestrator.trajectory)
        if not (turn.is_tool_call() or turn.has_text_content()):
            # τ²-bench's orchestrator raises on an empty turn; its runner scores it an
            # agent error (reward 0), as the learner's evaluation does.
            self._finish(TerminationReason.AGENT_ERROR, "the agent sent an empty turn")
            return Turn(messages=[], done=True, outcome=self.outcome)
        # τ²-bench orders a conversation by its time stamps: the turn is stamped as sent.
        self._seat.pending = turn.model_copy(update={"timestamp": get_now()})
        self._tick()
        self._advance()
        heard = [
            fresh(m)
            for m in orchestrator.trajectory[before + 1 :]
            if is_valid_agent_history_message(m)
        ]
        return Turn(messages=heard, done=self.done, outcome=self.outcome)

    # ------------------------------------------------------------------ the run loop

    def _tick(self) -> None:
        """One orchestrator step and the checks ``Orchestrator.run`` makes after it."""
        orchestrator = self._orchestrator
        orchestrator.step()
        if orchestrator.to_role == Role.ENV:
            return
        if orchestrator.step_count >= self.settings.max_steps:
            orchestrator.done = True
            orchestrator.termination_reason = TerminationReason.MAX_STEPS
        if orchestrator.num_errors >= self.settings.max_errors:
            orchestrator.done = True
            orchestrator.termination_reason = TerminationReason.TOO_MANY_ERRORS

    def _advance(self) -> None:
        """Step until the agent is to speak or the conversation is over."""
        orchestrator = self._orchestrator
        while not orchestrator.done and orchestrator.to_role != Role.AGENT:
            self._tick()
        if orchestrator.done:
            self._finish(orchestrator.termination_reason)

    def _finish(self, reason: TerminationReason, error: str | None = None) -> None:
        messages: list[Message] = [
            SystemMessage(role="system", content=self.system_prompt),
            *(fresh(m) for m in self._orchestrator.trajectory),
        ]
        for index, message in enumerate(messages):
            message.turn_idx = index
            message.timestamp = None
        verdict = self.scorer.score(self.item.task, messages, reason)
        if error is not None:
            verdict = verdict.model_copy(update={"reasons": [error]})
        self.outcome = EpisodeOutcome(
            task_id=self.item.task_id,
            seed=self.seed,
            termination_reason=reason.value,
            verdict=verdict,
            messages=messages,
            steps=self._orchestrator.step_count,
            policy_turns=self.policy_turns,
        )


class EpisodeEnv:
    """Episodes over a verified task set.

    Args:
        tasks: The task set.
        user: The user simulator's gateway (role ``user_simulator``); None plays the offline
            :class:`ScriptedUser`.
        settings: Step and error limits, default seed.
        system_prompt: The agent's system prompt for a task (default: τ²-bench's stock
            agent prompt with the domain's policy, as the stored conversations have it).
        policy: Which trajectories the domain's policy model checks (see
            :class:`RewardScorer`).
    """

    def __init__(
        self,
        tasks: TaskSet,
        user: Gateway | None = None,
        settings: EpisodeSettings | None = None,
        system_prompt: Callable[[Task], str] | None = None,
        policy: str = "synthetic",
    ) -> None:
        self.tasks = tasks
        self.domain = get_domain(tasks.domain)
        self.user = user
        self.settings = settings or EpisodeSettings()
        stock = stock_system_prompt(self.domain)
        self.system_prompt = system_prompt or (lambda task: stock)
        self.scorer = RewardScorer(self.domain, policy=policy)

    @classmethod
    def from_config(
        cls, cfg: CampaignConfig, tasks: TaskSet, *, model_user: bool = True
    ) -> EpisodeEnv:
        """Episodes of ``tasks`` with the campaign's user simulator, or the scripted one.

        The model user is role ``user_simulator``, seeded one above the campaign as the
        learner's evaluation seeds it; episodes default to the campaign's seed.
        """
        user = None
        if model_user:
            user = Gateway.from_config(cfg.llm, "user_simulator", seed=cfg.campaign.seed + 1)
        return cls(tasks, user=user, settings=EpisodeSettings(seed=cfg.campaign.seed))

    def reset(self, task: str | EpisodeTask, seed: int | None = None) -> Episode:
        """A new episode of ``task`` (an id of the set, or a task), opened.

        Its :attr:`Episode.opening` holds the system prompt, tools and first messages; when
        the user ends the call before the agent speaks, it is already done.
        """
        item = self.tasks[task] if isinstance(task, str) else task
        seed = self.settings.seed if seed is None else seed
        prompt = self.system_prompt(item.task)
        script: Script | None = None
        user: BaseUser
        if self.user is None:
            script = script_of(item, self.domain.name, seed)
            user = ScriptedUser(script.user)
        else:
            user = SimulatedUser(
                self.user, str(item.task.user_scenario), self.domain.tool_schemas("user") or None
            )
        return Episode(item, seed, user, self.scorer, prompt, self.settings, script)


class Policy(Protocol):
    """Chooses the next assistant turn of an episode."""

    def __call__(self, episode: Episode) -> AssistantMessage | Mapping[str, Any]:
        """The next turn, given the episode so far (:meth:`Episode.view`)."""
        ...


class ReplayPolicy:
    """Says the agent's turns of the episode's script in order, then a closing line.

    With the scripted user this replays the verified conversation; it is the policy that
    reaches reward 1 on every task, the check of the pipe before a model is put in its seat.
    """

    closing = "Is there anything else I can help you with?"

    def __call__(self, episode: Episode) -> AssistantMessage:
        """The script's next agent turn."""
        if episode.script is None:
            raise EpisodeError("the replay policy needs a scripted episode")
        turns = episode.script.agent
        if episode.policy_turns < len(turns):
            turn: AssistantMessage = fresh(turns[episode.policy_turns])
            return turn
        return AssistantMessage(role="assistant", content=self.closing)


def play(episode: Episode, policy: Policy) -> EpisodeOutcome:
    """Step ``episode`` with ``policy`` until it ends."""
    while episode.outcome is None:
        episode.step(policy(episode))
    return episode.outcome


def run_episodes(
    env: EpisodeEnv,
    policy: Policy,
    jobs: Sequence[tuple[str, int]],
    workers: int = 8,
) -> list[EpisodeOutcome]:
    """Play ``(task id, seed)`` jobs with ``policy``, ``workers`` episodes at a time.

    Outcomes come in the order of ``jobs``. Threads suit policies and user simulators that
    wait on a model server; the replay itself holds the interpreter.
    """

    def one(job: tuple[str, int]) -> EpisodeOutcome:
        task_id, seed = job
        return play(env.reset(task_id, seed), policy)

    if workers <= 1:
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))
