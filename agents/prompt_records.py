"""The domain's records a prompt shows, and what the agent's searches return on them."""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tau2.data_model.message import ToolCall, ToolMessage

from evosyn.environments.base import FunctionalSymbol, Tau2Domain, ToolSpec

# Characters of one entity record shown to the Generator: every record of the four domains
# fits whole (a product with all its variants included); a longer one leaves out whole parts.
ENTITY_CHARS = 4000
# Characters of all the records one prompt shows; the furthest from its people go first.
RECORDS_CHARS = 40000
# Searches shown to the Generator, and the characters of each one's result.
LOOKUPS = 8
LOOKUP_CHARS = 2000


@functools.cache
def _tables(domain: Tau2Domain) -> dict[str, dict[str, str]]:
    """Every DB table as ``{key: record JSON}`` (lists keyed by their first ``*_id`` field)."""
    db = domain.blank_state().db
    tables: dict[str, dict[str, str]] = {}
    for name in type(db).model_fields:
        value = getattr(db, name)
        items: Iterator[tuple[str, Any]]
        if isinstance(value, Mapping):
            items = ((str(k), v) for k, v in value.items())
        elif isinstance(value, Sequence) and not isinstance(value, str):
            items = ((_key_of(v, i), v) for i, v in enumerate(value))
        else:
            continue
        tables[name] = {
            key: json.dumps(_plain(record), sort_keys=True, separators=(",", ":"))
            for key, record in items
        }
    return tables


def _plain(record: Any) -> Any:
    return record.model_dump(mode="json") if hasattr(record, "model_dump") else record


def _key_of(record: Any, index: int) -> str:
    plain = _plain(record)
    if isinstance(plain, Mapping):
        for key, value in plain.items():
            if key.endswith("_id") and isinstance(value, str):
                return value
    return str(index)


def _strings(text: str) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.add(node)
        elif isinstance(node, Mapping):
            for key, value in node.items():
                found.add(str(key))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(text))
    return found


def _objects(node: Any) -> Iterator[set[str]]:
    """The string values of every mapping in ``node``, one set per mapping.

    The strings of one mapping belong together: a reservation's flight segment names its
    flight number and its date.
    """
    if isinstance(node, Mapping):
        yield {str(v) for v in node.values() if isinstance(v, str)}
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def _focus(node: Any, refs: set[str]) -> Any:
    """``node`` with every mapping of records keyed by referenced dates cut to those dates.

    A flight's ``dates`` map holds a month of dates; a reservation references one or two:
    only theirs (status, seats left, prices) are worth the prompt's room, and the searches
    shown beside the records give the other days. A map keyed by ids is kept whole: a
    product's variants are the options an exchange or an item change picks from, every one
    with its availability and price.
    """
    if isinstance(node, Mapping):
        hits = [k for k in node if str(k) in refs and _DATE.fullmatch(str(k))]
        keep = hits if hits and len(hits) < len(node) and _all_records(node) else list(node)
        return {k: _focus(node[k], refs) for k in keep}
    if isinstance(node, list):
        return [_focus(v, refs) for v in node]
    return node


def _all_records(node: Mapping[Any, Any]) -> bool:
    # A map of records (date -> status), not a record of fields.
    return all(isinstance(v, Mapping) for v in node.values())


def shown_record(record: Any, limit: int = ENTITY_CHARS) -> str:
    """``record`` as compact JSON, plain fields first, whole or with whole parts left out.

    In every mapping the fields holding a plain value (a status, an id, a date, an amount)
    come before the nested ones, so what a task hinges on (an order's ``status``) is read
    first. A record longer than ``limit`` characters is never cut inside its JSON: the last
    items of its longest list or map are left out, one at a time, until it fits, and a note
    after the JSON says in words how many of which field were left out.
    """
    node = _plain_first(record)
    left: dict[str, int] = {}
    text = _compact(node)
    while len(text) > limit and isinstance(node, dict):
        longest = max(
            (k for k, v in node.items() if isinstance(v, (Mapping, list)) and v),
            key=lambda k: len(_compact(node[k])),
            default=None,
        )
        if longest is None:
            break
        value = node[longest]
        node[longest] = value[:-1] if isinstance(value, list) else dict(list(value.items())[:-1])
        left[longest] = left.get(longest, 0) + 1
        text = _compact(node)
    if not left:
        return text
    parts = ", ".join(f"the last {n} of {name}" for name, n in left.items())
    return f"{text} (left out for room: {parts})"


