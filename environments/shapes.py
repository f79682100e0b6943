"""The shapes of tasks' gold, synthesized beside τ²-bench's official ones (issue 31).

A task's shape is read from its gold actions and, in telecom, from the calls that set its
initial state up, so an official task and a synthesized one are read alike:

* **write combination**: the set of write tools the agent's gold calls (the empty set for a
  task that writes nothing); a task with two or more kinds of write is **multi-write**;
* **user-device tool set**: the set of write tools the user's own gold calls (telecom's
  phone: the fixes; official gold lists no check, so the checks are left out of the set);
* **fault kinds** (telecom): τ²-bench's fault kinds the task sets up
  (:func:`evosyn.environments.telecom.faults.fault_kinds`); a task with a fault on the phone
  or the line is **troubleshooting**.

:func:`task_shapes` tallies them over tasks, :func:`official_shapes` over the domain's
official ``base`` split, and :func:`coverage` compares the two: what ``evosyn audit``, the
report, the dataset card and ``tests/benchmarks/task_shapes.py`` print.

The same reading gives the realized value of each candidate factor a domain's ontology
declares (:func:`shape_values`), so a requested ``write_mix``, ``trip_shape``,
``payment_split`` or ``fault_kind`` counts only where the gold made it:

* ``write_mix``: ``no_write``, ``one_kind`` or ``several_kinds`` by the write combination;
* ``trip_shape`` (airline): the first new booking's, ``round_trip`` by its flight type, else
  ``connection`` with two flights or more, else ``one_way`` (none: no booking);
* ``payment_split`` (airline): ``certificate_and_card`` where some booking pays with a
  certificate and another method, else ``gift_card_and_card`` with a gift card and another,
  else ``single_method`` (none: no booking);
* ``fault_kind`` (telecom): every fault kind the task sets up, under the realized key
  ``fault_kinds`` (a task may compose several; a requested one counts if it is among them).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.tasks import Task

from evosyn.environments.base import FunctionalSymbol
from evosyn.environments.registry import domain_plugin, get_domain

#: The official split synthesized shapes are compared with (τ²-bench's test tasks).
OFFICIAL_SPLIT = "base"
#: How an empty write combination and an empty user-device tool set read in a table.
NO_WRITE = "(no write)"
NO_DEVICE_ACTION = "(no device action)"


def gold_actions(task: Task) -> list[tuple[str, str]]:
    """(requestor, tool) of every gold action of ``task``, in order."""
    actions = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
    return [(str(a.requestor), a.name) for a in actions]


def write_combination(domain: str, task: Task) -> frozenset[str]:
    """The write tools the agent's gold calls in ``task`` (empty: it writes nothing)."""
    env = get_domain(domain)
    return frozenset(
        name
        for requestor, name in gold_actions(task)
        if requestor == "assistant"
        and env.tool_spec(name, "assistant") is not None
        and env.symbol(name) == FunctionalSymbol.WRITE
    )


def device_tools(domain: str, task: Task) -> frozenset[str]:
    """The write tools the user's own gold calls in ``task`` (fixes on the phone, in telecom)."""
    env = get_domain(domain)
    return frozenset(
        name
        for requestor, name in gold_actions(task)
        if requestor == "user"
        and env.tool_spec(name, "user") is not None
        and env.symbol(name, "user") == FunctionalSymbol.WRITE
    )


def _write_mix(domain: str, task: Task) -> str | None:
    kinds = len(write_combination(domain, task))
    return "no_write" if kinds == 0 else "one_kind" if kinds == 1 else "several_kinds"


def _bookings(task: Task) -> list[dict[str, Any]]:
    actions = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
    return [a.arguments for a in actions if a.name == "book_reservation"]


def _trip_shape(domain: str, task: Task) -> str | None:
    bookings = _bookings(task)
    if not bookings:
        return None
    first = bookings[0]
    if first.get("flight_type") == "round_trip":
        return "round_trip"
    return "connection" if len(first.get("flights") or []) >= 2 else "one_way"


