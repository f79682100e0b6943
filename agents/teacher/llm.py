"""The LLM rollout teacher: τ²-bench's orchestrator with an LLM agent and an LLM user simulator.

The agent (role ``teacher``) and the user simulator (role ``user_simulator``, its own model
setting) are τ²-bench ``LLMAgent`` / ``UserSimulator`` subclasses whose model calls go through
EvoSyn's ``Gateway`` instead of τ²-bench's litellm wrapper, so every attempt is an ``llm_calls``
row. Tool calls run in a fresh environment of the task's initial state; the orchestrator's
messages become a ``Trajectory`` in the same format as the programmatic teachers'.

The agent is blind to the task, as a τ²-bench agent is: its prompt holds its instructions, the
domain's policy and tools, nothing of what the customer wants; the task (its user scenario,
and what the user must act out) goes to the user simulator only.

Repair: attempt ``k >= 1`` reruns the whole conversation from the original initial state. The
verifier's reasons on the previous attempt (the ``Attempt`` the synthesis loop passes in) go to
the side that can fix them (:func:`~evosyn.agents.teacher.by_side`): the agent's into a repair
section of its prompt, with the tool calls made then, numbered as the reasons number them; what
the user failed to act out into a repair section of the user simulator's instructions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from tau2.agent.llm_agent import LLMAgent, LLMAgentState
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    MultiToolMessage,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from tau2.data_model.tasks import Task
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.user.base import UserState, ValidUserInputMessage
from tau2.user.user_simulator import UserSimulator
from tau2.utils.llm_utils import to_litellm_messages

from evosyn.agents.gateway import Completion, Gateway
from evosyn.agents.teacher.base import Attempt, by_side
from evosyn.config import CampaignConfig
from evosyn.environments.base import Tau2Domain
from evosyn.environments.dialogue_acts import ACTING, HANDLING, persona_kind
from evosyn.environments.features import iter_tool_calls
from evosyn.environments.information_flow import Choice
from evosyn.environments.kit.choices import payment
from evosyn.environments.kit.dialogue import stock_system_prompt
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import SynthTask, Trajectory

TEMPLATES = Path(__file__).parent
# Turns (agent, user and environment steps) before the orchestrator stops a rollout.
DEFAULT_MAX_STEPS = 60


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def _in_words(choices: Iterable[Choice]) -> list[str]:
    """What ``choices`` are, each named once, in the domain's order."""
    # "this passenger" names one at a time: the prompt speaks of each
    return list(
        dict.fromkeys(
            f"each {c.what[5:]}" if c.what.startswith("this ") else c.what for c in choices
        )
    )


def user_choices(domain: str) -> list[str]:
    """What the domain's customer chooses (its declared choices, each named once), in words."""
    flow = domain_plugin(domain).flow
    return _in_words(flow.choices) if flow else []


def _record(choice: Choice) -> bool:
    """Whether ``choice`` picks one of the customer's records by its id (an order, a line)."""
    return choice.argument.removesuffix("[]").endswith(("_id", "_ids")) and not choice.proposable


def user_records(domain: str) -> list[str]:
    """The domain's records a customer names themselves (never by a yes to a proposal), in words.

    Its declared choices of a record by id that the agent may not propose: retail's order and
    items, airline's reservation, telecom's line.
    """
    flow = domain_plugin(domain).flow
    return _in_words(c for c in flow.choices if _record(c)) if flow else []


def pays(domain: str) -> bool:
    """Whether the domain's customer chooses a saved payment method for some write."""
    flow = domain_plugin(domain).flow
    return flow is not None and any(c.forms is payment for c in flow.choices)


def render(template: str, **values: Any) -> str:
    """Render one of the teacher's Jinja2 templates (``teacher.j2``, ``repair.j2``, ...)."""
    return _env().get_template(template).render(**values).strip()


def acting_brief(task: SynthTask) -> str:
    """What the user simulator must act out: the requested challenges and persona, defined.

    The task's scenario may already say it in the Generator's words; this states what each
    one requires, in the same words the realize check reads back (``dialogue_acts.ACTING``).
    """
    wanted = [c for c in task.requested.get("interaction_challenge", []) if c in ACTING]
    kind = persona_kind(task.task.user_scenario.persona)
    lines = [f"- {c.replace('_', ' ')}: {ACTING[c]}." for c in wanted]
    if kind is not None:
        lines.append(f"- your manner ({kind}): {ACTING[kind]}.")
    if not lines:
        return ""
    return "In this conversation you must act out, in your own words:\n" + "\n".join(lines)


def call_text(call: ToolCall) -> str:
    """A tool call as ``name({...})`` for prompts."""
    return f"{call.name}({json.dumps(call.arguments, sort_keys=True)})"


def numbered_calls(messages: Sequence[Message]) -> list[str]:
    """Every tool call of ``messages`` as ``#n name({...})``, numbered as verdicts number them.

    The verifier and the information-flow gate count the calls of agent and user turns alike
    from 0 ("tool call #3 ..."); a call the user made (on their own device) says so.
    """
    return [
        f"#{number} {call_text(call)}" + (" (the customer's)" if call.requestor == "user" else "")
        for number, call in enumerate(iter_tool_calls(list(messages)))
    ]


