"""The quality audit of a campaign's synthesized data: ``evosyn audit CAMPAIGN``.

Per round, from the stored tasks, trajectories, verdicts and rejections: how many expected
answers are said out of context, brittle answers, contradictions, internal ids handed to the
user (next to the official rate), overlaps with official tasks by kind, duplicates, the pass
rate of an agent that does nothing (next to the official rate), language variety, each
requested interaction challenge and persona acted out in the dialogue, and the rejections and
repairs by stage. The rules are :mod:`evosyn.environments.quality`'s.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence

from pydantic import BaseModel, ConfigDict, Field
from tau2.data_model.message import AssistantMessage, Message, UserMessage
from tau2.data_model.tasks import Task

from evosyn.agents.verifier.replay import ReplayVerifier
from evosyn.environments import information_flow, quality
from evosyn.environments.contamination import NearDuplicates, instruction_text, official_index
from evosyn.environments.dedup import NEAR_IDENTICAL_JACCARD, exact_key
from evosyn.environments.dialogue_acts import persona_kind
from evosyn.environments.features import factor_values
from evosyn.environments.registry import domain_plugin, get_domain
from evosyn.environments.shapes import ShapeCoverage, coverage
from evosyn.records import Rejection, SynthTask, Trajectory, Verification
from evosyn.storage import Lake


class Rate(BaseModel):
    """A count out of a total."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=0)
    total: int = Field(ge=0)

    def __str__(self) -> str:
        share = self.count / self.total if self.total else 0.0
        return f"{share:.1%} ({self.count}/{self.total})"


def _no_rate() -> Rate:
    return Rate(count=0, total=0)


class GoldAudit(BaseModel):
    """How the verified dialogues of a round keep the gold-conversation rules.

    The rules are :mod:`evosyn.environments.information_flow`'s, measured on what the
    dialogues realize; synthesis rejects a dialogue that breaks one, so on data made since
    the gate every break count is 0 and a lake written before it shows what it holds.
    """

    model_config = ConfigDict(extra="forbid")

    ungrounded: Rate = Field(
        default_factory=_no_rate,
        description="Dialogues with a tool argument the agent had not seen.",
    )
    chosen_for_user: Rate = Field(
        default_factory=_no_rate,
        description="Dialogues with a choice argument the user never named.",
    )
    priced: Rate = Field(
        default_factory=_no_rate,
        description="Money-moving writes proposed with their amount before the yes.",
    )
    internal_ids: Rate = Field(
        default_factory=_no_rate,
        description="Dialogues telling the user an internal id they never said.",
    )
    repeated: Rate = Field(
        default_factory=_no_rate,
        description="Dialogues where the agent asks again for an identifier it was given.",
    )
    debris: Rate = Field(
        default_factory=_no_rate,
        description="Dialogues with template debris in an agent turn.",
    )
    shared_agent_turns: Rate = Field(
        default_factory=_no_rate,
        description="Agent turns (masked, the fixed greeting left out) that another "
        "dialogue repeats word for word.",
    )


