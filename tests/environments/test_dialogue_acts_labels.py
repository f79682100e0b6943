"""The challenge detectors against synthesized dialogues labelled by hand: precision and recall.

``labels/dialogue_acts.jsonl`` holds 127 dialogues (airline 38, retail 49, telecom 40): 111 that
``evosyn synth --n 60 --seed 11`` produced (verified ones, ones rejected at ``realize`` and ones
that requested no challenge), 15 (ids ``s21-...``) from ``--n 400 --seed 21`` once retail
and telecom callers could leave a payment method or a refuel amount open: five each of retail
``preference_change``, retail ``constraint_hidden_until_late`` and telecom
``preference_change``, and 1 (``... (n100 s5)``) from retail ``--n 100 --seed 5``.
Each line keeps the messages as stored (the system prompt left out)
and the challenges a reader of the dialogue says it acts out, labelled blind (neither the request
nor the detectors' output was shown) against the definitions in ``docs/quality.md``. Where a label
needed a judgement, the line's ``note`` says which.

Run ``.venv/bin/pytest tests/environments/test_dialogue_acts_labels.py -s`` for the table.
A detector must reach :data:`FLOOR` precision once it fires on :data:`MIN_SUPPORT` dialogues,
and :data:`FLOOR` recall once :data:`MIN_SUPPORT` dialogues act the challenge out, over all
domains and within each domain. :data:`KNOWN_POOR` lists the detectors that do not, and why;
their checks are strict expected failures, so fixing one makes the test say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from tau2.data_model.message import Message

from evosyn.environments.dialogue_acts import DETECTORS, realized_challenges

DATA = Path(__file__).parent / "labels" / "dialogue_acts.jsonl"
DOMAINS = ("airline", "retail", "telecom")
FLOOR = 0.9
MIN_SUPPORT = 5
MIN_PER_DOMAIN = 30

#: Detectors measured below the floor on these labels, and why (see docs/quality.md).
KNOWN_POOR: dict[str, str] = {}


_MESSAGES = TypeAdapter(list[Message])


@dataclass(frozen=True)
class Labelled:
    id: str
    domain: str
    acted: frozenset[str]
    detected: frozenset[str]
    note: str


@cache
def _labelled() -> tuple[Labelled, ...]:
    rows = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        messages = _MESSAGES.validate_python(row["messages"])
        rows.append(
            Labelled(
                id=row["id"],
                domain=row["domain"],
                acted=frozenset(row["acted"]),
                detected=frozenset(realized_challenges(messages)),
                note=row.get("note", ""),
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class Score:
    tp: int
    fp: int
    fn: int

    @property
    def positives(self) -> int:
        return self.tp + self.fn

    @property
    def fired(self) -> int:
        return self.tp + self.fp

    @property
    def precision(self) -> float | None:
        return self.tp / self.fired if self.fired else None

    @property
    def recall(self) -> float | None:
        return self.tp / self.positives if self.positives else None


def _score(challenge: str, domain: str | None = None) -> Score:
    rows = [r for r in _labelled() if domain is None or r.domain == domain]
    tp = sum(challenge in r.acted and challenge in r.detected for r in rows)
    fp = sum(challenge not in r.acted and challenge in r.detected for r in rows)
    fn = sum(challenge in r.acted and challenge not in r.detected for r in rows)
    return Score(tp, fp, fn)


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.2f} "


def table() -> str:
    """Precision, recall and labelled positives per challenge, per domain and overall."""
    head = f"{'challenge':30}" + "".join(f"{d:>20}" for d in (*DOMAINS, "all"))
    lines = [head, f"{'':30}" + f"{'P     R    n+':>20}" * (len(DOMAINS) + 1)]
    for challenge in sorted(DETECTORS):
        cells = []
        for domain in (*DOMAINS, None):
            s = _score(challenge, domain)
            cells.append(f"{_fmt(s.precision)} {_fmt(s.recall)}{s.positives:>3}".rjust(20))
        lines.append(f"{challenge:30}" + "".join(cells))
    return "\n".join(lines)


def _disagreements() -> list[str]:
    out = []
    for r in _labelled():
        if r.acted != r.detected:
            missed = sorted(r.acted - r.detected)
            extra = sorted(r.detected - r.acted)
            out.append(f"{r.id}: missed {missed} extra {extra}  ({r.note})")
    return out


def test_labelled_set_is_big_enough_and_balanced() -> None:
    rows = _labelled()
    for domain in DOMAINS:
        assert sum(r.domain == domain for r in rows) >= MIN_PER_DOMAIN, domain
    assert len({r.id for r in rows}) == len(rows)
    for challenge in DETECTORS:
        assert any(challenge in r.acted for r in rows), f"no positive for {challenge}"
        assert any(challenge not in r.acted for r in rows), f"no negative for {challenge}"
    assert all(r.acted <= set(DETECTORS) for r in rows)


def test_print_table() -> None:
    """Prints the table and every disagreement (run with ``-s``)."""
    print("\n" + table())
    print("\ndisagreements (labelled vs detected):")
    for line in _disagreements():
        print("  " + line)


def _params() -> list[object]:
    marks = {
        c: pytest.mark.xfail(reason=f"known poor: {why}", strict=True)
        for c, why in KNOWN_POOR.items()
    }
    return [pytest.param(c, marks=marks.get(c, ()), id=c) for c in sorted(DETECTORS)]


@pytest.mark.parametrize("challenge", _params())
def test_detector_meets_floor(challenge: str) -> None:
    failures = []
    for domain in (*DOMAINS, None):
        s = _score(challenge, domain)
        where = domain or "all domains"
        if s.fired >= MIN_SUPPORT and s.precision is not None and s.precision < FLOOR:
            failures.append(f"{where}: precision {s.precision:.2f} ({s.tp}/{s.fired})")
        if s.positives >= MIN_SUPPORT and s.recall is not None and s.recall < FLOOR:
            failures.append(f"{where}: recall {s.recall:.2f} ({s.tp}/{s.positives})")
    assert not failures, f"{challenge}: " + "; ".join(failures)