def _plain_first(node: Any) -> Any:
    """``node`` with every mapping's plain fields before its nested ones, each part sorted."""
    if isinstance(node, Mapping):
        nested = [k for k in node if isinstance(node[k], (Mapping, list))]
        plain = [k for k in node if k not in nested]
        return {k: _plain_first(node[k]) for k in [*sorted(plain), *sorted(nested)]}
    if isinstance(node, list):
        return [_plain_first(v) for v in node]
    return node


def _compact(node: Any) -> str:
    return json.dumps(node, separators=(",", ":"))


def _record(domain: Tau2Domain, table: str, key: str) -> dict[str, Any]:
    """The record keyed ``key`` in ``table`` with the fields the agent's look-up of it adds.

    A look-up is a read tool whose one required argument is the record's own id (a field of
    the record holding ``key``, as ``book_id`` does in a title). The fields its answer has and
    the record lacks are what the environment works out from other records (a title's
    ``holds_waiting``, the holds queued for it): a task hinges on them as on the stored ones
    (a renewal refused because a hold waits), and the agent reads them the same way.
    """
    return {**json.loads(_tables(domain)[table][key]), **_looked_up(domain, table, key)[1]}


@functools.cache
def _looked_up(domain: Tau2Domain, table: str, key: str) -> tuple[str, dict[str, Any]]:
    """The look-up of the record keyed ``key``, and what it answers beyond the record.

    The first look-up that answers a record counts (``("", {})``: none). Its values are the
    agent's: τ²-bench's tool message writes every number as a string (``"holds_waiting":
    "2"``).
    """
    record = json.loads(_tables(domain)[table][key])
    if not isinstance(record, Mapping):
        return "", {}
    for spec in domain.tool_specs("assistant"):
        if spec.symbol != FunctionalSymbol.READ or len(spec.required) != 1:
            continue
        [argument] = spec.required
        if record.get(argument) != key:
            continue
        message = _read(domain, ToolCall(id="look-up", name=spec.name, arguments={argument: key}))
        if message.error or not message.content:
            continue
        try:
            answer = json.loads(message.content)
        except json.JSONDecodeError:
            continue  # a plain-text answer adds no fields
        if isinstance(answer, Mapping):
            return spec.name, {name: value for name, value in answer.items() if name not in record}
    return "", {}


