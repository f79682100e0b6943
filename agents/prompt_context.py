"""Runtime inputs of the LLM roles' prompts: tools, policy, entities and the synthesis space.

The paper's prompts inject the same runtime inputs into every role: a domain context, a tool
summary, the policy, the current synthesis space and a steering signal. These functions render
the domain-side ones as plain text or JSON, deterministically, so a prompt is a pure function
of its records: records and what the agent's searches return on them, every rule of the
domain, and what each value asks for where the kit defines it (an interaction challenge or a
persona, in the words the user simulator is told).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from tau2.data_model.message import ToolCall
from tau2.environment.db import DB

from evosyn.buckets import DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.base import FunctionalSymbol, Requestor, Tau2Domain, ToolSpec
from evosyn.environments.dialogue_acts import ACTING, PERSONA_KINDS
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import DomainGenerator, PolicyCheck, domain_plugin
from evosyn.records import Blueprint, Direction, Factor, Feedback, SynthesisSpace

# Characters of one entity record shown to the Generator: every record of the four domains
# fits whole (a product with all its variants included); a longer one leaves out whole parts.
ENTITY_CHARS = 4000
# Characters of all the records one prompt shows; the furthest from its people go first.
RECORDS_CHARS = 40000
# Searches shown to the Generator, and the characters of each one's result.
LOOKUPS = 8
LOOKUP_CHARS = 2000
# Share of the verified data below which a new factor's value counts as nearly empty.
NEARLY_EMPTY = 0.05
#: The factor whose values are what the simulated user does, defined by ``ACTING``.
CHALLENGE_FACTOR = "interaction_challenge"


def tool_lines(domain: Tau2Domain, requestor: Requestor = "assistant") -> list[dict[str, str]]:
    """One entry per tool: name, functional symbol, description and argument summary."""
    lines = []
    for spec in domain.tool_specs(requestor):
        function = spec.openai_schema.get("function", {})
        properties: Mapping[str, Any] = spec.parameters.get("properties", {})
        defs: Mapping[str, Any] = spec.parameters.get("$defs", {})
        args = ", ".join(
            f"{name}{'' if name in spec.required else '?'}: {_type_of(schema, defs)}"
            for name, schema in properties.items()
        )
        lines.append(
            {
                "name": spec.name,
                "symbol": spec.symbol.value,
                "description": " ".join(str(function.get("description", "")).split()),
                "arguments": args,
            }
        )
    return lines


def _type_of(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
        # A named object (a flight, a passenger, a payment): its fields, as the call needs them.
        target = defs[ref.rsplit("/", 1)[-1]]
        fields = target.get("properties", {})
        required = set(target.get("required", []))
        inner = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_of(sub, defs)}"
            for name, sub in fields.items()
        )
        return f"{{{inner}}}"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "type" in schema:
        kind = str(schema["type"])
        return f"list of {_type_of(schema.get('items', {}), defs)}" if kind == "array" else kind
    if "anyOf" in schema:
        kinds = [_type_of(s, defs) for s in schema["anyOf"] if isinstance(s, Mapping)]
        # A free-form object beside a named one adds nothing the model should use.
        named = [k for k in kinds if k != "object"]
        return " or ".join(dict.fromkeys(named or kinds))
    return "object"


def space_json(space: SynthesisSpace) -> str:
    """The active factors as ``{name: [values]}`` JSON, in selection order."""
    return json.dumps({f.name: f.values for f in space.active_factors}, indent=1)


def factor_cards(space: SynthesisSpace) -> list[dict[str, Any]]:
    """Every factor with its status, origin, cardinality, guidance, definition and meanings.

    ``meanings`` maps each value with a definition (:func:`value_meanings`) to it;
    ``definition`` is what a factor the Reflector invented measures ("" for the others).
    """
    cards = []
    for factor in space.factors:
        lo, hi = cardinality(factor)
        cards.append(
            {
                "name": factor.name,
                "values": factor.values,
                "select": f"{lo}..{hi}" if lo != hi else str(lo),
                "status": factor.status.value,
                "origin": factor.origin.value,
                "round_introduced": factor.round_introduced,
                "guidance": factor.guidance,
                "definition": factor.definition,
                "meanings": value_meanings(factor.name, factor.values),
            }
        )
    return cards


def value_meanings(factor: str, values: Sequence[str]) -> dict[str, str]:
    """What each of ``values`` of ``factor`` asks for, where the kit or a domain defines it.

    An interaction challenge is what the simulated user is told to do, in the words the
    user simulator gets and the detectors read back (``dialogue_acts.ACTING``); a factor's
    one-line guidance ("how the simulated user makes the conversation harder") says nothing
    about what a value asks of the dialogue. A candidate factor a domain's ontology declares
    (``trip_shape``, ``fault_kind``) means what the ontology says each value asks of the gold.
    """
    # Imported here: only this function of the module reads the ontologies' meanings.
    from evosyn.environments.registry import declared_meanings

    meanings = ACTING if factor == CHALLENGE_FACTOR else declared_meanings().get(factor, {})
    return {value: meanings[value] for value in values if value in meanings}


def persona_meanings() -> dict[str, str]:
    """Every persona kind a task's persona line can ask for, with what the user must do."""
    return {kind: ACTING[kind] for kind, _ in PERSONA_KINDS if kind in ACTING}


