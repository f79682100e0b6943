"""Evaluating a learner for real: τ²-bench's orchestrator with the learner as agent.

The learner's model (a vLLM server for a checkpoint, or any chat model for the in-context
learner) and a configured user simulator both go through the ``Gateway``; each episode's final
conversation is scored by the replay verifier against the task's evaluation criteria.

Infrastructure failures are not the learner's: the server being down, the context overflowing
or the user simulator failing is classified, retried where a retry can help, and then marked as
an ``InfraFailure`` instead of being scored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import (
    AssistantMessage,
    MultiToolMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.simulation import TerminationReason
from tau2.data_model.tasks import Task
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.utils.llm_utils import to_litellm_messages

from evosyn.agents.gateway import (
    BudgetExceeded,
    Completion,
    ContextLengthError,
    Gateway,
    GatewaySettings,
    LLMError,
    RetryableLLMError,
)
from evosyn.agents.learner.base import (
    DiagnosticItem,
    Evaluation,
    InfraFailure,
    InfraKind,
    episode_id,
)
from evosyn.agents.learner.export import RESULT_SEPARATOR, learner_view
from evosyn.agents.learner.user_faults import canonical, user_faults
from evosyn.agents.teacher.llm import GatewayAgent, GatewayUser, parse_tool_calls
from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.config import CampaignConfig
from evosyn.environments import get_domain
from evosyn.records import EvalResult, LLMCall, Training

# Context overflow is a property of the prompt, so a second try cannot pass; a user-simulator
# fault is marked, not retried: the same seed would play it again, at a cost.
_NOT_RETRIED: frozenset[str] = frozenset({"context_overflow", "user_sim_fault"})


class InfraError(RuntimeError):
    """An episode broken by infrastructure, not by the learner."""

    def __init__(self, kind: InfraKind, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: InfraKind = kind


class EpisodeSettings(BaseModel):
    """How the τ²-bench episodes of one evaluation run."""

    model_config = ConfigDict(extra="forbid")

    trials: int = Field(default=1, ge=1, description="Episodes per task (seeds).")
    max_steps: int = Field(default=60, ge=2, description="Orchestrator steps per episode.")
    infra_retries: int = Field(default=2, ge=0, description="Retries of an infra failure.")
    seed: int = Field(default=0, description="Seed of the first trial.")
    concurrency: int = Field(
        default=1,
        ge=1,
        description="Episodes at once (each gateway still bounds its own requests; under a "
        "spend cap each call first holds room for itself, so the cap holds as in a serial run).",
    )


def evaluation_concurrency(cfg: CampaignConfig) -> int:
    """Episodes at once: ``agents.learner.concurrency``, else the learner role's own limit.

    An episode has one call in flight at a time, so the learner's endpoint sees at most as
    many requests as there are episodes: by default as many as its gateway lets through
    (``concurrency`` of ``llm.roles.learner``). Spend caps hold at any value (:class:`HeldCalls`).
    """
    configured = cfg.agents.learner.concurrency
    if configured is not None:
        return configured
    # The role's model may be unset (an SFT learner serves its own checkpoint): read the
    # limit alone, layered as resolve_settings layers it.
    role = cfg.llm.roles.get("learner")
    for layer in (role, cfg.llm.default):
        if layer is not None and layer.concurrency is not None:
            return layer.concurrency
    default = GatewaySettings.model_fields["concurrency"].default
    assert isinstance(default, int)
    return default


def learner_gateways(
    cfg: CampaignConfig, training: Training, **learner: Any
) -> tuple[Gateway, Gateway]:
    """The learner's and the user simulator's gateways for evaluating ``training``.

    Seeded from the campaign (the user simulator one higher); ``learner`` overrides the
    learner role's settings. Both sides' calls count toward the campaign's and the round's
    spend caps.
    """
    seed = cfg.campaign.seed
    agent = Gateway.from_config(cfg.llm, "learner", seed=seed, **learner)
    user = Gateway.from_config(cfg.llm, "user_simulator", seed=seed + 1)
    for gateway in (agent, user):
        gateway.bind_spend(training.campaign_id, cfg.lake.root, training.round)
    return agent, user


def _agent_kind(error: LLMError) -> InfraKind:
    if isinstance(error, ContextLengthError):
        return "context_overflow"
    if isinstance(error, RetryableLLMError) or "connect" in error.error_class.lower():
        return "server_down"
    return "server_error"


class HeldCalls:
    """A gateway whose every call first holds room for itself under the campaign's caps.

    Concurrent episodes would each pass the gateway's check of the spend so far and together
    overshoot a cap; each call here waits for a :meth:`SpendLedger.hold
    <evosyn.agents.gateway.budget.SpendLedger.hold>` first. Everything else is the gateway's.
    """

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    @property
    def settings(self) -> GatewaySettings:
        """The wrapped gateway's settings."""
        return self.gateway.settings

    def complete(self, messages: Sequence[dict[str, Any]], **kwargs: Any) -> Completion:
        """``Gateway.complete`` under a hold on the campaign's ledger (when a cap is set)."""
        gateway, s = self.gateway, self.gateway.settings
        if gateway.ledger is None:
            return gateway.complete(messages, **kwargs)
        with gateway.ledger.hold(
            gateway.role, gateway.round, s.budget_usd, s.round_budget_usd
        ) as held:
            completion = gateway.complete(messages, **kwargs)
            held.settle(None if completion.cached else completion.cost)
        return completion


