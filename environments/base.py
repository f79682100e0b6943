"""The domain contract and its shared implementation on τ²-bench's own environments.

A domain gives its name, its tool schemas (OpenAI function format) with each tool's functional
symbol, its policy text, a fresh initial state, tool execution, its official tasks and splits,
and its initial synthesis space. :class:`Tau2Domain` implements the contract for any τ²-bench
domain from a small :class:`DomainKnowledge` record plus the domain's tau2 module; the databases
are parsed once per process and every state is a cheap copy-on-write view of them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import ToolCall, ToolMessage
from tau2.data_model.tasks import Action, EnvFunctionCall, Task
from tau2.environment.db import DB
from tau2.environment.environment import Environment
from tau2.environment.toolkit import ToolKitBase, ToolType

from evosyn.environments.cow import CowBase, set_read_only, views_equal
from evosyn.environments.tau2_data import source_tasks
from evosyn.records import SynthesisSpace

Requestor = Literal["assistant", "user"]

#: τ²-bench's ``train`` split is EvoSyn's held-out diagnostic set (never training data).
DIAGNOSTIC_SPLIT = "train"
#: τ²-bench's ``test`` split is reserved for final evaluation (never training data).
TEST_SPLIT = "test"


RecordT = TypeVar("RecordT")
DBT = TypeVar("DBT", bound=DB)


def lookup(table: Mapping[str, RecordT], key: object) -> RecordT | None:
    """The record of ``table`` at ``key`` (an id from tool arguments), or None.

    None also when ``key`` is not a string, as no record has such an id.
    """
    return table.get(key) if isinstance(key, str) else None


def objects(value: object) -> list[Mapping[str, object]]:
    """The objects of a JSON array argument (a call's ``flights``...); [] if it is no array."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


class FunctionalSymbol(StrEnum):
    """What a tool call does to the world, in the functional-pattern alphabet."""

    READ = "read"
    WRITE = "write"
    COMPUTE = "compute"
    TRANSFER = "transfer"


class ToolSpec(BaseModel):
    """One tool of a domain: who may call it, its functional symbol and its schema."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Tool name as the model calls it.")
    requestor: Requestor = Field(description="Who calls the tool: the agent or the user.")
    symbol: FunctionalSymbol = Field(description="Functional symbol of the tool.")
    openai_schema: dict[str, Any] = Field(description="OpenAI function-calling schema.")

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments."""
        params: dict[str, Any] = self.openai_schema.get("function", {}).get("parameters", {})
        return params

    # Read in the loops that build every prompt's look-ups: computed once per tool.
    @functools.cached_property
    def required(self) -> frozenset[str]:
        """Names of the arguments the tool requires."""
        return frozenset(self.parameters.get("required", []))

    @functools.cached_property
    def properties(self) -> frozenset[str]:
        """Names of all arguments the tool accepts."""
        return frozenset(self.parameters.get("properties", {}))


class DomainKnowledge(BaseModel):
    """Per-domain facts that τ²-bench does not state but EvoSyn's analyses need."""

    model_config = ConfigDict(extra="forbid")

    transfer_tools: frozenset[str] = Field(
        default=frozenset({"transfer_to_human_agents"}),
        description="Generic tools that hand the conversation over (symbol: transfer).",
    )
    family_by_write: dict[str, str] = Field(
        description="Write tool -> value of the seed ontology's task_family factor."
    )
    family_priority: list[str] = Field(
        description="Task families, most decisive first: picks one family for mixed writes."
    )
    default_family: str = Field(description="Family of a trajectory without mapped writes.")
    entity_keys: frozenset[str] = Field(
        description="Argument names whose values identify entities (users, orders, lines...)."
    )
    generated_id: str | None = Field(
        default=None,
        description="Regex of ids a task's initial state makes up (a new bill's id): two "
        "tasks that differ only in such ids are duplicates.",
    )
    tool_use_patterns: bool = Field(
        default=False,
        description="The seed ontology's tool_use_pattern vocabulary is this domain's, so "
        "realized features derive it (evosyn.environments.features).",
    )


@runtime_checkable
class Domain(Protocol):
    """What EvoSyn needs from a benchmark domain."""

    @property
    def name(self) -> str:
        """Domain name (``airline``, ``retail``, ``telecom``)."""
        ...

    @property
    def knowledge(self) -> DomainKnowledge:
        """Domain facts for feature extraction."""
        ...

    def tool_specs(self, requestor: Requestor | None = None) -> list[ToolSpec]:
        """The domain's tools (all, or only those of one requestor)."""
        ...

    def tool_schemas(self, requestor: Requestor = "assistant") -> list[dict[str, Any]]:
        """OpenAI function schemas of one requestor's tools."""
        ...

    def symbol(self, tool_name: str, requestor: Requestor = "assistant") -> FunctionalSymbol:
        """The functional symbol of a tool; KeyError if unknown."""
        ...

    def policy(self) -> str:
        """The agent policy text."""
        ...

    def initial_state(self, task: Task | None = None, sync: bool = True) -> DomainState:
        """A fresh state, with ``task``'s initialisation data and actions applied."""
        ...

    def execute(self, state: DomainState, call: ToolCall) -> ToolMessage:
        """Run one tool call on ``state`` and return τ²-bench's tool message."""
        ...

    def tasks(self, split: str | None = None) -> list[Task]:
        """Official tasks, all of them or one split's."""
        ...

    def splits(self) -> dict[str, list[str]]:
        """Official splits: split name -> task ids."""
        ...

    def seed_space(self, campaign_id: str, round: int = 0) -> SynthesisSpace:
        """The domain's initial synthesis space O_0."""
        ...


class DomainState:
    """One mutable world of a domain: a τ²-bench environment over copy-on-write databases."""

    def __init__(self, env: Environment, bases: Sequence[CowBase]) -> None:
        self.env = env
        self._bases = tuple(bases)

    @property
    def db(self) -> DB:
        """The agent side's database (the one the assistant's tools act on)."""
        db = _kit(self.env.tools, "agent").db
        if db is None:
            raise ValueError(f"the {self.env.domain_name} agent toolkit has no database")
        return db

    def db_of(self, model: type[DBT]) -> DBT:
        """The agent side's database as the domain's own model.

        Raises:
            TypeError: If the database is not a ``model``.
        """
        db = self.db
        if not isinstance(db, model):
            raise TypeError(f"the database is a {type(db).__name__}, not a {model.__name__}")
        return db

    def execute(self, call: ToolCall) -> ToolMessage:
        """Run a tool call as τ²-bench does during a simulation (errors become messages)."""
        message: ToolMessage = self.env.get_response(call)
        return message

    def execute_gold(self, action: Action) -> None:
        """Run a gold action as τ²-bench's evaluator does: no sync, errors propagate."""
        self.env.make_tool_call(
            tool_name=action.name, requestor=action.requestor, **_copy_args(action.arguments)
        )

    def run_function(self, call: EnvFunctionCall) -> object:
        """Run an initialisation function or assertion on the agent or user side."""
        return self.env.run_env_function_call(call)

    def sync(self) -> None:
        """Let the environment propagate agent-side state to the user side."""
        self.env.sync_tools()  # type: ignore[no-untyped-call]  # tau2 leaves it unannotated

    def same_db(self, other: DomainState) -> bool:
        """True iff τ²-bench's agent and user DB hashes agree between the two states."""
        agent = views_equal(self._bases, _db(self.env.tools), _db(other.env.tools))
        return agent and views_equal(
            self._bases, _db(self.env.user_tools), _db(other.env.user_tools)
        )


def _db(kit: ToolKitBase | None) -> DB | None:
    return None if kit is None else kit.db


def _kit(kit: ToolKitBase | None, side: str) -> ToolKitBase:
    if kit is None:
        raise ValueError(f"the environment has no {side} toolkit")
    return kit


def _copy_args(arguments: dict[str, object]) -> dict[str, object]:
    # Tools must never alias the caller's argument objects (tasks are shared, cached objects).
    copied: dict[str, object] = json.loads(json.dumps(arguments))
    return copied


def _install_read_mode(kit: ToolKitBase, read_tools: frozenset[str]) -> None:
    """Make READ tools of ``kit`` read shared records without copying them."""
    original = kit.use_tool

    def use_tool(tool_name: str, **kwargs: object) -> str:
        previous = set_read_only(kit.db, tool_name in read_tools)
        try:
            return original(tool_name=tool_name, **kwargs)
        finally:
            set_read_only(kit.db, previous)

    kit.use_tool = use_tool  # type: ignore[method-assign]  # this toolkit only


class Tau2Domain:
    """The domain contract on a τ²-bench domain package.

    Args:
        name: Domain name.
        knowledge: Domain facts for feature extraction.
        load_dbs: Parses the agent database and the user database (or None).
        make_env: Builds a tau2 environment from an agent and a user database.
        load_tasks: Parses every official task (``tasks.json``), unless ``TAU2_DATA_DIR`` names
            a τ²-bench checkout whose tasks replace them (:mod:`~evosyn.environments.tau2_data`).
        load_splits: Reads ``split_tasks.json``.
    """

    def __init__(
        self,
        name: str,
        knowledge: DomainKnowledge,
        load_dbs: Callable[[], tuple[BaseModel, BaseModel | None]],
        make_env: Callable[[Any, Any], Environment],
        load_tasks: Callable[[], list[Task]],
        load_splits: Callable[[], dict[str, list[str]]],
    ) -> None:
        self._name = name
        self._knowledge = knowledge
        self._load_dbs = load_dbs
        self._make_env = make_env
        self._load_tasks = load_tasks
        self._load_splits = load_splits

    @property
    def name(self) -> str:
        """Domain name."""
        return self._name

    @property
    def knowledge(self) -> DomainKnowledge:
        """Domain facts for feature extraction."""
        return self._knowledge

    # ---------------------------------------------------------------- parsed once per process

    @functools.cached_property
    def _bases(self) -> tuple[CowBase, CowBase | None]:
        agent_db, user_db = self._load_dbs()
        return CowBase(agent_db), None if user_db is None else CowBase(user_db)

    @functools.cached_property
    def _specs(self) -> dict[tuple[Requestor, str], ToolSpec]:
        env = self._fresh_env()
        specs: dict[tuple[Requestor, str], ToolSpec] = {}
        kits: list[tuple[Requestor, ToolKitBase | None]] = [
            ("assistant", env.tools),
            ("user", env.user_tools),
        ]
        for requestor, kit in kits:
            if kit is None:
                continue
            for tool_name, tool in kit.get_tools().items():
                specs[(requestor, tool_name)] = ToolSpec(
                    name=tool_name,
                    requestor=requestor,
                    symbol=self._symbol_of(tool_name, kit.tool_type(tool_name)),
                    openai_schema=tool.openai_schema,
                )
        return specs

    @functools.cached_property
    def _read_tools(self) -> dict[Requestor, frozenset[str]]:
        out: dict[Requestor, frozenset[str]] = {}
        for requestor in ("assistant", "user"):
            out[requestor] = frozenset(
                s.name
                for (r, _), s in self._specs.items()
                if r == requestor and s.symbol == FunctionalSymbol.READ
            )
        return out

    @functools.cached_property
    def _policy(self) -> str:
        policy: str = self._fresh_env().get_policy()
        return policy

    @functools.cached_property
    def _all_tasks(self) -> list[Task]:
        # A τ²-bench checkout named by TAU2_DATA_DIR replaces the packaged tasks (and only them).
        checkout = source_tasks(self._name)
        return self._load_tasks() if checkout is None else checkout

    @functools.cached_property
    def _splits(self) -> dict[str, list[str]]:
        splits = dict(self._load_splits() or {})
        # Older task sets have no "base" split: it then means every official task.
        splits.setdefault("base", [t.id for t in self._all_tasks])
        return splits

    def _symbol_of(self, tool_name: str, tool_type: ToolType) -> FunctionalSymbol:
        if tool_type == ToolType.READ:
            return FunctionalSymbol.READ
        if tool_type == ToolType.WRITE:
            return FunctionalSymbol.WRITE
        if tool_name in self._knowledge.transfer_tools:
            return FunctionalSymbol.TRANSFER
        return FunctionalSymbol.COMPUTE

    def _fresh_env(self) -> Environment:
        agent_base, user_base = self._bases
        env = self._make_env(agent_base.view(), None if user_base is None else user_base.view())
        return env

    # ---------------------------------------------------------------- the contract

    def tool_specs(self, requestor: Requestor | None = None) -> list[ToolSpec]:
        """The domain's tools (all, or only those of one requestor)."""
        return [s for (r, _), s in self._specs.items() if requestor is None or r == requestor]

    def tool_schemas(self, requestor: Requestor = "assistant") -> list[dict[str, Any]]:
        """OpenAI function schemas of one requestor's tools."""
        return [s.openai_schema for s in self.tool_specs(requestor)]

    def tool_spec(self, tool_name: str, requestor: Requestor = "assistant") -> ToolSpec | None:
        """The spec of one tool, or None when the requestor has no such tool."""
        return self._specs.get((requestor, tool_name))

    def symbol(self, tool_name: str, requestor: Requestor = "assistant") -> FunctionalSymbol:
        """The functional symbol of a tool; KeyError if the requestor has no such tool."""
        spec = self.tool_spec(tool_name, requestor)
        if spec is None:
            raise KeyError(f"{self._name} has no {requestor} tool {tool_name!r}")
        return spec.symbol

    def policy(self) -> str:
        """The agent policy text."""
        return self._policy

    def blank_state(self) -> DomainState:
        """A fresh state of the unmodified databases (no task applied, nothing synced)."""
        env = self._fresh_env()
        read_tools = self._read_tools
        if env.tools is not None:
            _install_read_mode(env.tools, read_tools["assistant"])
        if env.user_tools is not None:
            _install_read_mode(env.user_tools, read_tools["user"])
        bases = [b for b in self._bases if b is not None]
        return DomainState(env, bases)

    def initial_state(self, task: Task | None = None, sync: bool = True) -> DomainState:
        """A fresh state with ``task``'s initialisation data and actions applied.

        Args:
            task: The task whose ``initial_state`` to apply (None: the plain databases).
            sync: Sync the user side at the end, as a simulation's start does. τ²-bench's
                evaluator does not sync before replaying, so the verifier passes False.

        Raises:
            Exception: Whatever the task's initialisation raises.
        """
        state = self.blank_state()
        initial = task.initial_state if task is not None else None
        if initial is not None and initial.initialization_data is not None:
            data = initial.initialization_data
            if data.agent_data is not None:
                _kit(state.env.tools, "agent").update_db(data.agent_data)
            if data.user_data is not None:
                _kit(state.env.user_tools, "user").update_db(data.user_data)
        if initial is not None and initial.initialization_actions is not None:
            for call in initial.initialization_actions:
                state.run_function(call)
        if sync:
            state.sync()
        return state

    def execute(self, state: DomainState, call: ToolCall) -> ToolMessage:
        """Run one tool call on ``state`` and return τ²-bench's tool message."""
        return state.execute(call)

    def tasks(self, split: str | None = None) -> list[Task]:
        """Official tasks in ``tasks.json`` order: all of them, or one split's.

        Raises:
            ValueError: If ``split`` is not one of :meth:`splits`.
        """
        if split is None:
            return list(self._all_tasks)
        splits = self._splits
        if split not in splits:
            raise ValueError(f"unknown split {split!r} for {self._name}; known: {sorted(splits)}")
        wanted = set(splits[split])
        return [t for t in self._all_tasks if t.id in wanted]

    def task(self, task_id: str) -> Task:
        """One official task by id; KeyError if there is none."""
        for t in self._all_tasks:
            if t.id == task_id:
                return t
        raise KeyError(f"{self._name} has no task {task_id!r}")

    def splits(self) -> dict[str, list[str]]:
        """Official splits: split name -> task ids (``base`` is always present)."""
        return {k: list(v) for k, v in self._splits.items()}

    def diagnostic_tasks(self) -> list[Task]:
        """The held-out diagnostic set (τ²-bench's ``train`` split)."""
        return self.tasks(DIAGNOSTIC_SPLIT)

    def test_tasks(self) -> list[Task]:
        """The final-evaluation set (τ²-bench's ``test`` split)."""
        return self.tasks(TEST_SPLIT)

    def seed_space(self, campaign_id: str, round: int = 0) -> SynthesisSpace:
        """The domain's initial synthesis space O_0 (the paper's seed ontology)."""
        from evosyn.space import seed_space

        return seed_space(self._name, campaign_id, round=round)