def difficulty_ranges() -> str:
    """The tool calls of each difficulty profile: ``easy 2-3, medium 4-5, hard 6+``."""
    return ", ".join(
        f"{name} {lo}+" if hi >= OPEN_END else f"{name} {lo}-{hi}"
        for name, (lo, hi) in DIFFICULTY_CALLS.items()
    )


def cardinality(factor: Factor) -> tuple[int, int]:
    """Fewest and most values a blueprint selects for ``factor`` (the paper's for seed axes)."""
    return Blueprint.CARDINALITY.get(factor.name, (factor.min_select, factor.max_select))


def feedback_rows(feedback: Feedback) -> list[dict[str, Any]]:
    """The per-value coverage and learner-success report, compact and rounded."""
    rows = []
    for v in feedback.values:
        row: dict[str, Any] = {
            "factor": v.factor,
            "value": v.value,
            "coverage": round(v.coverage, 3),
            "n_verified": v.n_verified,
        }
        if v.round_coverage is not None:
            row["round_coverage"] = round(v.round_coverage, 3)
        if v.success is not None:
            row["learner_success"] = round(v.success, 3)
            row["n_diagnostic"] = v.n_diagnostic
        if v.success_delta is not None:
            row["success_change"] = round(v.success_delta, 3)
        rows.append(row)
    return rows


# How a role records that its model's output was rejected and what ran instead; the part
# after each marker is what the fallback decided, and all a later prompt should see of it.
_REJECTED = re.compile(r"llm \w+ output rejected \(")
_FALLBACK_MARKERS = (
    ("); fallback plan: ", ""),
    ("); the space is unchanged", "the space is unchanged"),
)


def without_internal_errors(text: str) -> str:
    """``text`` without a role's note that its model output was rejected, and why.

    Rejection notes (``llm designer output rejected (model call failed: BadRequestError
    ...); fallback plan: ...``) belong in the lake, not in another model's prompt: they tell
    it nothing about the task and invite it to imitate error text.
    """
    if not _REJECTED.match(text):
        return text
    for marker, kept in _FALLBACK_MARKERS:
        at = text.find(marker)
        if at >= 0:
            return kept + text[at + len(marker) :]
    return ""


# What each column of ``feedback_rows`` means, in the order a row lists them.
FEEDBACK_COLUMNS = {
    "coverage": "share of all verified data with the value",
    "n_verified": "verified samples with it",
    "round_coverage": "its share of the latest round's verified data",
    "learner_success": "task-agent success on diagnostic tasks with it",
    "n_diagnostic": "diagnostic tasks with it",
    "success_change": "change of learner_success since the previous evaluation",
}


def feedback_legend(rows: Sequence[Mapping[str, Any]]) -> str:
    """``name = meaning`` for every column some row of ``rows`` carries, and only those."""
    present = {key for row in rows for key in row}
    return "; ".join(f"{k} = {v}" for k, v in FEEDBACK_COLUMNS.items() if k in present)