class EmptyTurn(RuntimeError):
    """The learner answered with neither text nor a tool call: its failure, not the server's."""


class LearnerAgent(GatewayAgent):
    """The learner under evaluation; its gateway failures are infrastructure failures."""

    def generate_next_message(self, message: Any, state: Any) -> tuple[AssistantMessage, Any]:
        """The learner's next turn.

        Raises:
            InfraError: When its model cannot be reached.
            EmptyTurn: When its model says nothing (τ²-bench's orchestrator would raise).
        """
        try:
            reply, state = super().generate_next_message(message, state)
        except LLMError as exc:
            raise InfraError(_agent_kind(exc), str(exc)) from exc
        if not (reply.is_tool_call() or reply.has_text_content()):
            raise EmptyTurn("the learner sent an empty turn")
        return reply, state


class TrainedAgent(LearnerAgent):
    """A fine-tuned learner, shown each conversation as its training samples lay it out.

    Each call sends ``export.learner_view`` of the conversation: it opens with the user's first
    line (τ²-bench's greeting, which LLaMA-Factory cannot train, is left out), and consecutive
    results of one parallel call go as one tool message joined as the ShareGPT export joins them
    (rendered as separate ``<tool_response>`` blocks by Qwen's template and LLaMA-Factory's,
    and accepted by LLaMA-Factory's API server, which reads only alternating turns).
    """

    def generate_next_message(self, message: Any, state: Any) -> tuple[AssistantMessage, Any]:
        """The learner's next turn, asked on its view of the conversation.

        τ²-bench's state keeps the whole conversation; only the request is the view. Text the
        model writes beside a tool call stays in its turn, as in its training samples (and in
        τ²-bench's own agent).

        Raises:
            InfraError: When its model cannot be reached.
            EmptyTurn: When its model says nothing.
        """
        incoming = message.tool_messages if isinstance(message, MultiToolMessage) else [message]
        state.messages.extend(incoming)
        messages = to_litellm_messages([*state.system_messages, *trained_view(state.messages)])
        params: dict[str, Any] = {"seed": self.seed} if self.seed is not None else {}
        try:
            completion = self.gateway.complete(
                messages, tools=self.tool_schemas, tool_choice="auto", **params
            )
        except LLMError as exc:
            raise InfraError(_agent_kind(exc), str(exc)) from exc
        reply = AssistantMessage(
            role="assistant",
            content=completion.text or None,
            tool_calls=parse_tool_calls(completion, "assistant"),
            cost=completion.cost,
            usage={
                "prompt_tokens": completion.usage.tokens_in,
                "completion_tokens": completion.usage.tokens_out,
            },
        )
        if not (reply.is_tool_call() or reply.has_text_content()):
            raise EmptyTurn("the learner sent an empty turn")
        state.messages.append(reply)
        return reply, state


