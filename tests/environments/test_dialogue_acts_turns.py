"""The per-turn detectors on turns a capable model wrote, labelled by hand: precision and recall.

The blind programmatic agent reacts to what the user just said with the per-turn detectors of
:mod:`~evosyn.environments.dialogue_acts_turns`. ``labels/model_written_turns/``
labels every user turn of the three model-written sets (``labels/model_written/``,
``labels/model_written_heldout/`` and ``labels/model_written_fresh/``, 1089 turns) for each user
act, and the agent's first two replies after the opening (366 turns) for
:func:`asks_what_exactly`; its README says how and by whom. A turn is positive where
``turns.json`` lists it (``"<dialogue id>#<message index>"``).

Run ``.venv/bin/pytest tests/environments/test_dialogue_acts_turns.py -s`` for the table and
every disagreement. Each detector must reach :data:`FLOOR` precision once it fires on
:data:`MIN_SUPPORT` turns and :data:`FLOOR` recall once :data:`MIN_SUPPORT` turns are positive,
in each set; :data:`KNOWN_POOR` lists where it does not, and why (strict expected failures).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from evosyn.environments import dialogue_acts_turns
from tests.environments.test_dialogue_acts_labels import Score

LABELS = Path(__file__).parent / "labels"
DATA = LABELS / "model_written_turns" / "turns.json"
SETS = ("model_written", "model_written_heldout", "model_written_fresh", "model_written_fresh2")
FLOOR = 0.9
MIN_SUPPORT = 5
#: The per-turn detectors, each read on one turn's words.
PER_TURN: dict[str, Callable[[str], bool]] = {
    "says_missing": dialogue_acts_turns.says_missing,
    "says_vaguely": dialogue_acts_turns.says_vaguely,
    "claims_approval": dialogue_acts_turns.claims_approval,
    "presses": dialogue_acts_turns.presses,
    "new_to_it": dialogue_acts_turns.new_to_it,
    "asks_what_exactly": dialogue_acts_turns.asks_what_exactly,
}

#: (set, detector) -> its measured figure and why it is below the floor.
#: Why the second fresh set's figures are below the floor: it was written blind to round 4
#: of the detectors, whose regexes, fitted on one set's phrasings, miss another's.
BLIND_TO_ROUND_4 = "second fresh set, blind to round 4 (docs/quality.md)"

KNOWN_POOR: dict[tuple[str, str], str] = {
    ("model_written_fresh2", "says_vaguely"): "R 0.64 (9/14): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "claims_approval"): "R 0.65 (13/20): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "presses"): "R 0.77 (48/62): " + BLIND_TO_ROUND_4,
    ("model_written_fresh2", "new_to_it"): "R 0.69 (18/26): " + BLIND_TO_ROUND_4,
    # None on the first three sets since round 4. The fresh set, measured blind first
    # (docs/quality.md), is no longer blind: round 4 read its disagreements.
}


@cache
def _labels() -> dict[str, object]:
    data: dict[str, object] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _turns(name: str, scope: str) -> dict[str, str]:
    """The turns of set ``name`` that ``scope`` takes, by ``"<id>#<index>"``.

    ``user``: every user turn with words; ``agent_opening``: the agent's first two turns with
    words after the user's first.
    """
    out: dict[str, str] = {}
    for path in sorted((LABELS / name).glob("*.json")):
        row = json.loads(path.read_text(encoding="utf-8"))
        said = [
            (i, m["role"], m["content"]) for i, m in enumerate(row["messages"]) if m.get("content")
        ]
        if scope == "user":
            picked = [(i, text) for i, role, text in said if role == "user"]
        else:
            opening = next(i for i, role, _ in said if role == "user")
            picked = [(i, text) for i, role, text in said if role == "assistant" and i > opening]
            picked = picked[:2]
        out.update({f"{row['id']}#{i}": text for i, text in picked})
    return out


def _score(name: str, detector: str) -> tuple[Score, list[str]]:
    """The detector's score on set ``name`` and its disagreements, one line each."""
    scope = _labels()["scope"]
    positives = _labels()["positives"]
    assert isinstance(scope, dict) and isinstance(positives, dict)
    turns = _turns(name, scope[detector])
    wanted = set(positives[detector][name])
    found = {key for key, text in turns.items() if PER_TURN[detector](text)}
    lines = [f"{detector} missed {k}: {turns[k][:160]!r}" for k in sorted(wanted - found)]
    lines += [f"{detector} extra {k}: {turns[k][:160]!r}" for k in sorted(found - wanted)]
    return Score(tp=len(found & wanted), fp=len(found - wanted), fn=len(wanted - found)), lines


def test_labels_name_turns_that_exist_and_are_said_by_the_right_side() -> None:
    scope = _labels()["scope"]
    positives = _labels()["positives"]
    assert isinstance(scope, dict) and isinstance(positives, dict)
    assert set(scope) == set(PER_TURN) == set(positives)
    for detector, by_set in positives.items():
        for name in SETS:
            turns = _turns(name, scope[detector])
            assert set(by_set[name]) <= set(turns), (detector, set(by_set[name]) - set(turns))
    assert len(_turns("model_written", "user")) + len(_turns("model_written_heldout", "user")) > 600


@pytest.mark.parametrize("name", SETS)
def test_print_table(name: str) -> None:
    """Prints precision, recall, positives and firings, and every disagreement (``-s``)."""
    print(f"\n{name}\n{'detector':20}{'P':>7}{'R':>7}{'n+':>5}{'fired':>7}")
    notes = []
    for detector in PER_TURN:
        s, lines = _score(name, detector)
        p = "  -  " if s.precision is None else f"{s.precision:.2f}"
        r = "  -  " if s.recall is None else f"{s.recall:.2f}"
        print(f"{detector:20}{p:>7}{r:>7}{s.positives:>5}{s.fired:>7}")
        notes += lines
    for line in notes:
        print("  " + line)


def _params() -> list[object]:
    params: list[object] = []
    for name in SETS:
        for detector in PER_TURN:
            why = KNOWN_POOR.get((name, detector))
            marks = pytest.mark.xfail(reason=f"known poor: {why}", strict=True) if why else ()
            params.append(pytest.param(name, detector, marks=marks, id=f"{name}-{detector}"))
    return params


@pytest.mark.parametrize(("name", "detector"), _params())
def test_per_turn_detector_meets_floor(name: str, detector: str) -> None:
    s, lines = _score(name, detector)
    failures = []
    if s.fired >= MIN_SUPPORT and s.precision is not None and s.precision < FLOOR:
        failures.append(f"precision {s.precision:.2f} ({s.tp}/{s.fired})")
    if s.positives >= MIN_SUPPORT and s.recall is not None and s.recall < FLOOR:
        failures.append(f"recall {s.recall:.2f} ({s.tp}/{s.positives})")
    assert not failures, f"{detector} on {name}: " + "; ".join(failures) + "\n" + "\n".join(lines)
