"""Single-agent (monolithic) synthesis: one LLM call proposes a task and its trajectory together.

This is the paper's Monolithic Synthesis ablation: no Designer/Planner/Generator/Teacher split.
``SingleAgentSynthesizer`` is both a Generator (``generate`` parses the proposal into a
``SynthTask``, holding its task to the LLM Generator's contract,
:mod:`~evosyn.agents.generator.contract`; invalid output gets one repair turn naming every
problem, then is a ``GeneratorRejection`` with the reason) and a Teacher
(``rollout`` returns the conversation proposed with that task). The model writes no tool
results: ``rollout`` re-executes the proposed tool calls in a fresh environment of the task's
initial state, so every observation is the real one and the verifier judges honestly.

A factor the Reflector invented is handled as the LLM Generator handles it
(:mod:`~evosyn.agents.labeller.stated`): defined in the prompt by its definition (read from the
blueprint's space), its value stated in the proposal (``factor_values``), which must be the
requested one and the one the labeller reads off the task by the definition alone.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from tau2.data_model.message import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from tau2.data_model.tasks import (
    Action,
    Description,
    EvaluationCriteria,
    RewardType,
    StructuredUserInstructions,
    Task,
    UserScenario,
)

from evosyn.agents.gateway import Gateway, LLMError
from evosyn.agents.generator.base import (
    SINGLE_AGENT,
    Generator,
    GeneratorRejection,
    Screen,
    single_agent_on_model,
)
from evosyn.agents.generator.contract import (
    Contract,
    call_problem,
    definitions,
    lacks_id,
    requested,
    unknown_info_problem,
)
from evosyn.agents.labeller import LLMLabeller
from evosyn.agents.labeller.stated import (
    SpaceSource,
    check_stated,
    defined,
    invented_in,
    lake_spaces,
)
from evosyn.agents.llm_output import OutputRejected, ask_json
from evosyn.agents.prompt_context import grounding, render
from evosyn.agents.teacher.base import Attempt, Teacher, mistake_rate
from evosyn.config import CampaignConfig
from evosyn.environments.base import Tau2Domain
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.records import Blueprint, Factor, SynthTask, Trajectory

ROLE = SINGLE_AGENT
TEMPLATES = Path(__file__).parent


class ProposedCall(BaseModel):
    """A tool call the model proposes."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Tool arguments.")


class ProposedTask(BaseModel):
    """The task half of a proposal."""

    model_config = ConfigDict(extra="forbid")

    purpose: str = Field(min_length=1, description="What the task exercises.")
    reason_for_call: str = Field(min_length=1, description="Why the customer calls.")
    known_info: str = Field(default="", description="Facts the customer knows.")
    unknown_info: str | None = Field(default=None, description="Facts the customer lacks.")
    task_instructions: str = Field(default="", description="How the customer behaves.")
    persona: str | None = Field(
        default=None, description="The customer's manner in one line (τ²-bench's persona)."
    )
    gold_actions: list[ProposedCall] = Field(description="Tool calls that solve the task.")
    communicate_info: list[str] = Field(
        default_factory=list, description="What the agent must tell the customer."
    )

    @field_validator("communicate_info")
    @classmethod
    def _findable(cls, told: list[str]) -> list[str]:
        # τ²-bench looks for each string in the agent's message with the message's commas
        # removed (evaluator_communicate): a string with a comma is never found.
        for value in told:
            if "," in value:
                raise ValueError(
                    f"communicate_info {value!r} has a comma, and τ²-bench drops the commas "
                    "from the agent's message before it looks for it, so it is never found: "
                    "write an amount as its digits (1628, not 1,628) and one fact per string"
                )
        return told

    def to_task(self, task_id: str, domain: str) -> Task:
        """The τ²-bench task (reward basis: database and communicated facts)."""
        return Task(
            id=task_id,
            description=Description(purpose=self.purpose, relevant_policies=None, notes=None),
            user_scenario=UserScenario(
                persona=(self.persona or "").strip() or None,
                instructions=StructuredUserInstructions(
                    domain=domain,
                    reason_for_call=self.reason_for_call,
                    known_info=self.known_info,
                    unknown_info=self.unknown_info,
                    task_instructions=self.task_instructions,
                ),
            ),
            evaluation_criteria=EvaluationCriteria(
                actions=[
                    Action(action_id=f"{task_id}_{i}", name=a.name, arguments=a.arguments)
                    for i, a in enumerate(self.gold_actions)
                ],
                communicate_info=self.communicate_info,
                reward_basis=[RewardType.DB, RewardType.COMMUNICATE],
            ),
        )


