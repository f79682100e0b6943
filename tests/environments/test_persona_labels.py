"""The persona detectors against synthesized dialogues labelled by hand: precision and recall.

``labels/personas.jsonl`` holds 36 dialogues (12 per domain, two per persona the generators
ask for) that ``evosyn synth --n 400 --seed 21`` produced once the programmatic user acted
personas out. Each line keeps the messages as stored (the system prompt left out) and the
persona kinds a reader of the user's turns says they show, per the definitions in
:mod:`evosyn.environments.dialogue_acts` (``brief`` and ``busy`` may both show). Where a label
needed a judgement, the line's ``note`` says which (a plain request for speed shows ``busy``).

Run ``.venv/bin/pytest tests/environments/test_persona_labels.py -s`` for the table.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from tau2.data_model.message import Message

from evosyn.environments.dialogue_acts import PERSONA_KINDS, realized_personas

DATA = Path(__file__).parent / "labels" / "personas.jsonl"
DOMAINS = ("airline", "retail", "telecom")
FLOOR = 0.9
MIN_SUPPORT = 5
KINDS = tuple(kind for kind, _ in PERSONA_KINDS)

_MESSAGES = TypeAdapter(list[Message])


@cache
def _labelled() -> tuple[tuple[str, str, frozenset[str], frozenset[str]], ...]:
    """(id, domain, labelled kinds, detected kinds) per labelled dialogue."""
    rows = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        detected = realized_personas(_MESSAGES.validate_python(row["messages"]))
        rows.append((row["id"], row["domain"], frozenset(row["personas"]), frozenset(detected)))
    return tuple(rows)


def _counts(kind: str, domain: str | None = None) -> tuple[int, int, int]:
    """True positives, false positives and false negatives of ``kind``'s detector."""
    rows = [r for r in _labelled() if domain is None or r[1] == domain]
    tp = sum(kind in r[2] and kind in r[3] for r in rows)
    fp = sum(kind not in r[2] and kind in r[3] for r in rows)
    fn = sum(kind in r[2] and kind not in r[3] for r in rows)
    return tp, fp, fn


def test_labelled_set_covers_every_kind_in_every_domain() -> None:
    rows = _labelled()
    assert len({r[0] for r in rows}) == len(rows)
    for domain in DOMAINS:
        assert sum(r[1] == domain for r in rows) >= 10, domain
    for kind in KINDS:
        assert sum(kind in r[2] for r in rows) >= MIN_SUPPORT, f"too few positives of {kind}"
        assert any(kind not in r[2] for r in rows), f"no negative for {kind}"
    assert all(r[2] <= set(KINDS) for r in rows)


def test_print_table() -> None:
    """Prints precision and recall per kind and every disagreement (run with ``-s``)."""
    print(f"\n{'persona':10}{'P':>7}{'R':>7}{'n+':>5}")
    for kind in KINDS:
        tp, fp, fn = _counts(kind)
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        print(f"{kind:10}{precision:7.2f}{recall:7.2f}{tp + fn:5}")
    for id_, _, labelled, detected in _labelled():
        if labelled != detected:
            print(f"  {id_}: labelled {sorted(labelled)} detected {sorted(detected)}")


@pytest.mark.parametrize("kind", KINDS)
def test_detector_meets_floor(kind: str) -> None:
    failures = []
    for domain in (*DOMAINS, None):
        tp, fp, fn = _counts(kind, domain)
        where = domain or "all domains"
        if tp + fp >= MIN_SUPPORT and tp / (tp + fp) < FLOOR:
            failures.append(f"{where}: precision {tp}/{tp + fp}")
        if tp + fn >= MIN_SUPPORT and tp / (tp + fn) < FLOOR:
            failures.append(f"{where}: recall {tp}/{tp + fn}")
    assert not failures, f"{kind}: " + "; ".join(failures)