def parse_tool_calls(completion: Completion, requestor: str) -> list[ToolCall] | None:
    """The completion's tool calls as τ²-bench ``ToolCall``s (None when there are none).

    Arguments that are not a JSON object are passed on unparsed under ``__raw_arguments__``,
    so the environment answers with an error the model can read, as it would for any bad call.
    """
    calls: list[ToolCall] = []
    for raw in completion.tool_calls:
        function = raw.get("function") or {}
        text = function.get("arguments") or "{}"
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"__raw_arguments__": text}
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{len(calls)}"),
                name=str(function.get("name") or ""),
                arguments=arguments,
                requestor=requestor,
            )
        )
    return calls or None


def ask(
    gateway: Gateway,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    seed: int | None,
) -> AssistantMessage:
    """One gateway call on τ²-bench messages; the answer as an ``AssistantMessage``."""
    params: dict[str, Any] = {"seed": seed} if seed is not None else {}
    if tools:
        params["tool_choice"] = "auto"
    completion = gateway.complete(
        to_litellm_messages(list(messages)), tools=list(tools) if tools else None, **params
    )
    calls = parse_tool_calls(completion, "assistant")
    # τ²-bench's protocol: a turn is either a message or tool calls, never both.
    content = None if calls else (completion.text or "")
    return AssistantMessage(
        role="assistant",
        content=content,
        tool_calls=calls,
        cost=completion.cost,
        usage={
            "prompt_tokens": completion.usage.tokens_in,
            "completion_tokens": completion.usage.tokens_out,
        },
    )


class RolloutError(RuntimeError):
    """The conversation broke τ²-bench's protocol (e.g. an empty model turn)."""


class GatewayAgent(LLMAgent):  # type: ignore[misc]  # tau2 is untyped here
    """τ²-bench's LLM agent with its model calls made through the gateway."""

    def __init__(
        self,
        gateway: Gateway,
        tools: Sequence[dict[str, Any]],
        system_prompt: str,
    ) -> None:
        super().__init__(tools=[], domain_policy="", llm=gateway.settings.model)
        self.gateway = gateway
        self.tool_schemas = list(tools)
        self._system_prompt = system_prompt
        self.seed: int | None = None

    @property
    def system_prompt(self) -> str:
        """The teacher prompt (instructions, policy and any repair section)."""
        return self._system_prompt

    def set_seed(self, seed: int) -> None:
        """Seed of the model's sampling (part of the cache key)."""
        self.seed = seed

    def generate_next_message(
        self, message: Any, state: LLMAgentState
    ) -> tuple[AssistantMessage, LLMAgentState]:
        """The agent's next turn on the conversation so far."""
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        reply = ask(
            self.gateway, state.system_messages + state.messages, self.tool_schemas, self.seed
        )
        state.messages.append(reply)
        return reply, state


