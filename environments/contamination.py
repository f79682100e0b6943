"""Decontamination against a domain's official τ²-bench tasks (every split, train and test).

A synthesized task is contaminated when training on it could teach an official task's answer:

* **decisive signature**: its gold actions make the same ordered decisive (write, compute,
  transfer) calls on the same set of entities as an official task's;
* **gold write**: one of its gold writes (tool and arguments, naming an entity) is a gold
  write of an official task, e.g. the very cancellation official test task 19 expects;
* **write set**: its set of gold writes equals an official task's (caught by the rule above
  whenever the set is non-empty; kept apart so a reason names the stronger overlap);
* **instructions**: its user instructions are a near-duplicate of an official task's, by
  Jaccard similarity of word 3-shingles estimated with MinHash (``datasketch``) at or above
  :data:`NEAR_DUPLICATE_JACCARD`.

Reads, ``calculate`` calls and their order do not matter, so one extra look-up no longer lets
a copy through.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from tau2.data_model.tasks import Task

from evosyn.environments.base import FunctionalSymbol, Tau2Domain
from evosyn.environments.registry import get_domain
from evosyn.records import SynthTask

if TYPE_CHECKING:
    # datasketch's LSH imports scipy (a second of start-up): the processes that import this
    # module without indexing anything (training, evaluation, most CLI commands) skip it.
    from datasketch import MinHash

#: Estimated Jaccard similarity of instruction shingles at which two tasks are near-duplicates.
NEAR_DUPLICATE_JACCARD = 0.6
_PERMUTATIONS = 128
_WORD = re.compile(r"[a-z0-9]+")
#: Calls that decide a task's outcome: what the decisive signature compares.
DECISIVE = (FunctionalSymbol.WRITE, FunctionalSymbol.COMPUTE, FunctionalSymbol.TRANSFER)
#: Decisive tool sequence and entity set of a task's gold actions.
Signature = tuple[tuple[str, ...], frozenset[tuple[str, str]]]


def collect_entities(value: object, keys: frozenset[str], out: set[tuple[str, str]]) -> None:
    """Add every (key, id) pair of ``value`` (nested dicts and lists) whose key is in ``keys``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str | int) and not isinstance(item, bool):
                out.add((key, str(item)))
            collect_entities(item, keys, out)
    elif isinstance(value, list):
        for item in value:
            collect_entities(item, keys, out)


def signature(domain: Tau2Domain, task: Task) -> Signature:
    """Decisive tool sequence and entity set of ``task``'s gold actions."""
    criteria = task.evaluation_criteria
    decisive: list[str] = []
    entities: set[tuple[str, str]] = set()
    keys = domain.knowledge.entity_keys
    for action in (criteria.actions if criteria else None) or []:
        spec = domain.tool_spec(action.name, action.requestor)
        if spec is not None and spec.symbol in DECISIVE:
            who = "user/" if action.requestor == "user" else ""
            decisive.append(f"{spec.symbol.value}:{who}{action.name}")
        collect_entities(action.arguments, keys, entities)
    return tuple(decisive), frozenset(entities)


def write_key(name: str, arguments: Mapping[str, object]) -> str:
    """A write call as one comparable string (argument order does not matter)."""
    return f"{name}({json.dumps(arguments, sort_keys=True, default=str)})"


def gold_writes(domain: Tau2Domain, task: Task) -> frozenset[str]:
    """The gold write calls of ``task`` that name an entity, as :func:`write_key` strings.

    A write on no entity (telecom's ``toggle_data()`` on the user's phone) is a generic fix
    every task of its kind shares, not an answer that could leak.
    """
    criteria = task.evaluation_criteria
    writes: set[str] = set()
    for action in (criteria.actions if criteria else None) or []:
        if domain.symbol(action.name, action.requestor) != FunctionalSymbol.WRITE:
            continue
        entities: set[tuple[str, str]] = set()
        collect_entities(action.arguments, domain.knowledge.entity_keys, entities)
        if entities:
            writes.add(write_key(action.name, action.arguments))
    return frozenset(writes)


def instruction_text(task: Task) -> str:
    """Everything the user simulator is told: reason, known and unknown info, instructions."""
    scenario = task.user_scenario.instructions
    if isinstance(scenario, str):
        return scenario
    parts = (
        scenario.reason_for_call,
        scenario.known_info,
        scenario.unknown_info,
        scenario.task_instructions,
    )
    return "\n".join(p for p in parts if p)


def shingles(text: str, size: int = 3) -> set[str]:
    """Lower-cased word ``size``-grams of ``text`` (the whole text when it is shorter)."""
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return {" ".join(words)}
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


@functools.cache
def _template() -> MinHash:
    from datasketch import MinHash

    # The seed's permutations, drawn once: a new MinHash draws them again each time.
    return MinHash(num_perm=_PERMUTATIONS, seed=1)