class RoundAudit(BaseModel):
    """The quality figures of one round of one campaign."""

    model_config = ConfigDict(extra="forbid")

    round: int
    domain: str
    out_of_context: Rate = Field(description="Trajectories with an answer said out of context.")
    brittle: Rate = Field(description="Tasks with a brittle expected answer.")
    contradictions: Rate = Field(description="Tasks whose user info contradicts itself.")
    leaked_ids: Rate = Field(description="Tasks whose instructions hand over internal ids.")
    official_leaked_ids: Rate = Field(description="The same over the official tasks.")
    contamination: dict[str, int] = Field(description="Tasks overlapping official ones, by kind.")
    exact_duplicates: Rate = Field(description="Tasks repeating another's writes and answers.")
    near_duplicates: Rate = Field(description="Tasks with near-identical instructions.")
    do_nothing: Rate = Field(description="Tasks an agent that does nothing passes.")
    official_do_nothing: Rate = Field(description="The same over the official tasks.")
    first_messages: Rate = Field(description="Distinct masked first user messages per task.")
    user_templates_per_1000: float = Field(description="Distinct masked user turns per 1,000.")
    challenges_acted: dict[str, Rate] = Field(
        description="Per requested interaction challenge: rolled-out dialogues acting it out."
    )
    personas_acted: dict[str, Rate] = Field(
        default_factory=dict,
        description="Per persona kind the tasks ask for: rolled-out dialogues showing it.",
    )
    rejections: dict[str, int] = Field(description="Rejections by stage.")
    repaired: int = Field(ge=0, description="Verified after at least one repair.")
    repaired_by: dict[str, int] = Field(
        default_factory=dict,
        description="Failed attempts that Repair made right, by the check they failed (db, "
        "action, communicate, policy, flow, choice, procedure, fact, hearing, realize).",
    )
    gold: GoldAudit = Field(
        default_factory=lambda: GoldAudit(),
        description="The gold-conversation rules, measured on the verified dialogues.",
    )
    shapes: ShapeCoverage | None = Field(
        default=None,
        description="The verified tasks' gold shapes against the official base split's.",
    )


def _check_of(reason: str) -> str:
    """The check a verdict's reason names: its prefix ("db", "choice", ...), or realize."""
    head = reason.split(":", 1)[0]
    return "realize" if " " in head or head == reason else head


def gold_audit(domain: str, dialogues: Sequence[Sequence[Message]]) -> GoldAudit:
    """The gold-conversation rules over ``dialogues`` (see :class:`GoldAudit`)."""
    rules = domain_plugin(domain).flow or information_flow.FlowRules()
    tau2 = get_domain(domain)
    flows = [information_flow.flow_breaks(tau2, rules, d) for d in dialogues]
    heard = [information_flow.hearing_breaks(rules, d) for d in dialogues]
    unpriced = sum(len(information_flow.procedure_breaks(tau2, rules, d)) for d in dialogues)
    writes = sum(
        1
        for d in dialogues
        for m in d
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls or []
        if c.name in rules.priced_writes
    )
    owners: dict[str, set[int]] = {}
    turns: list[tuple[str, int]] = []
    for index, dialogue in enumerate(dialogues):
        for m in dialogue:
            said = m.content if isinstance(m, AssistantMessage) else None
            if said and said != quality.AGENT_GREETING:
                key = quality.mask(said)
                owners.setdefault(key, set()).add(index)
                turns.append((key, index))
    n = len(dialogues)
    return GoldAudit(
        ungrounded=Rate(count=sum(any(b.startswith("flow:") for b in f) for f in flows), total=n),
        chosen_for_user=Rate(
            count=sum(any(b.startswith("choice:") for b in f) for f in flows), total=n
        ),
        priced=Rate(count=writes - unpriced, total=writes),
        internal_ids=Rate(count=sum(any("internal id" in b for b in h) for h in heard), total=n),
        repeated=Rate(
            count=sum(bool(information_flow.repeat_breaks(rules, d)) for d in dialogues), total=n
        ),
        debris=Rate(count=sum(any("internal id" not in b for b in h) for h in heard), total=n),
        shared_agent_turns=Rate(
            count=sum(1 for key, i in turns if owners[key] - {i}), total=len(turns)
        ),
    )


@functools.cache
def _official_rates(domain: str) -> tuple[Rate, Rate]:
    """Leaked-id and do-nothing pass rates over the domain's official tasks."""
    tasks = get_domain(domain).tasks()
    return (
        Rate(count=sum(bool(quality.leaked_ids(t)) for t in tasks), total=len(tasks)),
        _do_nothing(domain, tasks),
    )


def _do_nothing(domain: str, tasks: Sequence[Task]) -> Rate:
    verifier = ReplayVerifier(domain)
    policy = get_domain(domain).policy()
    passed = sum(
        verifier.verify(t, quality.do_nothing(t, policy), campaign_id="audit", round=0).passed
        for t in tasks
    )
    return Rate(count=passed, total=len(tasks))