def domain_rules(domain: str) -> list[str]:
    """Every sentence of ``domain``'s feasibility rule, whatever factors the space holds.

    The checks apply every rule to a selection, so every sentence is shown: a sentence that
    also names a factor the space does not hold yet (``num_write`` before the Reflector adds
    it) still rules out what it says of the others (a proposal challenge with a refusal).
    :func:`unselected_factors` defines the factors such sentences name.
    """
    return [rule.text for rule in domain_plugin(domain).rules()]


def unselected_factors(rules: Sequence[str], space: SynthesisSpace) -> list[dict[str, str]]:
    """The realizable factors ``rules`` name that ``space`` does not hold, with their meaning.

    A rule on them speaks of the task a blueprint leads to (its write calls, its reads, what
    it computes), which a prompt must define since the model cannot select them.
    """
    active = {f.name for f in space.active_factors}
    return [
        {"name": name, "guidance": factor.guidance}
        for name, factor in REALIZABLE.items()
        if name not in active and any(re.search(rf"\b{name}\b", rule) for rule in rules)
    ]


def direction_json(direction: Direction) -> str:
    """The parts of a Designer direction the Planner must obey, as JSON.

    ``target`` (what the direction aims at) is shown only where the Designer named one.
    """
    # A programmatic Designer names no target: an empty key would only be noise to the Planner.
    target = {"target": direction.target} if direction.target else {}
    return json.dumps(
        {
            "objective": direction.objective.value,
            **target,
            "rationale": without_internal_errors(direction.rationale),
            "preferred": direction.preferred,
            "weights": direction.weights,
            "allowed": direction.allowed,
            "forbidden": direction.forbidden,
            "avoid_patterns": direction.avoid_patterns,
        },
        indent=1,
    )


# --------------------------------------------------------------------------- entities


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


def people_table(domain: Tau2Domain) -> str | None:
    """The table whose records are the people ``domain``'s tasks are about, or None.

    The first of the domain's registered ``people`` tables its database has.
    """
    tables = _tables(domain)
    return next((t for t in domain_plugin(domain.name).people if t in tables), None)


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