class GatewayUser(UserSimulator):  # type: ignore[misc]
    """τ²-bench's user simulator (its own guidelines and scenario) calling through the gateway."""

    def __init__(
        self,
        gateway: Gateway,
        instructions: str,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        # τ²-bench picks its tool-using guidelines when ``tools`` is set; the schemas are ours.
        super().__init__(tools=None, instructions=instructions, llm=gateway.settings.model)
        self.gateway = gateway
        self.tool_schemas = list(tools or [])
        self.seed: int | None = None

    @property
    def global_simulation_guidelines(self) -> str:
        """τ²-bench's simulation guidelines, with or without the tool section."""
        from tau2.user.user_simulator import get_global_user_sim_guidelines

        return str(get_global_user_sim_guidelines(use_tools=bool(self.tool_schemas)))

    def set_seed(self, seed: int) -> None:
        """Seed of the simulator's sampling."""
        self.seed = seed

    def _generate_next_message(
        self, message: ValidUserInputMessage, state: UserState
    ) -> tuple[UserMessage, UserState]:
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        reply = ask(
            self.gateway, state.system_messages + state.flip_roles(), self.tool_schemas, self.seed
        )
        calls = None
        if reply.tool_calls:
            calls = [c.model_copy(update={"requestor": "user"}) for c in reply.tool_calls]
        user_message = UserMessage(
            role="user",
            content=None if calls else reply.content,
            tool_calls=calls,
            cost=reply.cost,
            usage=reply.usage,
        )
        state.messages.append(user_message)
        return user_message, state


class LLMTeacher:
    """Rolls tasks out with an LLM agent and an LLM user simulator under τ²-bench's orchestrator.

    Args:
        agent: Gateway of the teacher model (role ``teacher``).
        user: Gateway of the user simulator (role ``user_simulator``).
        domain: Domain name or instance (default: airline).
        max_steps: Orchestrator step limit of one rollout.
    """

    name = "llm"

    def __init__(
        self,
        agent: Gateway,
        user: Gateway,
        domain: str | Tau2Domain = "airline",
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self.agent_gateway = agent
        self.user_gateway = user
        self.gateways: list[Gateway] = [agent, user]
        self.max_steps = max_steps

    @classmethod
    def from_config(cls, cfg: CampaignConfig) -> LLMTeacher:
        """The teacher of a campaign: gateways of roles ``teacher`` and ``user_simulator``."""
        seed = cfg.campaign.seed
        return cls(
            Gateway.from_config(cfg.llm, "teacher", seed=seed),
            Gateway.from_config(cfg.llm, "user_simulator", seed=seed + 1),
            cfg.campaign.domain,
        )

    # ---------------------------------------------------------------- prompts

    def system_prompt(self, repair: str = "") -> str:
        """The agent's system prompt (with a repair section when given).

        The same for every task of the domain: the agent learns what the customer wants from
        the conversation, as the agent of a τ²-bench conversation does.
        """
        return render(
            "teacher.j2",
            domain=self.domain.name,
            policy=self.domain.policy(),
            handling=list(HANDLING.values()),
            choices=user_choices(self.domain.name),
            records=user_records(self.domain.name),
            pays=pays(self.domain.name),
            repair=repair,
        )

    def repair_section(
        self, attempt: int, reasons: Sequence[str], previous: Sequence[Message]
    ) -> str:
        """The agent's repair section: its reasons and the previous attempt's tool calls."""
        return render(
            "repair.j2",
            attempt=attempt,
            reasons=list(reasons) or ["the reward was below 1"],
            calls=numbered_calls(previous),
        )

    def user_repair_section(self, attempt: int, reasons: Sequence[str]) -> str:
        """The user simulator's repair section: what it failed to act out last time."""
        return render("user_repair.j2", attempt=attempt, reasons=list(reasons))

    def user_instructions(self, task: SynthTask, repair: str = "") -> str:
        """The user simulator's instructions: the task's scenario and what it must act out.

        With ``repair`` (:meth:`user_repair_section`), what it failed to act out last time.
        """
        parts = (str(task.task.user_scenario), acting_brief(task), repair)
        return "\n\n".join(part for part in parts if part)

    # ---------------------------------------------------------------- rollout

    def rollout(
        self,
        task: SynthTask,
        seed: int,
        attempt: int = 0,
        previous: Attempt | None = None,
    ) -> Trajectory:
        """Run the task's conversation; on ``attempt >= 1``, a repair of the previous one.

        Args:
            task: The synthesized task.
            seed: Seed of the model calls.
            attempt: 0 for the first rollout, k for the k-th repair.
            previous: The failed attempt: the verifier's reasons go into the repair section
                of the side that can fix them (with the attempt's tool calls, the agent's).

        Raises:
            LLMError: a model call failed for good (after the gateway's retries).
            RolloutError: a model turn broke τ²-bench's message protocol.
        """
        agent_repair = user_repair = ""
        if attempt > 0 and previous is not None:
            reasons = previous.verification.reasons
            agent_reasons, user_reasons = by_side(reasons)
            if agent_reasons or not reasons:
                agent_repair = self.repair_section(
                    attempt, agent_reasons, previous.trajectory.messages
                )
            if user_reasons:
                user_repair = self.user_repair_section(attempt, user_reasons)
        messages = self.simulate(
            task.task,
            seed + attempt,
            agent_repair,
            self.user_instructions(task, user_repair),
        )
        trajectory = Trajectory(
            campaign_id=task.campaign_id,
            round=task.round,
            trajectory_id=f"{task.task_id}-traj{attempt}",
            task_id=task.task_id,
            messages=messages,
            teacher=self.name,
            attempt=attempt,
        )
        return trajectory

    def simulate(
        self, task: Task, seed: int, repair: str = "", instructions: str = ""
    ) -> list[Message]:
        """One orchestrated conversation on a fresh environment of ``task``'s initial state.

        ``repair`` is the agent's repair section; ``instructions`` the user simulator's
        (:meth:`user_instructions`; by default the task's user scenario alone).
        """
        # A blank state: the orchestrator applies the task's initialisation itself.
        env = self.domain.blank_state().env
        agent = GatewayAgent(
            self.agent_gateway,
            self.domain.tool_schemas("assistant"),
            self.system_prompt(repair),
        )
        user = GatewayUser(
            self.user_gateway,
            instructions or str(task.user_scenario),
            self.domain.tool_schemas("user") or None,
        )
        orchestrator = Orchestrator(
            domain=self.domain.name,
            agent=agent,
            user=user,
            environment=env,
            task=task,
            max_steps=self.max_steps,
            seed=seed,
        )
        try:
            run = orchestrator.run()
        except ValueError as exc:
            # τ²-bench rejects an empty turn (neither text nor tool calls) with ValueError.
            first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise RolloutError(f"rollout broke the message protocol: {first}") from exc
        messages: list[Message] = [
            SystemMessage(role="system", content=stock_system_prompt(self.domain))
        ]
        messages.extend(run.messages)
        for index, message in enumerate(messages):
            # Fixed turn numbers and no wall-clock stamps, as the programmatic teachers write.
            message.turn_idx = index
            message.timestamp = None
        return messages
