"""The challenge and persona detectors on dialogues a capable model wrote, not our Teacher.

``labels/model_written/`` holds 63 dialogues written blind to the detectors (its README says
how), each with the challenges it acts out and the persona kinds it shows, labelled by hand;
``labels/model_written_heldout/``, where present, holds more written the same way by someone
else. Their labels judge what the task *requested*: ``challenges_acted`` lists the requested
challenges the user acts out, ``personas_shown`` the requested persona kind if shown (no
dialogue lists another). So every figure is given twice:

* **strict**: every detection counts, against the complete labels ``challenges_all`` and
  ``personas_all`` (everything the user shows, requested or not, added by a second session
  blind to the detectors; each README says how). A challenge name is scored only in the
  domains whose ontology offers it (airline's
  ``ambiguous_preference`` is retail's and telecom's ``ambiguous_request``: one detector);
* **judged**: only what the labels judge: a challenge on the dialogues that requested it, a
  persona kind on the dialogues whose persona line asks for it.

Personas are read with the task's persona line (``realized_personas(messages, persona)``),
as synthesis knows it. Run ``.venv/bin/pytest tests/environments/test_model_written_labels.py
-s`` for the tables and every disagreement. Each detector must reach :data:`FLOOR` precision
once it fires :data:`MIN_SUPPORT` times and :data:`FLOOR` recall once :data:`MIN_SUPPORT`
dialogues are positive, both ways; :data:`KNOWN_POOR` lists where it does not, and why (strict
expected failures, so a fix makes the test say so).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml
from pydantic import TypeAdapter
from tau2.data_model.message import Message

from evosyn.environments.dialogue_acts import (
    DETECTORS,
    PERSONA_KINDS,
    persona_kind,
    realized_challenges,
    realized_personas,
)
from evosyn.environments.registry import domain_plugin
from tests.environments.test_dialogue_acts_labels import Score

LABELS = Path(__file__).parent / "labels"
SETS = ("model_written", "model_written_heldout", "model_written_fresh", "model_written_fresh2")
FLOOR = 0.9
MIN_SUPPORT = 5
KINDS = tuple(kind for kind, _ in PERSONA_KINDS)

#: (set, detector, way) -> its measured figure and why it is below the floor (docs/quality.md).
#: The held-out set was written blind, but round 2 of the detectors read it: it is no longer
#: blind.
#: Why the second fresh set's figures are below the floor: it was written blind to round 4
#: of the detectors, whose regexes, fitted on one set's phrasings, miss another's.
BLIND_TO_ROUND_4 = "second fresh set, blind to round 4 (docs/quality.md)"

KNOWN_POOR: dict[tuple[str, str, str], str] = {
    ("model_written_fresh2", "ambiguous_request", "strict"): "R 0.62 (8/13): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "ambiguous_request", "judged"): "R 0.62 (8/13): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "constraint_hidden_until_late", "strict"): "R 0.40 (2/5): "
    + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "emotional_pressure", "strict"): "R 0.67 (16/24): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "emotional_pressure", "judged"): "R 0.67 (16/24): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "multi_intent_interleaving", "strict"): "R 0.82 (9/11): "
    + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "preference_change", "strict"): "P 0.80 (4/5), R 0.67 (4/6): "
    + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "preference_change", "judged"): "R 0.67 (4/6): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "user_false_claim", "strict"): "R 0.56 (10/18): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "user_false_claim", "judged"): "R 0.56 (10/18): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "novice", "strict"): "R 0.76 (13/17): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "novice", "judged"): "R 0.76 (13/17): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "careful", "strict"): "P 0.57 (4/7), R 0.50 (4/8): "
    + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "careful", "judged"): "R 0.50 (4/8): " + BLIND_TO_ROUND_4,
    # The fresh set was measured blind first (docs/quality.md, round 4); round 4 read its
    # disagreements, so it is no longer blind. What stays below the floor, and why:
    (
        "model_written_fresh",
        "ambiguous_preference",
        "strict",
    ): 'R 0.80 (4/5): airline-06 names the act ("need to cancel one of my trips") and is vague '
    "only about which trip; the detector, like the per-turn labels, reads vague as not saying "
    "what is to be done",
    (
        "model_written_fresh",
        "ambiguous_preference",
        "judged",
    ): "R 0.80 (4/5): airline-06, as in strict",
    (
        "model_written_fresh",
        "emotional_pressure",
        "strict",
    ): "P 0.88 (14/16), R 0.88 (14/16): retail-09's agent never acknowledges the hurry; "
    'telecom-20\'s "I just told you" + "Sorry about that" is labelled pressure while the '
    "same exchange in model_written telecom-14 is not; airline-14 and retail-07 ask for speed "
    "and hear \"I'll be quick\", labelled busy only, while retail-09's bare hurry is labelled "
    "pressure",
    (
        "model_written_fresh",
        "emotional_pressure",
        "judged",
    ): "R 0.86 (12/14): retail-09 and telecom-20, as in strict",
    (
        "model_written_fresh",
        "preference_change",
        "strict",
    ): "R 0.57 (4/7): no mind changed after a proposal: airline-03 changes date and cabin while "
    "still giving the trip's details, airline-04 and airline-16 settle before any proposal "
    "what they wavered on in the opening",
    (
        "model_written_fresh",
        "preference_change",
        "judged",
    ): "R 0.57 (4/7): airline-03, airline-04, airline-16, as in strict",
    ("model_written_heldout", "brief", "strict"): "R 0.88 (7/8): a user asked to be careful "
    "who is only curt; brief is claimed only where the persona line asks for it",
}

_MESSAGES = TypeAdapter(list[Message])


@dataclass(frozen=True)
class Dialogue:
    id: str
    domain: str
    requested: frozenset[str]
    persona: str | None
    acted: frozenset[str]
    shown: frozenset[str]
    acted_all: frozenset[str]
    shown_all: frozenset[str]
    detected: frozenset[str]
    detected_personas: frozenset[str]


@cache
def _dialogues(name: str) -> tuple[Dialogue, ...]:
    rows = []
    for path in sorted((LABELS / name).glob("*.json")):
        row = json.loads(path.read_text(encoding="utf-8"))
        messages = _MESSAGES.validate_python(row["messages"])
        persona = row.get("requested_persona")
        rows.append(
            Dialogue(
                id=row["id"],
                domain=row["domain"],
                requested=frozenset(row.get("requested_challenges", [])),
                persona=persona,
                acted=frozenset(row["labels"]["challenges_acted"]),
                shown=frozenset(row["labels"]["personas_shown"]),
                acted_all=frozenset(row["labels"]["challenges_all"]),
                shown_all=frozenset(row["labels"]["personas_all"]),
                detected=frozenset(realized_challenges(messages)),
                detected_personas=frozenset(realized_personas(messages, persona)),
            )
        )
    return tuple(rows)


@cache
def _offered(domain: str) -> frozenset[str]:
    """The interaction challenges ``domain``'s seed ontology offers."""
    ontology = yaml.safe_load(domain_plugin(domain).ontology.read_text(encoding="utf-8"))
    factor = next(f for f in ontology["factors"] if f["name"] == "interaction_challenge")
    return frozenset(factor["values"])