def entity_sample(
    domain: Tau2Domain,
    rng: random.Random,
    people: int = 2,
    linked: int = 4,
    include: Sequence[str] = (),
    prefer: Collection[str] = (),
) -> list[dict[str, str]]:
    """Real records to ground a task in: ``people`` users and the records they refer to.

    Each entry is ``{"table", "key", "record"}`` with the record as JSON, whole
    (:func:`shown_record`). Which people are shown is drawn from ``rng``; the keys in ``include``
    are among them, at places drawn from ``rng`` too. A person's records (up to
    ``linked`` per table, those keyed in ``prefer`` first) are followed one step further:
    every record they reference (the
    flights of a reservation, the products of an order) is shown too, a calendar cut to the
    days they reference (the flight's status, seats left and prices on the reserved dates)
    and a product with every variant (:func:`_focus`), so a task can state amounts that add
    up, and pick an item to switch to, instead of guessing them.
    """
    tables = _tables(domain)
    owner = people_table(domain)
    if owner is None:
        return [
            {"table": name, "key": key, "record": shown_record(_record(domain, name, key))}
            for name, rows in tables.items()
            for key in rng.sample(sorted(rows), min(people, len(rows)))
        ]
    sample = []
    shown: set[tuple[str, str]] = set()
    # What the people's records reference, with the strings each reference came with.
    focus: dict[tuple[str, str], set[str]] = {}
    drawn = rng.sample(sorted(tables[owner]), min(people, len(tables[owner])))
    fits = [k for k in include if k in tables[owner]][:people]
    if fits:
        drawn = [k for k in drawn if k not in fits][: people - len(fits)]
        for key in fits:
            drawn.insert(rng.randrange(len(drawn) + 1), key)
    for key in drawn:
        record = tables[owner][key]
        shown_person = shown_record(_record(domain, owner, key))
        sample.append({"table": owner, "key": key, "record": shown_person})
        shown.add((owner, key))
        refs = _strings(record)
        for name, rows in tables.items():
            if name == owner:
                continue
            ranked = sorted(refs & set(rows), key=lambda k: (k not in prefer, k))
            hits = [k for k in ranked[:linked] if (name, k) not in shown]
            shown.update((name, k) for k in hits)
            sample += [
                {"table": name, "key": k, "record": shown_record(_record(domain, name, k))}
                for k in hits
            ]
            for k in hits:
                for siblings in _objects(json.loads(rows[k])):
                    for other, other_rows in tables.items():
                        for ref in siblings & set(other_rows):
                            if other != owner:
                                focus.setdefault((other, ref), set()).update(siblings)
    # One step further, after every person: a flight two people's reservations share is
    # shown once, with the dates of both. Those of the records a blueprint can be carried on
    # come first, so a budget (:func:`within`) leaves out others.
    ordered = sorted(focus.items(), key=lambda item: (not item[1] & set(prefer), item[0]))
    for (name, k), refs2 in ordered:
        if (name, k) in shown:
            continue
        focused = _focus(_record(domain, name, k), refs2)
        sample.append({"table": name, "key": k, "record": shown_record(focused)})
    return sample


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
        call = ToolCall(id="look-up", name=spec.name, arguments={argument: key})
        message = domain.execute(domain.blank_state(), call)
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

    An :func:`entity_sample` lists the people and their own records before the records
    they reference, so what is left out is what lies furthest from the people (a product of
    an order no blueprint fits), and the prompt names it (``products 1656367028``) instead
    of showing a cut record.
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
    keys = domain.knowledge.entity_keys
    searches = [
        spec
        for spec in domain.tool_specs("assistant")
        if spec.symbol == FunctionalSymbol.READ and spec.required and not spec.properties & keys
    ]
    if not searches or limit <= 0:
        return []
    tables = _tables(domain)
    shown = sorted(
        (e for e in entities if e["key"] in tables.get(e["table"], {})),
        key=lambda e: e["key"] not in prefer,
    )
    records = [json.loads(tables[e["table"]][e["key"]]) for e in shown]
    # The key sets of the shown records' maps of records (a flight's dates).
    maps = [{str(k) for k in part} for part in _parts(records) if part and _all_records(part)]
    # Per record part, the searches on its own values (a reservation's flight segment).
    own = [
        [
            (spec.name, {a: str(part[a]) for a in sorted(spec.required)})
            for spec in searches
            if all(isinstance(part.get(a), str) for a in spec.required)
        ]
        for part in _parts(records)
    ]
    ends = _route_ends(domain)
    routes = {_route(name, arguments, ends) for calls in own for name, arguments in calls}
    # Per (search, record part): the calls to try, in order, and whether only the first that
    # finds something is shown. A part's own route comes first, then its way back where no
    # shown record travels that (a round trip books both ways), on its first day with
    # flights only: the budget keeps room for the other parts' routes.
    plans: list[tuple[list[tuple[str, dict[str, str]]], bool]] = []
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
            if _call_text(name, arguments) not in planned:
                planned.add(_call_text(name, arguments))
                plans.append((_moved_calls(name, arguments, maps), first_only))
    structured = len(plans)
    plans += [(calls, False) for calls in _free_text_calls(domain, searches, records)]
    state = domain.blank_state()
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
            result = _search(domain, state, name, arguments)
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
    domain: Tau2Domain, searches: Sequence[ToolSpec], records: Sequence[Any]
) -> list[list[tuple[str, dict[str, str]]]]:
    """One call per free-text search and word of ``records``: a title, an author's name.

    A search is free-text when its one required argument is a field of no record of the
    database. Its words are every string of the shown records that is not an id (a key of
    a table, or a field named as one) nor a date, in the records' order.
    """
    tables = _tables(domain)
    fields = {
        str(name)
        for rows in tables.values()
        for text in rows.values()
        for part in _parts(json.loads(text))
        for name in part
    }
    free = [s for s in searches if len(s.required) == 1 and not s.required & fields]
    if not free:
        return []
    keys = {key for rows in tables.values() for key in rows}
    words: list[str] = []
    for part in _parts(list(records)):
        for name, value in part.items():
            if (
                isinstance(value, str)
                and value not in keys
                and not name.endswith("_id")
                and name not in domain.knowledge.entity_keys
                and not _DATE.fullmatch(value)
                and value not in words
            ):
                words.append(value)
    return [[(spec.name, {arg: word})] for spec in free for arg in spec.required for word in words]


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}.*")


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
    name: str, arguments: dict[str, str], maps: Sequence[Collection[str]]
) -> list[tuple[str, dict[str, str]]]:
    """A search on ``arguments``, then on each later key of the maps one of them keys."""
    calls = [(name, arguments)]
    for argument, value in arguments.items():
        calls += [(name, {**arguments, argument: k}) for k in _later_keys(maps, value)]
    return calls