def looked_up(domain: Tau2Domain, entities: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    """Per table of the shown records, the fields a look-up adds to them (:func:`_record`).

    Each entry is ``{"table", "tool", "fields"}``, in the order the tables are first shown: a
    prompt says those fields are not stored, and that the agent reads them only from ``tool``.
    """
    added: dict[str, dict[str, Any]] = {}
    for entity in entities:
        tool, fields = _looked_up(domain, entity["table"], entity["key"])
        if fields:
            entry = added.setdefault(entity["table"], {"table": entity["table"], "tool": tool})
            entry["fields"] = sorted({*entry.get("fields", ()), *fields})
    return list(added.values())


def record_maps(entities: Sequence[Mapping[str, str]]) -> list[str]:
    """The kinds of maps of records the shown records hold: ``"ids"``, ``"dates"``, or both.

    A prompt says how each kind is shown (:func:`_focus`): one keyed by ids whole (a
    product's variants), one keyed by dates only on the days the other records use.
    """
    kinds: set[str] = set()
    for entity in entities:
        body = entity["record"].split(" (left out for room: ", 1)[0]
        for part in _parts(json.loads(body)):
            if part and _all_records(part):
                kinds.add("dates" if all(_DATE.fullmatch(str(k)) for k in part) else "ids")
    return sorted(kinds, reverse=True)


def within(
    entities: Sequence[dict[str, str]], limit: int = RECORDS_CHARS
) -> tuple[list[dict[str, str]], list[str]]:
    """The first of ``entities`` that fit in ``limit`` characters, and the rest as names.

    An :func:`~evosyn.agents.prompt_context.entity_sample` lists the people and their own
    records before the records they reference, so what is left out is what lies furthest from
    the people (a product of an order no blueprint fits), and the prompt names it
    (``products 1656367028``) instead of showing a cut record.
    """
    kept: list[dict[str, str]] = []
    used = 0
    for entity in entities:
        used += len(entity["table"]) + len(entity["key"]) + len(entity["record"]) + 4
        if used > limit:
            break
        kept.append(entity)
    return kept, [f"{e['table']} {e['key']}" for e in entities[len(kept) :]]


def lookups(
    domain: Tau2Domain,
    entities: Sequence[Mapping[str, str]],
    prefer: Collection[str] = (),
    limit: int = LOOKUPS,
) -> list[dict[str, str]]:
    """What the agent's searches return on the shown records: the options a task chooses from.

    A search is a read tool that takes arguments but no id (none of the domain's
    ``entity_keys``): a flight search by origin, destination and date. It is called on every
    part of a shown record that holds all its required arguments by name (a reservation's
    flight segment), first on that part's own values, then with a value that keys a map of
    records in a shown record (a flight's dates) moved on to the map's later keys, until a
    call finds something, and once more on the next key: a date change needs flights on a day
    no reservation uses, a booking flights still for sale, a "cheapest or earliest" choice
    every option of one day. Where two of a search's arguments name a route's ends
    (:func:`_route_ends`), a part's route that no shown record travels the other way is searched
    the way back too, from the part's own day until a day with something found: a round-trip
    booking needs flights both ways. A free-text search, one whose single required argument no
    record of the database names (a catalog search by ``query``), is called on the words of the
    shown records instead (:func:`_free_text_calls`). Records keyed in ``prefer`` (the ones a
    blueprint can be carried on) are searched first, and at most ``limit`` calls that find
    something are shown. Each entry is ``{"call", "result"}``: the call as ``name({...})`` and
    the tool's own answer, a list cut to ``LOOKUP_CHARS`` with the number of items left out.
    """
    searches = _searches(domain)
    if not searches or limit <= 0:
        return []
    tables = _tables(domain)
    shown = sorted(
        (e for e in entities if e["key"] in tables.get(e["table"], {})),
        key=lambda e: e["key"] not in prefer,
    )
    views = [_searchable(domain, e["table"], e["key"]) for e in shown]
    # The key sets of the shown records' maps of records (a flight's dates).
    maps = [keys for view in views for keys in view.maps]
    # Per record part, the searches on its own values (a reservation's flight segment).
    own = [calls for view in views for calls in view.own]
    # A date is moved on in many calls of one prompt: its later keys are found once.
    later = functools.cache(functools.partial(_later_keys, maps))
    ends = _route_ends(domain)
    routes = {_route(name, arguments, ends) for calls in own for name, arguments in calls}
    # Per (search, record part): the calls to try, in order, and whether only the first that
    # finds something is shown. A part's own route comes first, then its way back where no
    # shown record travels that (a round trip books both ways), on its first day with
    # flights only: the budget keeps room for the other parts' routes.
    plans: list[tuple[Iterable[tuple[str, dict[str, str]]], bool]] = []
    planned: set[str] = set()
    for calls in own:
        back = [
            (name, _reversed(arguments, ends[name]))
            for name, arguments in calls
            if name in ends and _route(name, _reversed(arguments, ends[name]), ends) not in routes
        ]
        for (name, arguments), first_only in [
            *((call, False) for call in calls),
            *((call, True) for call in back),
        ]:
            text = _call_text(name, arguments)
            if text not in planned:
                planned.add(text)
                plans.append((_moved_calls(name, arguments, later), first_only))
    structured = len(plans)
    plans += [(calls, False) for calls in _free_text_calls(domain, searches, views)]
    chosen: list[dict[str, str]] = []
    done: set[str] = set()
    results: set[str] = set()
    for number, (candidates, first_only) in enumerate(plans):
        found = False
        for name, arguments in candidates:
            text = _call_text(name, arguments)
            if text in done:
                continue
            done.add(text)
            result = _search(domain, text)
            # Words of one record (a title and its author) often find the same thing.
            if result is not None and (number < structured or result not in results):
                results.add(result)
                chosen.append({"call": text, "result": result})
                if len(chosen) >= limit:
                    return chosen
            if found or (first_only and result is not None):
                break  # the call after the first one that found something
            found = result is not None
    return chosen


@functools.cache
def _searches(domain: Tau2Domain) -> tuple[ToolSpec, ...]:
    """The domain's searches: read tools that take arguments but no id."""
    keys = domain.knowledge.entity_keys
    return tuple(
        spec
        for spec in domain.tool_specs("assistant")
        if spec.symbol == FunctionalSymbol.READ and spec.required and not spec.properties & keys
    )


@functools.cache
def _route_ends(domain: Tau2Domain) -> dict[str, tuple[str, str]]:
    """Per tool, the two arguments that name a route's ends, where it has one such pair.

    Two required arguments name the ends of a route when a value the database holds under
    one is held under the other too (an airport that is one flight's ``origin`` and
    another's ``destination``): their values swapped, a search goes the way back. A tool with
    several such pairs has no one way back, and gets none.
    """
    values: dict[str, set[str]] = {}
    for rows in _tables(domain).values():
        for text in rows.values():
            for part in _parts(json.loads(text)):
                for name, value in part.items():
                    if isinstance(value, str):
                        values.setdefault(str(name), set()).add(value)
    ends: dict[str, tuple[str, str]] = {}
    for spec in domain.tool_specs("assistant"):
        pairs = [
            (a, b)
            for a in sorted(spec.required)
            for b in sorted(spec.required)
            if a < b and values.get(a, set()) & values.get(b, set())
        ]
        if len(pairs) == 1:
            ends[spec.name] = pairs[0]
    return ends


def _reversed(arguments: Mapping[str, str], ends: tuple[str, str]) -> dict[str, str]:
    """``arguments`` with the values of a route's two ends swapped: the way back."""
    start, end = ends
    return {**arguments, start: arguments[end], end: arguments[start]}


def _route(
    name: str, arguments: Mapping[str, str], ends: Mapping[str, tuple[str, str]]
) -> tuple[str, ...]:
    """The search ``name`` and the route its ``arguments`` name, from end to end."""
    return (name, *(arguments[a] for a in ends.get(name, ())))


def _free_text_calls(
    domain: Tau2Domain, searches: Sequence[ToolSpec], views: Sequence[_Searchable]
) -> list[list[tuple[str, dict[str, str]]]]:
    """One call per free-text search and word of the shown records: a title, an author's name.

    A search is free-text when its one required argument is a field of no record of the
    database. Its words are every string of the shown records that is not an id (a key of
    a table, or a field named as one) nor a date, in the records' order.
    """
    fields, _ = _names_and_keys(domain)
    free = [s for s in searches if len(s.required) == 1 and not s.required & fields]
    if not free:
        return []
    words = list(dict.fromkeys(word for view in views for word in view.words))
    return [[(spec.name, {arg: word})] for spec in free for arg in spec.required for word in words]


@dataclass(frozen=True)
class _Searchable:
    """What :func:`lookups` reads of one database record, in the order of its parts."""

    maps: tuple[frozenset[str], ...]
    """The key sets of its maps of records (a flight's dates)."""
    own: tuple[tuple[tuple[str, dict[str, str]], ...], ...]
    """Per part, the searches on the part's own values (a reservation's flight segment)."""
    words: tuple[str, ...]
    """Its strings that are neither ids nor dates, first occurrences in order."""


# The shown records are a few hundred of the database's, over and over: walking every part of
# a flight's month of dates per prompt was most of a model-backed Generator's CPU (issue #38's
# round_overhead, cProfile: 73 of 90 ms per prompt), so each record is walked once.
@functools.lru_cache(maxsize=8192)
def _searchable(domain: Tau2Domain, table: str, key: str) -> _Searchable:
    """What :func:`lookups` reads of record ``key`` of ``table`` (the unmodified database)."""
    parts = list(_parts(json.loads(_tables(domain)[table][key])))
    searches = _searches(domain)
    _, keys = _names_and_keys(domain)
    words = (
        value
        for part in parts
        for name, value in part.items()
        if isinstance(value, str)
        and value not in keys
        and not name.endswith("_id")
        and name not in domain.knowledge.entity_keys
        and not _DATE.fullmatch(value)
    )
    return _Searchable(
        maps=tuple(frozenset(map(str, part)) for part in parts if part and _all_records(part)),
        own=tuple(
            tuple(
                (spec.name, {a: str(part[a]) for a in sorted(spec.required)})
                for spec in searches
                if spec.required <= part.keys()
                and all(isinstance(part[a], str) for a in spec.required)
            )
            for part in parts
        ),
        words=tuple(dict.fromkeys(words)),
    )


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}.*")


