"""Runtime inputs of the LLM roles' prompts: tools, policy, entities and the synthesis space.

The paper's prompts inject the same runtime inputs into every role: a domain context, a tool
summary, the policy, the current synthesis space and a steering signal. These functions render
the domain-side ones as plain text or JSON, deterministically, so a prompt is a pure function
of its records: records and what the agent's searches return on them, every rule of the
domain, and what each value asks for where the kit defines it (an interaction challenge or a
persona, in the words the user simulator is told). How records are shown and searched is
:mod:`~evosyn.agents.prompt_records`'s.
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

from evosyn.agents.prompt_records import (
    _focus,
    _objects,
    _parts,
    _record,
    _strings,
    _tables,
    forget_records,
    looked_up,
    lookups,
    record_maps,
    shown_record,
    within,
)
from evosyn.buckets import DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.base import FunctionalSymbol, Requestor, Tau2Domain, ToolSpec
from evosyn.environments.dialogue_acts import ACTING, PERSONA_KINDS
from evosyn.environments.kit.grounding import REALIZABLE
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.registry import DomainGenerator, PolicyCheck, domain_plugin
from evosyn.records import Blueprint, Direction, Factor, Feedback, SynthesisSpace

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
    "n_diagnostic": "diagnostic episodes with it (each trial of a task counts once)",
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


def people_table(domain: Tau2Domain) -> str | None:
    """The table whose records are the people ``domain``'s tasks are about, or None.

    The first of the domain's registered ``people`` tables its database has.
    """
    tables = _tables(domain)
    return next((t for t in domain_plugin(domain.name).people if t in tables), None)


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
    keys = _table_keys(domain)
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
            ranked = sorted(refs & keys[name], key=lambda k: (k not in prefer, k))
            hits = [k for k in ranked[:linked] if (name, k) not in shown]
            shown.update((name, k) for k in hits)
            sample += [
                {"table": name, "key": k, "record": shown_record(_record(domain, name, k))}
                for k in hits
            ]
            for k in hits:
                for siblings in _objects(json.loads(rows[k])):
                    for other, other_keys in keys.items():
                        for ref in siblings & other_keys:
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


def forget_grounding() -> None:
    """Empty what prompts keep of the records and of each blueprint's grounding.

    As in a new process: a benchmark timing a worker's first round starts here.
    """
    forget_records()
    _fitting_ids.cache_clear()
    _acted_on.cache_clear()


@functools.cache
def _table_keys(domain: Tau2Domain) -> dict[str, frozenset[str]]:
    """Each table's keys, once per domain and process.

    A set per prompt and table was a tenth of a model-backed Generator's prompt (issue #38).
    """
    return {name: frozenset(rows) for name, rows in _tables(domain).items()}


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
    with _GROUNDING:
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


# One prompt's records at a time in a process, in about the order the prompts were asked for.
# The work is CPU under one interpreter lock, so prompts built side by side finish no sooner
# in all, and each one later: a model-backed Generator's 100 prompts at once left the first
# window's calls waiting seconds behind the later windows' records (issue #38).
_GROUNDING = threading.Lock()


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