def _call_text(name: str, arguments: Mapping[str, str]) -> str:
    return f"{name}({json.dumps(dict(arguments), sort_keys=True)})"


def _search(domain: Tau2Domain, state: Any, name: str, arguments: Mapping[str, str]) -> str | None:
    """The search's result, cut to ``LOOKUP_CHARS``; None when it fails or finds nothing."""
    message = domain.execute(state, ToolCall(id="lookup", name=name, arguments=dict(arguments)))
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


def grounding(
    domain: Tau2Domain, blueprint: Blueprint, seed: int, people: int
) -> dict[str, list[Any]]:
    """The records and amount rules a prompt that writes a task for ``blueprint`` shows.

    ``entities`` is the :func:`entity_sample` of ``people`` users drawn from ``seed`` and the
    blueprint's id, one of them a person whose records can carry the blueprint
    (:func:`fitting_people`) when there is one, with the records the blueprint needs of
    theirs among the ones shown (the third reservation with a cancelled flight a
    compensation of three needs, not only the first four in key order), within
    ``RECORDS_CHARS`` (:func:`within`; ``left_out`` names the records that did not fit;
    ``looked_up`` the fields the agent's look-ups add to them, :func:`looked_up`);
    ``lookups`` what the agent's searches return on them (:func:`lookups`: flights for sale
    on their routes, both ways, on the reserved days and later ones); ``payment_rules`` how
    the amounts of writes add up.
    The Generator and the single agent use it alike, so both arms of the monolithic ablation
    see the same records for the same blueprint.
    """
    digest = hashlib.sha256(f"{seed}:{blueprint.blueprint_id}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    ids = fitting_ids(domain, blueprint, seed)
    fitting = fitting_people(domain, blueprint, seed, ids)
    entities, left_out = within(
        entity_sample(domain, rng, people=people, include=fitting[:1], prefer=ids)
    )
    return {
        "entities": entities,
        "left_out": left_out,
        "maps": record_maps(entities),
        "looked_up": looked_up(domain, entities),
        "lookups": lookups(domain, entities, prefer=ids),
        "payment_rules": payment_rules(domain),
    }


@functools.cache
def _programmatic(domain: str) -> tuple[DomainGenerator, threading.Lock]:
    # One programmatic Generator per domain and process; it grounds one blueprint at a time.
    return domain_plugin(domain).generator(), threading.Lock()


def fitting_ids(domain: Tau2Domain, blueprint: Blueprint, seed: int) -> list[str]:
    """The ids a task for ``blueprint`` can be built on (none when the domain cannot ground it).

    With a programmatic Generator, they are the string arguments of the gold actions of the
    task it grounds the blueprint in: its person, and the records of theirs it acts on.
    Without one, they come from the environment alone (:func:`acted_on`).
    """
    if not domain_plugin(domain.name).offers("generator"):
        return list(acted_on(domain, blueprint, seed))
    return list(_fitting_ids(domain.name, blueprint.model_dump_json(), seed))


def acted_on(domain: Tau2Domain, blueprint: Blueprint, seed: int) -> tuple[str, ...]:
    """A person, and the records of theirs a task for ``blueprint`` can act on, by the policy.

    The environment alone decides: the write tools of the blueprint's ``task_family``
    (``DomainKnowledge.family_by_write``) are tried on each person's records, a record being
    one the tool takes by its id (a loan for ``renew_loan``), its other arguments filled in
    from the record and then the person's. A refusal needs a write the policy model refuses,
    best for the rule ``policy_or_constraint_focus`` names; a fulfilled request one it allows
    and the tool carries out on the unchanged database. A record an official task acts on
    fits last: a task on it would be screened out as contamination. Of the people with the
    best fits, one is drawn from ``seed`` and the blueprint's id. None: no write to try (an
    inquiry), or no people table.
    """
    return _acted_on(domain, blueprint.model_dump_json(), seed)


@functools.lru_cache(maxsize=256)
def _acted_on(domain: Tau2Domain, blueprint_json: str, seed: int) -> tuple[str, ...]:
    blueprint = Blueprint.model_validate_json(blueprint_json)
    owner = people_table(domain)
    families = set(blueprint.selections.get("task_family", []))
    by_write = domain.knowledge.family_by_write
    writes = [
        spec
        for spec in domain.tool_specs("assistant")
        if spec.symbol == FunctionalSymbol.WRITE and by_write.get(spec.name) in families
    ]
    if owner is None or not writes:
        return ()
    refuse = "refuse" in blueprint.selections.get("expected_outcome", [])
    focus = tuple(blueprint.selections.get("policy_or_constraint_focus", []))
    violation = domain_plugin(domain.name).violation
    db = domain.blank_state().db
    official = _official_ids(domain)
    best: dict[str, tuple[int, set[str]]] = {}
    for person, key, record, people in _people_records(domain, owner):
        for spec in writes:
            tried = _try_write(domain, spec, key, record, people[person], violation, db)
            if tried is None:
                continue
            reason, complete, ids = tried
            if refuse and reason is not None:
                rank = 0 if reason.startswith(focus) else 1
            elif not refuse and reason is None and complete:
                rank = 0
            elif not complete:
                rank = 2  # the policy cannot judge a call the records do not complete
            else:
                continue
            if key in official:
                rank += 3
            held = best.get(person)
            if held is None or rank < held[0]:
                best[person] = (rank, {person, *ids})
            elif rank == held[0]:
                held[1].update(ids)
    if not best:
        return ()
    top = min(rank for rank, _ in best.values())
    fits = sorted(p for p, (rank, _) in best.items() if rank == top)
    digest = hashlib.sha256(f"{seed}:{blueprint.blueprint_id}".encode()).digest()
    chosen = fits[int.from_bytes(digest[:8], "big") % len(fits)]
    return tuple(sorted(best[chosen][1]))


@functools.cache
def _official_ids(domain: Tau2Domain) -> frozenset[str]:
    """The string arguments of every official task's gold actions."""
    return frozenset(
        value
        for task in domain.tasks()
        for action in (task.evaluation_criteria.actions or [] if task.evaluation_criteria else [])
        for value in action.arguments.values()
        if isinstance(value, str)
    )


def _people_records(
    domain: Tau2Domain, owner: str
) -> Iterator[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]]:
    """(person, key, record, every person's record) for each person and record of theirs.

    A person's records are their own and every record that names them or that they name.
    """
    people, theirs = _people_index(domain, owner)
    for person in sorted(people):
        yield person, person, people[person], people
        for key, record in theirs.get(person, []):
            yield person, key, record, people