@functools.cache
def _names_and_keys(domain: Tau2Domain) -> tuple[frozenset[str], frozenset[str]]:
    """Every field name of the database's records, and every key of its tables.

    Once per domain and process: reading the whole database took most of a model-backed
    Generator's prompt (issue #38's round_overhead, py-spy).
    """
    tables = _tables(domain)
    fields = frozenset(
        str(name)
        for rows in tables.values()
        for text in rows.values()
        for part in _parts(json.loads(text))
        for name in part
    )
    return fields, frozenset(key for rows in tables.values() for key in rows)


def _parts(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping in ``node``, outermost first."""
    if isinstance(node, Mapping):
        yield node
        for value in node.values():
            yield from _parts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _parts(value)


def _later_keys(maps: Sequence[Collection[str]], value: str) -> list[str]:
    """The keys after ``value`` of every map in ``maps`` (their key sets) that ``value`` keys."""
    return sorted({k for keys in maps if value in keys for k in keys if k > value})


def _moved_calls(
    name: str, arguments: dict[str, str], later: Callable[[str], list[str]]
) -> Iterator[tuple[str, dict[str, str]]]:
    """A search on ``arguments``, then on each ``later`` key (:func:`_later_keys`) of each.

    Made as they are tried: most plans stop at their second call, of a month of dates.
    """
    yield name, arguments
    for argument, value in arguments.items():
        for key in later(value):
            yield name, {**arguments, argument: key}


def _call_text(name: str, arguments: Mapping[str, str]) -> str:
    return f"{name}({json.dumps(dict(arguments), sort_keys=True)})"


def forget_records() -> None:
    """Empty what the prompts keep of the records and searches, as in a new process."""
    for cache in (_searchable, _search, _looked_up):
        cache.cache_clear()


def _read(domain: Tau2Domain, call: ToolCall) -> ToolMessage:
    """τ²-bench's answer to the read tool ``call`` on the unmodified database."""
    states = _blank.__dict__.setdefault("states", {})
    if domain not in states:
        states[domain] = domain.blank_state()
    return domain.execute(states[domain], call)


# A read changes nothing, so one blank state per thread serves every read of the thread.
_blank = threading.local()


# A search reads the unmodified database, so its answer to one call never changes; many
# prompts show the same flights and search them again.
@functools.lru_cache(maxsize=16384)
def _search(domain: Tau2Domain, call: str) -> str | None:
    """The result of ``call`` (:func:`_call_text`) on the unmodified database.

    Cut to ``LOOKUP_CHARS``; None when the call fails or finds nothing.
    """
    name, _, arguments = call.partition("(")
    message = _read(domain, ToolCall(id="lookup", name=name, arguments=json.loads(arguments[:-1])))
    if message.error or not message.content:
        return None
    try:
        result = json.loads(message.content)
    except json.JSONDecodeError:
        return str(message.content)[:LOOKUP_CHARS]
    return _cut(result) if result else None


def _cut(result: Any) -> str:
    """``result`` as compact JSON in ``LOOKUP_CHARS``: a list keeps its first items that fit."""
    text = json.dumps(result, sort_keys=True, separators=(",", ":"))
    if len(text) <= LOOKUP_CHARS or not isinstance(result, list):
        return text[:LOOKUP_CHARS]
    kept: list[Any] = []
    for item in result:
        if kept and len(json.dumps([*kept, item], separators=(",", ":"))) > LOOKUP_CHARS:
            break
        kept.append(item)
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"))[:LOOKUP_CHARS]
    return f"{text} (and {len(result) - len(kept)} more)"