# A task's instructions are hashed several times on their way (the Generator's screen, the
# synthesis step's own check, keeping it, a worker's copy of the index): the signature is
# only read, so the recent ones are kept.
@functools.lru_cache(maxsize=4096)
def minhash(text: str) -> MinHash:
    """The MinHash signature of ``text``'s shingles (fixed seed: stable across processes).

    Shared between callers: read it, never update it.
    """
    from datasketch import MinHash

    template = _template()
    signature = MinHash(
        num_perm=_PERMUTATIONS,
        seed=1,
        permutations=template.permutations,
        scheme=template.scheme,
    )
    signature.update_batch([s.encode() for s in shingles(text)])
    return signature


class NearDuplicates:
    """A MinHash LSH index of instruction texts, queried for near-duplicates of a new one."""

    def __init__(self, threshold: float = NEAR_DUPLICATE_JACCARD) -> None:
        from datasketch import MinHashLSH

        self._index = MinHashLSH(threshold=threshold, num_perm=_PERMUTATIONS)
        self._signatures: dict[str, MinHash] = {}
        self.threshold = threshold

    def add(self, key: str, text: str) -> None:
        """Index ``text`` under ``key`` (a key seen before is ignored)."""
        if key in self._signatures:
            return
        signature = minhash(text)
        self._signatures[key] = signature
        self._index.insert(key, signature)

    def match(self, text: str) -> tuple[str, float] | None:
        """The most similar indexed key at or above the threshold, with its estimated Jaccard."""
        signature = minhash(text)
        best: tuple[str, float] | None = None
        # LSH answers a set, whose order follows the hash seed: on a tie the smallest key wins,
        # so a rejection names the same kept task in every run.
        for key in sorted(self._index.query(signature)):
            score = signature.jaccard(self._signatures[key])
            if score >= self.threshold and (best is None or score > best[1]):
                best = (key, score)
        return best


class OfficialIndex:
    """The official tasks of one domain, indexed for :meth:`reason`."""

    def __init__(self, domain: Tau2Domain) -> None:
        self.domain = domain

    @functools.cached_property
    def _signatures(self) -> dict[Signature, str]:
        index: dict[Signature, str] = {}
        for task in self.domain.tasks():
            index.setdefault(signature(self.domain, task), task.id)
        return index

    @functools.cached_property
    def _writes(self) -> dict[str, str]:
        owner: dict[str, str] = {}
        for task in self.domain.tasks():
            for key in gold_writes(self.domain, task):
                owner.setdefault(key, task.id)
        return owner

    @functools.cached_property
    def _write_sets(self) -> dict[frozenset[str], str]:
        sets: dict[frozenset[str], str] = {}
        for task in self.domain.tasks():
            writes = gold_writes(self.domain, task)
            if writes:
                sets.setdefault(writes, task.id)
        return sets

    @functools.cached_property
    def _instructions(self) -> NearDuplicates:
        index = NearDuplicates()
        for task in self.domain.tasks():
            index.add(task.id, instruction_text(task))
        return index

    def reason(self, task: Task) -> str | None:
        """Why ``task`` is contaminated by an official task, or None when it is not."""
        name = self.domain.name
        decisive = signature(self.domain, task)
        # A task on no entity at all (no gold actions) says nothing a signature could leak.
        if decisive[1] and decisive in self._signatures:
            shown = " > ".join(decisive[0]) or "read-only"
            return (
                f"decisive signature of official {name} task {self._signatures[decisive]} "
                f"({shown} on {sorted(v for _, v in decisive[1])})"
            )
        writes = gold_writes(self.domain, task)
        if writes and writes in self._write_sets:
            return f"write set equals official {name} task {self._write_sets[writes]}'s"
        for key in sorted(writes):
            if key in self._writes:
                return f"gold write {key} is official {name} task {self._writes[key]}'s"
        match = self._instructions.match(instruction_text(task))
        if match is not None:
            return (
                f"instructions near-duplicate official {name} task {match[0]}'s "
                f"(Jaccard {match[1]:.2f} >= {self._instructions.threshold})"
            )
        return None

    def hits(self, tasks: Iterable[Task]) -> dict[str, int]:
        """How many of ``tasks`` are contaminated, by kind of overlap."""
        kinds = {"decisive signature": 0, "write set": 0, "gold write": 0, "instructions": 0}
        for task in tasks:
            reason = self.reason(task)
            if reason is not None:
                kinds[next(k for k in kinds if reason.startswith(k))] += 1
        return kinds


@functools.cache
def official_index(domain: str) -> OfficialIndex:
    """The shared index of ``domain``'s official tasks."""
    return OfficialIndex(get_domain(domain))


def contamination_reason(task: SynthTask | Task, domain: str | None = None) -> str | None:
    """Why ``task`` overlaps an official task of its domain, or None (see the module doc)."""
    if isinstance(task, SynthTask):
        return official_index(task.domain).reason(task.task)
    if domain is None:
        raise ValueError("a bare τ²-bench task needs its domain")
    return official_index(domain).reason(task)