def trained_view(messages: Sequence[Any]) -> list[Any]:
    """``learner_view`` of ``messages`` with a parallel call's results as one tool message."""
    view: list[Any] = []
    for m in learner_view(messages):
        last = view[-1] if view else None
        if isinstance(m, ToolMessage) and isinstance(last, ToolMessage):
            joined = f"{last.content or ''}{RESULT_SEPARATOR}{m.content or ''}"
            view[-1] = last.model_copy(update={"content": joined})
        else:
            view.append(m)
    return view


class SimulatedUser(GatewayUser):
    """τ²-bench's user simulator; its failures are infrastructure failures."""

    def _generate_next_message(self, message: Any, state: Any) -> tuple[UserMessage, Any]:
        try:
            return super()._generate_next_message(message, state)
        except LLMError as exc:
            raise InfraError("user_sim_error", str(exc)) from exc


class EpisodeRunner:
    """Runs the learner on tasks under τ²-bench's orchestrator and scores each episode.

    Args:
        domain: Domain name.
        agent: Gateway of the learner's model.
        user: Gateway of the user simulator.
        system_prompt: The learner's system prompt for a task (policy, demonstrations, ...).
        settings: Trials, step limit, infra retries, seed.
        agent_type: How the learner sees the conversation (:class:`TrainedAgent` for a
            fine-tuned one).
    """

    def __init__(
        self,
        domain: str,
        agent: Gateway,
        user: Gateway,
        system_prompt: Callable[[Task], str],
        settings: EpisodeSettings | None = None,
        agent_type: type[LearnerAgent] = LearnerAgent,
    ) -> None:
        self.domain = get_domain(domain)
        self.agent_type = agent_type
        self.agent = agent
        self.user = user
        self.system_prompt = system_prompt
        self.settings = settings or EpisodeSettings()
        self.verifier = ReplayVerifier(self.domain)
        # The verifier's gold-state cache is not thread-safe; scoring is quick beside the calls.
        self._scoring = threading.Lock()
        self._database: str | None = None
        self.failures: list[InfraFailure] = []

    def in_database(self, fact: str) -> bool:
        """Whether the domain's initial database holds ``fact`` (read once, on first use)."""
        with self._scoring:
            if self._database is None:
                self._database = canonical(self.domain.blank_state().db.model_dump_json())
            return fact in self._database

    def calls(self, training: Training) -> list[LLMCall]:
        """Both gateways' unwritten attempts as ``llm_calls`` rows of ``training``'s round."""
        cid, rnd = training.campaign_id, training.round
        with self.agent.drain(cid, rnd) as mine, self.user.drain(cid, rnd) as theirs:
            return [*mine, *theirs]

    def run(
        self, training: Training, tasks: dict[str, Task], items: Sequence[DiagnosticItem]
    ) -> Evaluation:
        """:meth:`evaluate`'s results, with the infra failures and both gateways' calls."""
        results = self.evaluate(training, tasks, items)
        return Evaluation(results=results, failures=self.failures, calls=self.calls(training))

    def episode(self, task: Task, seed: int) -> tuple[float, str, list[str]]:
        """One conversation: reward, termination reason and the verifier's failing checks."""
        # The roles' classes take a Gateway; HeldCalls offers what they use of one.
        agent = self.agent_type(
            cast(Gateway, HeldCalls(self.agent)),
            self.domain.tool_schemas("assistant"),
            self.system_prompt(task),
        )
        user = SimulatedUser(
            cast(Gateway, HeldCalls(self.user)),
            str(task.user_scenario),
            self.domain.tool_schemas("user") or None,
        )
        orchestrator = Orchestrator(
            domain=self.domain.name,
            agent=agent,
            user=user,
            environment=self.domain.blank_state().env,
            task=task,
            max_steps=self.settings.max_steps,
            seed=seed,
        )
        try:
            run = orchestrator.run()
        except EmptyTurn as exc:
            # τ²-bench counts an empty agent message as the agent's protocol error.
            return 0.0, TerminationReason.AGENT_ERROR.value, [str(exc)]
        reason = run.termination_reason
        if reason == TerminationReason.USER_ERROR:
            raise InfraError("user_sim_error", "the user simulator broke the turn protocol")
        stopped = {TerminationReason.AGENT_STOP, TerminationReason.USER_STOP}
        if reason not in stopped:
            scored: tuple[float, str, list[str]] = (
                0.0,
                reason.value,
                [f"terminated: {reason.value}"],
            )
        else:
            messages = [SystemMessage(role="system", content=self.domain.policy()), *run.messages]
            with self._scoring:
                report = self.verifier.report(task, messages)
            scored = (report.reward, reason.value, report.reasons)
        if scored[0] < 1.0:
            # A failure the user side caused says nothing about the learner: marked, not scored.
            faults = user_faults(task, run.messages, reason, self.in_database)
            if faults:
                raise InfraError("user_sim_fault", "; ".join(f.label() for f in faults[:3]))
        return scored

    def evaluate(
        self, training: Training, tasks: dict[str, Task], items: Sequence[DiagnosticItem]
    ) -> list[EvalResult]:
        """One result per item and trial; infra failures go to ``self.failures`` instead.

        Episodes run ``settings.concurrency`` at a time; each is seeded by its trial alone, and
        results and failures come back in item and trial order, as a serial run gives them.

        Raises:
            BudgetExceeded: a spend cap stopped the evaluation; it carries the ``llm_calls``
                rows of both gateways' attempts so far, for the step to store.
        """
        trials = self.settings.trials
        jobs = [(item, trial) for item in items for trial in range(trials)]
        with ThreadPoolExecutor(self.settings.concurrency, thread_name_prefix="episode") as pool:
            futures = [
                pool.submit(self._with_retries, tasks[item.task_id], item.task_id, trial)
                for item, trial in jobs
            ]
            try:
                outcomes = [future.result() for future in futures]
            except BudgetExceeded as exc:
                pool.shutdown(wait=True, cancel_futures=True)
                # Paid for and not stored anywhere else: the step writes them.
                exc.calls = self.calls(training)
                raise
        results: list[EvalResult] = []
        for (item, trial), (scored, failure) in zip(jobs, outcomes, strict=True):
            if failure is not None:
                self.failures.append(failure)
            if scored is None:
                continue
            reward, reason, reasons = scored
            success = reward >= 1.0
            detail = "; ".join(reasons[:3])
            results.append(
                EvalResult(
                    campaign_id=training.campaign_id,
                    round=training.round,
                    training_id=training.training_id,
                    # One row per task and trial: the lake's key is (training, task).
                    task_id=episode_id(item.task_id, trial, trials),
                    split=item.split,
                    success=success,
                    reward=max(0.0, min(1.0, reward)),
                    realized=item.realized,
                    failure_reason=None if success else f"{reason}: {detail}".rstrip(": "),
                )
            )
        return results

    def _with_retries(
        self, task: Task, task_id: str, trial: int
    ) -> tuple[tuple[float, str, list[str]] | None, InfraFailure | None]:
        attempts = self.settings.infra_retries + 1
        for attempt in range(attempts):
            try:
                return self.episode(task, self.settings.seed + trial), None
            except InfraError as exc:
                if exc.kind in _NOT_RETRIED or attempt == attempts - 1:
                    failure = InfraFailure(
                        task_id=task_id,
                        trial=trial,
                        kind=exc.kind,
                        attempts=attempt + 1,
                        message=str(exc)[:500],
                    )
                    return None, failure
        return None, None