@functools.cache
def _people_index(
    domain: Tau2Domain, owner: str
) -> tuple[dict[str, Any], dict[str, list[tuple[str, Any]]]]:
    """Every person's record, and the (key, record) of every other record of theirs."""
    tables = _tables(domain)
    people = {key: json.loads(text) for key, text in tables[owner].items()}
    names = {person: _strings(tables[owner][person]) for person in people}
    theirs: dict[str, list[tuple[str, Any]]] = {}
    for name, rows in tables.items():
        if name == owner:
            continue
        for key, text in rows.items():
            strings = _strings(text)
            record = json.loads(text)
            for person in sorted(people):
                if key in names[person] or person in strings:
                    theirs.setdefault(person, []).append((key, record))
    return people, theirs


def _try_write(
    domain: Tau2Domain,
    spec: ToolSpec,
    key: str,
    record: Mapping[str, Any],
    person: Mapping[str, Any],
    violation: PolicyCheck | None,
    db: DB,
) -> tuple[str | None, bool, set[str]] | None:
    """(policy's reason, arguments complete, ids) of ``spec`` on ``record``; None: not its.

    ``spec`` acts on the record keyed ``key`` when a required argument is the record's own
    id (a field of the record holding ``key``, as ``loan_id`` does in a loan).
    """
    if not any(record.get(a) == key for a in spec.required):
        return None
    arguments = {a: record[a] for a in spec.properties if isinstance(record.get(a), str)}
    for name in sorted(spec.required - set(arguments)):
        value = next((p[name] for p in _parts(person) if isinstance(p.get(name), str)), None)
        if value is not None:
            arguments[name] = value
    complete = spec.required <= set(arguments)
    if complete:
        message = domain.execute(
            domain.blank_state(), ToolCall(id="fit", name=spec.name, arguments=arguments)
        )
        if message.error:
            return None  # the database refuses it (a returned loan): the policy has no say
    reason = violation(db, spec.name, arguments) if violation is not None else None
    return reason, complete, set(arguments.values())