def _payment_split(domain: str, task: Task) -> str | None:
    bookings = _bookings(task)
    if not bookings:
        return None
    # τ²-bench's airline payment ids name their kind: "certificate_7504069".
    splits = [
        {str(p["payment_id"]).rsplit("_", 1)[0] for p in b.get("payment_methods") or []}
        for b in bookings
        if len(b.get("payment_methods") or []) >= 2
    ]
    if any("certificate" in kinds for kinds in splits):
        return "certificate_and_card"
    if any("gift_card" in kinds for kinds in splits):
        return "gift_card_and_card"
    return "single_method"


def _fault_kinds(domain: str, task: Task) -> str | None:
    from evosyn.environments.telecom import faults

    return ";".join(faults.fault_kinds(task)) or "none"


#: Candidate factor -> (its realized key, the reader of a task's value; None: not shown).
_SHAPE_READERS: dict[str, tuple[str, Callable[[str, Task], str | None]]] = {
    "write_mix": ("write_mix", _write_mix),
    "trip_shape": ("trip_shape", _trip_shape),
    "payment_split": ("payment_split", _payment_split),
    "fault_kind": ("fault_kinds", _fault_kinds),
}
#: Candidate factors whose realized key lists several values, separated by ';'.
SHAPE_SET_KEYS = {"fault_kind": "fault_kinds"}


def shape_values(domain: str, task: Task) -> dict[str, str]:
    """The realized values, read from ``task``'s gold, of the candidate factors of ``domain``.

    Keyed like ``Verification.realized`` (a set-valued factor by its key in
    :data:`SHAPE_SET_KEYS`); a factor the task cannot show (the trip of a task that books
    nothing) is left out.
    """
    declared = domain_plugin(domain).realizable
    out = {}
    for factor, (key, read) in _SHAPE_READERS.items():
        if factor in declared:
            value = read(domain, task)
            if value is not None:
                out[key] = value
    return out


def shape_match(factor: str, value: str, realized: Mapping[str, str]) -> bool | None:
    """Whether ``realized`` (:func:`shape_values`) shows ``factor=value``; None: not shown."""
    key = SHAPE_SET_KEYS.get(factor, factor)
    if key not in realized:
        return None
    if factor in SHAPE_SET_KEYS:
        return value in realized[key].split(";")
    return realized[key] == value


def _telecom_kinds() -> tuple[Callable[[Task], list[str]], frozenset[str]]:
    from evosyn.environments.telecom import faults

    return faults.fault_kinds, frozenset(faults.FAULTS) | frozenset(faults.ACCOUNT_FAULTS)


#: Per domain with fault kinds: (the reader of a task's kinds, the kinds that make a task a
#: troubleshooting one). Only telecom composes its tasks from faults.
_FAULT_READERS: dict[str, Callable[[], tuple[Callable[[Task], list[str]], frozenset[str]]]] = {
    "telecom": _telecom_kinds,
}


@dataclass(frozen=True)
class TaskShapes:
    """The shapes of a set of tasks' gold, tallied."""

    #: Tasks read.
    n: int
    #: Every tool some gold calls (the agent's and the user's).
    tools: frozenset[str]
    #: Write combination -> tasks with it.
    combinations: Counter[frozenset[str]]
    #: Tasks with two or more kinds of write.
    multi_write: int
    #: User-device tool set -> tasks with it (the empty set for tasks without user actions).
    device_sets: Counter[frozenset[str]]
    #: User actions in all the gold (checks included), counted per call.
    device_actions: int
    #: Fault kind -> tasks setting it up (empty where the domain has no fault kinds).
    fault_kinds: Counter[str] = field(default_factory=Counter)
    #: Tasks with a fault on the phone or the line (0 where the domain has no fault kinds).
    troubleshooting: int = 0


def task_shapes(domain: str, tasks: Iterable[Task]) -> TaskShapes:
    """The shapes of ``tasks``' gold in ``domain``, tallied."""
    tasks = list(tasks)
    combinations = Counter(write_combination(domain, t) for t in tasks)
    reader = _FAULT_READERS.get(domain)
    kinds: Counter[str] = Counter()
    trouble = 0
    if reader is not None:
        read, troubling = reader()
        for task in tasks:
            found = read(task)
            kinds.update(found)
            trouble += bool(set(found) & troubling)
    return TaskShapes(
        n=len(tasks),
        tools=frozenset(name for t in tasks for _, name in gold_actions(t)),
        combinations=combinations,
        multi_write=sum(n for combo, n in combinations.items() if len(combo) >= 2),
        device_sets=Counter(device_tools(domain, t) for t in tasks),
        device_actions=sum(1 for t in tasks for r, _ in gold_actions(t) if r == "user"),
        fault_kinds=kinds,
        troubleshooting=trouble,
    )