def _judges(name: str, way: str) -> Callable[[Dialogue], bool]:
    """Which dialogues score detector ``name`` the ``way`` asked ("strict" or "judged")."""
    if name in KINDS:
        if way == "strict":
            return lambda d: True
        return lambda d: persona_kind(d.persona) == name
    if way == "strict":
        return lambda d: name in _offered(d.domain)
    return lambda d: name in d.requested


def _score(rows: tuple[Dialogue, ...], name: str, way: str) -> Score:
    judged = [d for d in rows if _judges(name, way)(d)]
    strict = way == "strict"
    if name in KINDS:
        pairs = [
            (name in (d.shown_all if strict else d.shown), name in d.detected_personas)
            for d in judged
        ]
    else:
        pairs = [(name in (d.acted_all if strict else d.acted), name in d.detected) for d in judged]
    return Score(
        tp=sum(label and found for label, found in pairs),
        fp=sum(found and not label for label, found in pairs),
        fn=sum(label and not found for label, found in pairs),
    )


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.2f} "


def table(name: str) -> str:
    """Precision, recall, positives and firings per detector, strict and judged."""
    rows = _dialogues(name)
    head = f"{'detector':30}" + "".join(f"{w:>26}" for w in ("strict", "judged"))
    lines = [head, f"{'':30}" + f"{'P     R    n+  fired':>26}" * 2]
    for detector in (*sorted(DETECTORS), *KINDS):
        cells = []
        for way in ("strict", "judged"):
            s = _score(rows, detector, way)
            cell = f"{_fmt(s.precision)} {_fmt(s.recall)}{s.positives:>3} {s.fired:>5}"
            cells.append(cell.rjust(26))
        lines.append(f"{detector:30}" + "".join(cells))
    return "\n".join(lines)