def _names(task: Task) -> list[str]:
    scenario = task.user_scenario.instructions
    known = "" if isinstance(scenario, str) else scenario.known_info or ""
    match = re.search(r"You are (\w+) (\w+)", known)
    return [match.group(1), match.group(2)] if match else []


def _acted(
    tasks: Sequence[SynthTask],
    verifications: Sequence[Verification],
    wanted: Callable[[SynthTask], Sequence[str]],
    shown: Callable[[Verification], Collection[str]],
) -> dict[str, Rate]:
    """Per value a task asks for (``wanted``), the rolled-out tasks whose final verdict shows it.

    A task counts once, by its final verdict (the passing one, else the last repair); a
    dialogue rejected because the value did not show counts as a miss, not as absent.
    """
    final = _final_verdicts(verifications)
    tally: dict[str, list[int]] = {}
    for task in tasks:
        verdict = final.get(task.task_id)
        if verdict is None:
            continue
        seen = shown(verdict)
        for value in wanted(task):
            counts = tally.setdefault(value, [0, 0])
            counts[0] += value in seen
            counts[1] += 1
    return {k: Rate(count=c, total=n) for k, (c, n) in sorted(tally.items())}


def challenges_acted(
    tasks: Sequence[SynthTask], verifications: Sequence[Verification]
) -> dict[str, Rate]:
    """Per requested challenge value, the rolled-out tasks whose dialogue acts it out."""
    return _acted(
        tasks,
        verifications,
        lambda t: t.requested.get("interaction_challenge", []),
        lambda v: set(factor_values(v.realized, "interaction_challenge")),
    )


def personas_acted(
    tasks: Sequence[SynthTask], verifications: Sequence[Verification]
) -> dict[str, Rate]:
    """Per persona kind the tasks ask for, the rolled-out tasks whose dialogue shows it.

    Kinds per ``dialogue_acts.persona_kind``; a persona line naming no known manner is left out.
    """

    def wanted(task: SynthTask) -> list[str]:
        kind = persona_kind(task.task.user_scenario.persona)
        return [] if kind is None else [kind]

    return _acted(tasks, verifications, wanted, lambda v: v.realized.get("personas", "").split(";"))


def _final_verdicts(verifications: Sequence[Verification]) -> dict[str, Verification]:
    """Each task's final verdict: the passing one, else the last repair."""
    final: dict[str, Verification] = {}
    for v in verifications:
        held = final.get(v.task_id)
        if held is None or (v.passed, v.repair_attempts) > (held.passed, held.repair_attempts):
            final[v.task_id] = v
    return final