@functools.cache
def official_shapes(domain: str) -> TaskShapes:
    """The shapes of ``domain``'s official tasks of the :data:`OFFICIAL_SPLIT` split."""
    return task_shapes(domain, get_domain(domain).tasks(OFFICIAL_SPLIT))


def combination_name(combination: frozenset[str], empty: str = NO_WRITE) -> str:
    """A set of tools as a table reads it: sorted, joined by ``+``; ``empty`` for none."""
    return " + ".join(sorted(combination)) or empty


class ShapeCount(BaseModel):
    """One kind of shape: the distinct ones official and synthesized, and the official unmade."""

    model_config = ConfigDict(extra="forbid")

    official: int = Field(ge=0, description="Distinct shapes among the official tasks.")
    synthesized: int = Field(ge=0, description="Distinct shapes among the synthesized tasks.")
    made: int = Field(ge=0, description="Official shapes some synthesized task has.")
    never_made: list[str] = Field(
        default_factory=list, description="Official shapes no synthesized task has, sorted."
    )

    def __str__(self) -> str:
        return f"{self.synthesized} synthesized / {self.official} official, {self.made} made"


def _count(official: Iterable[str], synthesized: Iterable[str]) -> ShapeCount:
    off, syn = set(official), set(synthesized)
    return ShapeCount(
        official=len(off),
        synthesized=len(syn),
        made=len(off & syn),
        never_made=sorted(off - syn),
    )


class ShapeCoverage(BaseModel):
    """The shapes of synthesized tasks against the official ``base`` split's, in one domain."""

    model_config = ConfigDict(extra="forbid")

    tasks: int = Field(ge=0, description="Synthesized tasks read (the verified ones).")
    official_tasks: int = Field(ge=0, description="Official tasks of the base split.")
    tools_never_made: list[str] = Field(
        default_factory=list, description="Tools official gold calls and synthesized never does."
    )
    write_combinations: ShapeCount = Field(description="Sets of write tools a gold calls.")
    multi_write: int = Field(ge=0, description="Synthesized tasks with >= 2 kinds of write.")
    official_multi_write: int = Field(ge=0, description="The same among the official tasks.")
    device_tool_sets: ShapeCount | None = Field(
        default=None,
        description="Sets of write tools the user's gold calls on the device; None where "
        "no official gold has a user write.",
    )
    device_actions: int = Field(
        default=0, ge=0, description="User actions (checks included) in synthesized gold."
    )
    official_device_actions: int = Field(
        default=0, ge=0, description="User actions in official gold."
    )
    fault_kinds: ShapeCount | None = Field(
        default=None, description="τ²-bench fault kinds set up; None where the domain has none."
    )
    troubleshooting: int = Field(
        default=0, ge=0, description="Synthesized tasks with a fault on the phone or the line."
    )
    official_troubleshooting: int = Field(
        default=0, ge=0, description="The same among the official tasks."
    )


def coverage(domain: str, tasks: Sequence[Task]) -> ShapeCoverage:
    """The shapes of ``tasks`` in ``domain`` against the official base split's."""
    made, official = task_shapes(domain, tasks), official_shapes(domain)
    has_device = any(official.device_sets.keys() - {frozenset()})
    has_faults = domain in _FAULT_READERS
    return ShapeCoverage(
        tasks=made.n,
        official_tasks=official.n,
        tools_never_made=sorted(official.tools - made.tools),
        write_combinations=_count(
            map(combination_name, official.combinations), map(combination_name, made.combinations)
        ),
        multi_write=made.multi_write,
        official_multi_write=official.multi_write,
        device_tool_sets=_count(
            (combination_name(s, NO_DEVICE_ACTION) for s in official.device_sets),
            (combination_name(s, NO_DEVICE_ACTION) for s in made.device_sets),
        )
        if has_device
        else None,
        device_actions=made.device_actions,
        official_device_actions=official.device_actions,
        fault_kinds=_count(official.fault_kinds, made.fault_kinds) if has_faults else None,
        troubleshooting=made.troubleshooting,
        official_troubleshooting=official.troubleshooting,
    )