def _disagreements(name: str) -> list[str]:
    out = []
    for d in _dialogues(name):
        offered = _offered(d.domain)
        for label, found, what in (
            (d.acted_all, d.detected & offered, "challenges"),
            (d.shown_all, d.detected_personas, "personas"),
        ):
            if label != found:
                asked = sorted(d.requested) if what == "challenges" else persona_kind(d.persona)
                out.append(
                    f"{d.id} {what}: missed {sorted(label - found)} "
                    f"extra {sorted(found - label)} (requested {asked})"
                )
    return out


def _present() -> list[str]:
    return [name for name in SETS if (LABELS / name).is_dir() and _dialogues(name)]


def test_the_first_set_is_there_and_labels_known_names() -> None:
    rows = _dialogues("model_written")
    assert len(rows) >= 60
    assert len({d.id for d in rows}) == len(rows)
    for name in _present():
        for d in _dialogues(name):
            assert d.acted <= set(DETECTORS), d.id
            assert d.shown <= set(KINDS), d.id


@pytest.mark.parametrize("name", SETS)
def test_print_tables(name: str) -> None:
    """Prints both tables and every disagreement (run with ``-s``)."""
    if name not in _present():
        pytest.skip(f"no labels/{name}/ here")
    print(f"\n{name} ({len(_dialogues(name))} dialogues)\n" + table(name))
    for line in _disagreements(name):
        print("  " + line)


def _params() -> list[object]:
    params: list[object] = []
    for name in SETS:
        for detector in (*sorted(DETECTORS), *KINDS):
            for way in ("strict", "judged"):
                why = KNOWN_POOR.get((name, detector, way))
                marks = pytest.mark.xfail(reason=f"known poor: {why}", strict=True) if why else ()
                params.append(
                    pytest.param(name, detector, way, marks=marks, id=f"{name}-{detector}-{way}")
                )
    return params


@pytest.mark.parametrize(("name", "detector", "way"), _params())
def test_detector_meets_floor(name: str, detector: str, way: str) -> None:
    if name not in _present():
        pytest.skip(f"no labels/{name}/ here")
    s = _score(_dialogues(name), detector, way)
    failures = []
    if s.fired >= MIN_SUPPORT and s.precision is not None and s.precision < FLOOR:
        failures.append(f"precision {s.precision:.2f} ({s.tp}/{s.fired})")
    if s.positives >= MIN_SUPPORT and s.recall is not None and s.recall < FLOOR:
        failures.append(f"recall {s.recall:.2f} ({s.tp}/{s.positives})")
    assert not failures, f"{detector} ({way}): " + "; ".join(failures)