class ProposedTurn(BaseModel):
    """One turn of the proposed conversation: a message or one assistant tool call."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"] = Field(description="Who speaks.")
    content: str | None = Field(default=None, description="Message text.")
    tool_call: ProposedCall | None = Field(default=None, description="An assistant tool call.")

    @model_validator(mode="after")
    def _one_kind(self) -> ProposedTurn:
        if (self.content is None) == (self.tool_call is None):
            raise ValueError("a turn has either content or a tool_call")
        if self.tool_call is not None and self.role != "assistant":
            raise ValueError("only the assistant calls tools")
        return self


class Proposal(BaseModel):
    """A whole monolithic proposal: task and conversation."""

    model_config = ConfigDict(extra="forbid")

    task: ProposedTask
    conversation: list[ProposedTurn] = Field(min_length=2)


def parse_proposal(data: dict[str, Any]) -> Proposal:
    """The proposal in ``data``; ValueError says where its shape is wrong."""
    try:
        return Proposal.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid proposal at {where or 'top level'}: {first['msg']}") from None


def conversation_problems(proposal: Proposal, domain: Tau2Domain) -> list[str]:
    """Every way the proposal's conversation cannot be played in ``domain``; empty if none.

    Its tool calls must name agent tools with their required arguments and no unknown ones,
    and the customer must speak. (The gold actions are the contract's to check.)
    """
    problems = []
    for index, turn in enumerate(proposal.conversation):
        call = turn.tool_call
        wrong = None if call is None else call_problem(domain, call.name, call.arguments)
        if wrong is not None:
            problems.append(f"conversation turn #{index}: {wrong}")
    if not any(t.role == "user" for t in proposal.conversation):
        problems.append("the conversation has no user turn")
    return problems


class SingleAgentSynthesizer:
    """One model call per blueprint proposes the task and its trajectory (monolithic ablation).

    Args:
        gateway: Gateway of the single synthesis agent.
        domain: Domain name or instance.
        cache_size: Proposals kept for ``rollout`` (one per task generated and not rolled out).
        entities: People sampled from the database into each prompt (with their records), as
            many as the LLM Generator shows.
        spaces: Finds a blueprint's space, for the definitions of factors the Reflector
            invented; None: such factors are named without one, and never labelled.
        labeller: Checks the value of an invented factor a proposal states; None: unchecked.
    """

    name = "single_agent"

    def __init__(
        self,
        gateway: Gateway,
        domain: str | Tau2Domain = "airline",
        cache_size: int = 4096,
        entities: int = 3,
        *,
        spaces: SpaceSource | None = None,
        labeller: LLMLabeller | None = None,
    ) -> None:
        self.gateway = gateway
        self.entities = entities
        self.spaces = spaces
        self.labeller = labeller
        self.gateways: list[Gateway] = [gateway, *(labeller.gateways if labeller else [])]
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._proposals: OrderedDict[str, Proposal] = OrderedDict()
        self.contract = Contract(self.domain)

    @classmethod
    def from_config(cls, cfg: CampaignConfig) -> SingleAgentSynthesizer:
        """From the campaign: role ``single_agent`` (``llm.roles.single_agent`` or default).

        Like the LLM Generator, it finds invented factors' definitions in the campaign lake's
        spaces, and the campaign's labeller checks the values it states.
        """
        role = cfg.llm.roles.get(ROLE)
        configured = (role is not None and role.temperature is not None) or (
            cfg.llm.default.temperature is not None
        )
        # It stands in for the Generator, which samples at 1.0 as in the paper.
        overrides: dict[str, Any] = {} if configured else {"temperature": 1.0}
        gateway = Gateway.from_config(cfg.llm, ROLE, seed=cfg.campaign.seed, **overrides)
        spaces = lake_spaces(cfg.lake.root, cfg.lake.s3_endpoint, cfg.lake.cache_dir)
        return cls(
            gateway, cfg.campaign.domain, spaces=spaces, labeller=LLMLabeller.from_config(cfg)
        )

    def invented(self, blueprint: Blueprint) -> dict[str, Factor]:
        """The labelled factors (invented by the Reflector) ``blueprint`` selects, by name."""
        return invented_in(blueprint, {*self.contract.factors, *REALIZABLE}, self.spaces)

    # ---------------------------------------------------------------- Generator

    def prompt(self, blueprint: Blueprint, seed: int) -> str:
        """The one prompt for ``blueprint``, grounded and defined as the LLM Generator's.

        It shows the records the Generator's prompt shows for the same blueprint and ``seed``,
        how amounts add up, and every requested factor defined by the same contract
        (:meth:`~evosyn.agents.generator.contract.Contract.definitions`; an invented factor by
        its definition, with its value asked for), and asks for the conversation as well.
        """
        tools = [
            {
                "name": spec.name,
                "description": spec.openai_schema.get("function", {}).get("description", ""),
                "parameters": json.dumps(spec.parameters.get("properties", {}), sort_keys=True),
            }
            for spec in self.domain.tool_specs("assistant")
        ]
        invented = self.invented(blueprint)
        return render(
            TEMPLATES,
            "single_agent.j2",
            domain=self.domain.name,
            policy=self.domain.policy(),
            tools=tools,
            intent=blueprint.intent,
            requested=requested(blueprint),
            factors=self._definitions(blueprint, invented),
            invented=sorted(invented),
            lacks_id=lacks_id(blueprint),
            **grounding(self.domain, blueprint, seed, self.entities),
        )

    def _definitions(self, blueprint: Blueprint, invented: Mapping[str, Factor]) -> list[str]:
        return definitions(self.domain, blueprint, {**self.contract.factors, **defined(invented)})

    def parse(
        self, data: dict[str, Any], blueprint: Blueprint, screen: Screen | None = None
    ) -> tuple[Proposal, Task]:
        """The checked proposal in ``data`` and its task; ValueError says what is wrong.

        The task is held to the LLM Generator's contract
        (:meth:`~evosyn.agents.generator.contract.Contract.problems`: known tools and
        arguments, the requested factor values realized, gold actions that run on the
        database under the policy; ``unknown_info`` naming an id exactly when
        ``missing_information`` is requested,
        :func:`~evosyn.agents.generator.contract.unknown_info_problem`) and the conversation's
        calls to known tools; every problem
        is named at once (``; ``-separated) so the repair turn can fix them all. Then the
        value stated of each invented factor must be the requested one, read so by the
        labeller. A task ``screen`` stops (it repeats a kept task) is asked again too.
        """
        invented = self.invented(blueprint)
        # Asked for only with an invented factor; elsewhere it is an unknown key like any other.
        stated = data.get("factor_values") if invented else None
        proposal = parse_proposal(
            {k: v for k, v in data.items() if not (invented and k == "factor_values")}
        )
        task = self.task(blueprint, proposal)
        problems = self.contract.problems(task, blueprint)
        lacking = unknown_info_problem(task, blueprint)
        if lacking is not None:
            problems.append(lacking)
        problems += conversation_problems(proposal, self.domain)
        if problems:
            raise ValueError("; ".join(problems))
        if invented:
            check_stated(task, blueprint, invented, stated, self.labeller)
        reason = screen(task) if screen else None
        if reason is not None:
            raise ValueError(f"{reason}; propose a different task")
        return proposal, task

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """Ask for a proposal and return its task; GeneratorRejection on unusable output.

        Invalid output gets the one repair turn every LLM role has (the error quoted, the
        whole answer asked again), as the modular Generator's does; synthesis then screens
        the task against the official tasks (contamination) like any other.

        Raises:
            GeneratorRejection: the output stayed invalid after the repair turn (it does not
                parse, names unknown tools or arguments, its gold actions miss the requested
                values or fail on the database or the policy, or it repeats a kept task), or
                the model call failed for good.
        """
        try:
            proposal, task = ask_json(
                self.gateway,
                self.prompt(blueprint, seed),
                lambda data: self.parse(data, blueprint, screen),
                seed=seed,
            )
        except OutputRejected as exc:
            raise GeneratorRejection(f"single-agent output rejected: {exc.reason}") from None
        except LLMError as exc:
            raise GeneratorRejection(f"model call failed: {exc.error_class}") from exc
        with self._lock:
            self._proposals[task.id] = proposal
            while len(self._proposals) > self._cache_size:
                self._proposals.popitem(last=False)
        return SynthTask(
            campaign_id=blueprint.campaign_id,
            round=blueprint.round,
            task_id=task.id,
            blueprint_id=blueprint.blueprint_id,
            domain=self.domain.name,
            task=task,
            requested={k: list(v) for k, v in blueprint.selections.items()},
            generator=self.name,
        )

    def task(self, blueprint: Blueprint, proposal: Proposal) -> Task:
        """The τ²-bench task of a proposal."""
        return proposal.task.to_task(f"{blueprint.blueprint_id}-task", self.domain.name)

    # ---------------------------------------------------------------- Teacher

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        """The conversation proposed with ``task``, its tool calls run for real observations.

        The monolithic agent has no Repair step: a later attempt returns the same proposal.

        Raises:
            KeyError: this synthesizer did not generate ``task``.
        """
        with self._lock:
            proposal = self._proposals.get(task.task_id)
        if proposal is None:
            raise KeyError(f"no single-agent proposal for task {task.task_id!r}")
        return Trajectory(
            campaign_id=task.campaign_id,
            round=task.round,
            trajectory_id=f"{task.task_id}-traj{attempt}",
            task_id=task.task_id,
            messages=self.messages(task.task, proposal),
            teacher=self.name,
            attempt=attempt,
        )

    def messages(self, task: Task, proposal: Proposal) -> list[Message]:
        """The proposal's conversation with each tool call executed on the task's initial state."""
        state = self.domain.initial_state(task)
        messages: list[Message] = [SystemMessage(role="system", content=self.domain.policy())]
        for turn in proposal.conversation:
            if turn.tool_call is not None:
                call = ToolCall(
                    id=f"call_{len(messages)}",
                    name=turn.tool_call.name,
                    arguments=json.loads(json.dumps(turn.tool_call.arguments)),
                    requestor="assistant",
                )
                messages.append(AssistantMessage(role="assistant", tool_calls=[call]))
                messages.append(self.domain.execute(state, call))
            elif turn.role == "user":
                messages.append(UserMessage(role="user", content=turn.content))
            else:
                messages.append(AssistantMessage(role="assistant", content=turn.content))
        for index, message in enumerate(messages):
            message.turn_idx = index
            message.timestamp = None
        return messages


class ProgrammaticSingleAgent:
    """The monolithic ablation with no model: one agent grounds a blueprint and acts it out.

    The domain's programmatic Generator and teacher under one name and, like
    :class:`SingleAgentSynthesizer`, without a Repair step: a later rollout attempt returns the
    first one, so a slip the Verifier rejects stays rejected. It lets an offline experiment
    (simulated learner) run the single-agent arm; it measures the loss of the role split's
    Repair and nothing of a model's skill, which only the LLM arm can.

    Args:
        generator: The domain's programmatic Generator.
        teacher: The domain's programmatic teacher.
    """

    name = "single_agent"

    def __init__(self, generator: Generator, teacher: Teacher) -> None:
        self._generator = generator
        self._teacher = teacher
        # Synthesis asks a single agent for several blueprints at once (threads), as it would
        # a model; the programmatic Generator works on one at a time.
        self._lock = threading.Lock()

    def generate(self, blueprint: Blueprint, seed: int, screen: Screen | None = None) -> SynthTask:
        """The programmatic Generator's task for ``blueprint``, recorded as the single agent's."""
        with self._lock:
            task = self._generator.generate(blueprint, seed, screen)
        return task.model_copy(update={"generator": self.name})

    def rollout(
        self, task: SynthTask, seed: int, attempt: int = 0, previous: Attempt | None = None
    ) -> Trajectory:
        """The first rollout of ``task``, whatever the attempt (no Repair)."""
        first = previous.trajectory if previous is not None else self._teacher.rollout(task, seed)
        return first.model_copy(
            update={
                "trajectory_id": f"{task.task_id}-traj{attempt}",
                "attempt": attempt,
                "teacher": self.name,
            }
        )


def single_agent(cfg: CampaignConfig) -> SingleAgentSynthesizer | ProgrammaticSingleAgent:
    """The ``single_agent`` ablation's one agent, Generator and teacher at once.

    :class:`SingleAgentSynthesizer` when a model is configured for it
    (:func:`~evosyn.agents.generator.base.single_agent_on_model`); otherwise
    :class:`ProgrammaticSingleAgent`, the domain's Generator and teacher (with the programmatic
    teacher's ``mistake_rate``) as one agent, without Repair.
    """
    if single_agent_on_model(cfg):
        return SingleAgentSynthesizer.from_config(cfg)
    plugin = domain_plugin(cfg.campaign.domain)
    return ProgrammaticSingleAgent(
        plugin.generator(), plugin.teacher(mistake_rate=mistake_rate(cfg))
    )