@functools.lru_cache(maxsize=256)
def _fitting_ids(domain_name: str, blueprint_json: str, seed: int) -> tuple[str, ...]:
    generator, lock = _programmatic(domain_name)
    blueprint = Blueprint.model_validate_json(blueprint_json)
    try:
        with lock:
            synth = generator.generate(blueprint, seed)
    except GeneratorRejection:
        return ()
    actions = synth.task.evaluation_criteria.actions if synth.task.evaluation_criteria else None
    return tuple(
        sorted(
            {
                value
                for action in actions or []
                for value in action.arguments.values()
                if isinstance(value, str)
            }
        )
    )


def fitting_people(
    domain: Tau2Domain, blueprint: Blueprint, seed: int, ids: Sequence[str] | None = None
) -> list[str]:
    """People whose records can carry ``blueprint`` (none when the domain cannot ground it).

    They are the people the domain's programmatic Generator grounds the blueprint on. A
    random sample of people often holds nobody a blueprint fits (no cancelled flight for a
    compensation, no reservation to change), and a model shown only them can meet the
    blueprint only by inventing records. ``ids``: its :func:`fitting_ids`, if already known.
    """
    tables = _tables(domain)
    owner = people_table(domain)
    if owner is None:
        return []
    if ids is None:
        ids = fitting_ids(domain, blueprint, seed)
    return [value for value in ids if value in tables[owner]]


def payment_rules(domain: Tau2Domain) -> list[str]:
    """How the amounts of ``domain``'s write tools must add up; none when it states none.

    The domain's registration states them
    (:attr:`~evosyn.environments.registry.DomainPlugin.payment_rules`).
    """
    return list(domain_plugin(domain.name).payment_rules)


# --------------------------------------------------------------------------- templates


@functools.cache
def templates(folder: str) -> jinja2.Environment:
    """The Jinja2 environment of a role's prompt folder: strict, no escaping, its filters.

    ``json`` writes compact JSON without HTML escaping (Jinja's ``tojson`` escapes ``<>&'``);
    ``listing`` joins words as a sentence does (:func:`listing`).
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)
    env.filters["listing"] = listing
    return env


def listing(items: Sequence[str]) -> str:
    """``items`` as words: ``a``, ``a and b``, ``a, b and c``."""
    items = [str(item) for item in items]
    return " and ".join(items) if len(items) < 3 else f"{', '.join(items[:-1])} and {items[-1]}"


def render(folder: Path, template: str, **values: Any) -> str:
    """Render ``template`` from ``folder`` with ``values``, stripped."""
    return templates(str(folder)).get_template(template).render(**values).strip()