def audit_round(
    domain: str,
    round: int,
    tasks: Sequence[SynthTask],
    trajectories: Sequence[Trajectory],
    verifications: Sequence[Verification],
    rejections: Sequence[Rejection],
) -> RoundAudit:
    """The quality figures of one round's records."""
    by_task = {t.task_id: t for t in tasks}
    verdicts = {v.trajectory_id: v for v in verifications}
    kept = [t for t in trajectories if t.task_id in by_task]
    answered = [t for t in kept if quality.expected_answers(by_task[t.task_id].task)]
    plain = [t.task for t in tasks]
    keys = Counter(k for t in plain if (k := exact_key(domain, t)) is not None)
    near = NearDuplicates(NEAR_IDENTICAL_JACCARD)
    near_hits = 0
    for t in tasks:
        text = instruction_text(t.task)
        near_hits += near.match(text) is not None
        near.add(t.task_id, text)
    firsts: list[str] = []
    turns: list[str] = []
    for trajectory in kept:
        names = _names(by_task[trajectory.task_id].task)
        said = [
            quality.mask(m.content, names)
            for m in trajectory.messages
            if isinstance(m, UserMessage) and m.content
        ]
        firsts += said[:1]
        turns += said
    leaked, do_nothing = _official_rates(domain)
    passed = {v.task_id for v in verifications if v.passed}
    return RoundAudit(
        round=round,
        domain=domain,
        out_of_context=Rate(
            count=sum(
                bool(quality.out_of_context_answers(by_task[t.task_id].task, t.messages))
                for t in answered
            ),
            total=len(answered),
        ),
        brittle=Rate(count=sum(bool(quality.brittle_answers(t)) for t in plain), total=len(plain)),
        contradictions=Rate(
            count=sum(bool(quality.contradictions(t)) for t in plain), total=len(plain)
        ),
        leaked_ids=Rate(count=sum(bool(quality.leaked_ids(t)) for t in plain), total=len(plain)),
        official_leaked_ids=leaked,
        contamination=official_index(domain).hits(plain),
        exact_duplicates=Rate(count=sum(n - 1 for n in keys.values() if n > 1), total=len(plain)),
        near_duplicates=Rate(count=near_hits, total=len(plain)),
        do_nothing=_do_nothing(domain, plain),
        official_do_nothing=do_nothing,
        first_messages=Rate(count=len(set(firsts)), total=len(firsts)),
        user_templates_per_1000=1000 * len(set(turns)) / max(1, len(turns)),
        challenges_acted=challenges_acted(tasks, verifications),
        personas_acted=personas_acted(tasks, verifications),
        rejections=dict(Counter(r.stage for r in rejections)),
        repaired=sum(1 for v in verdicts.values() if v.passed and v.repair_attempts > 0),
        repaired_by=dict(
            Counter(
                _check_of(reason)
                for v in verdicts.values()
                if v.passed
                for reason in v.repaired_from
            )
        ),
        gold=gold_audit(
            domain,
            [t.messages for t in kept if (v := verdicts.get(t.trajectory_id)) and v.passed],
        ),
        shapes=coverage(domain, [t.task for t in tasks if t.task_id in passed]),
    )


_MEASURES = (
    ("answers out of context", "out_of_context"),
    ("brittle expected answers", "brittle"),
    ("contradictions", "contradictions"),
    ("internal ids in instructions", "leaked_ids"),
    ("  official tasks", "official_leaked_ids"),
    ("exact duplicates (ids masked)", "exact_duplicates"),
    ("near-identical instructions", "near_duplicates"),
    ("do-nothing passes", "do_nothing"),
    ("  official tasks", "official_do_nothing"),
    ("distinct first user messages", "first_messages"),
)


_GOLD = (
    ("gold: tool arguments the agent had not seen", "ungrounded"),
    ("gold: choices the user never named", "chosen_for_user"),
    ("gold: money-moving writes priced before the yes", "priced"),
    ("gold: internal ids told to the user", "internal_ids"),
    ("gold: identifiers asked for again", "repeated"),
    ("gold: template debris", "debris"),
    ("gold: agent turns another dialogue repeats", "shared_agent_turns"),
)


def _versus(count: int, total: int, official: int, official_total: int) -> str:
    """A synthesized share beside the official one: ``22.0% vs 20.0% official``."""
    return f"{count / max(1, total):.1%} vs {official / max(1, official_total):.1%} official"


def _per_task(count: int, total: int, official: int, official_total: int) -> str:
    """A synthesized mean per task beside the official one: ``3.98 vs 3.45 official``."""
    return f"{count / max(1, total):.2f} vs {official / max(1, official_total):.2f} official"


def _listed(names: Sequence[str]) -> str:
    return "; ".join(names) or "none"


def _device_actions(c: ShapeCoverage) -> str | None:
    if c.device_tool_sets is None:
        return None
    return _per_task(c.device_actions, c.tasks, c.official_device_actions, c.official_tasks)


def _troubleshooting(c: ShapeCoverage) -> str | None:
    if c.fault_kinds is None:
        return None
    return _versus(c.troubleshooting, c.tasks, c.official_troubleshooting, c.official_tasks)


#: The shape rows: label, then the cell of a round's coverage (None: the row is left out).
_SHAPES: tuple[tuple[str, Callable[[ShapeCoverage], str | None]], ...] = (
    ("shapes: verified tasks read / official tasks", lambda c: f"{c.tasks} / {c.official_tasks}"),
    ("shapes: official gold tools never made", lambda c: _listed(c.tools_never_made)),
    ("shapes: write combinations", lambda c: str(c.write_combinations)),
    (
        "shapes: >= 2 kinds of write",
        lambda c: _versus(c.multi_write, c.tasks, c.official_multi_write, c.official_tasks),
    ),
    (
        "shapes: official write combinations never made",
        lambda c: _listed(c.write_combinations.never_made),
    ),
    (
        "shapes: user-device tool sets",
        lambda c: None if c.device_tool_sets is None else str(c.device_tool_sets),
    ),
    ("shapes: user-device actions per task", _device_actions),
    ("shapes: fault kinds", lambda c: None if c.fault_kinds is None else str(c.fault_kinds)),
    ("shapes: troubleshooting tasks", _troubleshooting),
    (
        "shapes: official fault kinds never made",
        lambda c: None if c.fault_kinds is None else _listed(c.fault_kinds.never_made),
    ),
)


def shape_rows(audits: Sequence[RoundAudit]) -> list[list[str]]:
    """The official-shape coverage as rows of text: a measure, then its value in each round.

    A row a domain has no figure for (user-device tool sets outside telecom, fault kinds) is
    left out; a round without the figures shows ``-``.
    """
    rows = []
    for label, cell in _SHAPES:
        cells = [(cell(a.shapes) if a.shapes is not None else None) for a in audits]
        if any(c is not None for c in cells):
            rows.append([label, *(c if c is not None else "-" for c in cells)])
    return rows


def audit_rows(audits: Sequence[RoundAudit]) -> list[list[str]]:
    """The audit as rows of text: a measure, then its value in each round.

    The quality rows (:func:`quality_rows`), then the official-shape rows (:func:`shape_rows`).
    """
    return quality_rows(audits) + shape_rows(audits)


def quality_rows(audits: Sequence[RoundAudit]) -> list[list[str]]:
    """The quality measures as rows of text: a measure, then its value in each round."""
    rows = [[label, *(str(getattr(a, field)) for a in audits)] for label, field in _MEASURES]
    rows.append(
        ["distinct user turns per 1,000", *(f"{a.user_templates_per_1000:.0f}" for a in audits)]
    )
    for label, field in _GOLD:
        rows.append([label, *(str(getattr(a.gold, field)) for a in audits)])
    acted = (("challenge", "challenges_acted"), ("persona", "personas_acted"))
    for label, field in acted:
        for value in sorted({v for a in audits for v in getattr(a, field)}):
            empty = Rate(count=0, total=0)
            cells = [str(getattr(a, field).get(value, empty)) for a in audits]
            rows.append([f"{label} acted out: {value}", *cells])
    for kind in audits[0].contamination if audits else {}:
        rows.append([f"official overlap: {kind}", *(str(a.contamination[kind]) for a in audits)])
    for stage in sorted({s for a in audits for s in a.rejections}):
        rows.append([f"rejected at {stage}", *(str(a.rejections.get(stage, 0)) for a in audits)])
    rows.append(["verified after repair", *(str(a.repaired) for a in audits)])
    for check in sorted({c for a in audits for c in a.repaired_by}):
        rows.append(
            [f"  repaired a {check} failure", *(str(a.repaired_by.get(check, 0)) for a in audits)]
        )
    return rows


def audit_campaign(lake: Lake, campaign_id: str, domain: str) -> list[RoundAudit]:
    """One :class:`RoundAudit` per round of ``campaign_id`` that synthesized tasks."""
    tasks = lake.read(SynthTask, campaign_id)
    trajectories = lake.read(Trajectory, campaign_id)
    verifications = lake.read(Verification, campaign_id)
    rejections = lake.read(Rejection, campaign_id)
    rounds = sorted({t.round for t in tasks} | {r.round for r in rejections})
    return [
        audit_round(
            domain,
            r,
            [t for t in tasks if t.round == r],
            [t for t in trajectories if t.round == r],
            [v for v in verifications if v.round == r],
            [x for x in rejections if x.round == r],
        )
        for r in rounds
    ]
