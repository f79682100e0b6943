"""Telecom troubleshooting composed from τ²-bench's faults: kinds, shapes and the dialogue."""

from __future__ import annotations

import collections

import pytest
from synthesis_checks import hand_blueprint, verified_rollout
from tau2.data_model.message import ToolMessage, UserMessage

from evosyn.agents.verifier import ReplayVerifier
from evosyn.environments import FunctionalSymbol, get_domain
from evosyn.environments.telecom import faults
from evosyn.environments.telecom.generator import TelecomGenerator
from evosyn.environments.telecom.teacher import TelecomTeacher


@pytest.fixture(scope="module")
def generator() -> TelecomGenerator:
    return TelecomGenerator()


def test_fault_kinds_read_the_official_tasks_as_their_ids_name_them() -> None:
    for task in get_domain("telecom").tasks("base"):
        named = task.id.split("]", 1)[1].split("[", 1)[0].split("|")
        assert faults.fault_kinds(task) == sorted(named), task.id


def test_every_combo_is_a_valid_composition() -> None:
    for symptom in faults.SYMPTOMS:
        for combo in faults.combos(symptom):
            groups = [faults.FAULTS[n].group for n in combo.faults]
            assert len(groups) == len(set(groups)) <= faults.MAX_FAULTS
            assert set(groups) & faults.CORE[symptom]
            assert set(combo.seen) <= set(combo.faults)
            steps = combo.steps()
            # Each fault's fix comes after its check, unless the caller saw it on the bar.
            for name in combo.faults:
                if name in combo.seen:
                    continue
                check = steps.index(("check", faults.FAULTS[name].check))
                fix = steps.index(("fix", faults.FAULTS[name].fixes[0]))
                assert check < fix
            assert [c for k, c in steps if k == "fix"].count(("reboot_device", {})) <= 1


def test_synthesized_tasks_cover_every_official_fault_kind(generator: TelecomGenerator) -> None:
    official = {k for t in get_domain("telecom").tasks("base") for k in faults.fault_kinds(t)}
    found: collections.Counter[str] = collections.Counter()
    for family, outcome in (
        ("service_troubleshooting", "fulfill"),
        ("service_troubleshooting", "refuse"),
        ("plan_change", "fulfill"),
        ("line_management", "fulfill"),
        ("line_management", "refuse"),
    ):
        for index in range(40):
            bp = hand_blueprint(
                family,
                outcome,
                focus=["eligibility_check"],
                patterns=[],
                difficulty="hard",
                blueprint_id=f"bp-kinds-{family}-{outcome}-{index}",
            )
            found.update(faults.fault_kinds(generator.generate(bp, seed=index).task))
    assert official <= set(found), sorted(official - set(found))


@pytest.mark.parametrize("seed", range(4))
def test_a_fix_is_named_only_after_the_user_reported_what_shows_it(
    seed: int, generator: TelecomGenerator
) -> None:
    domain = get_domain("telecom")
    bp = hand_blueprint(
        "service_troubleshooting",
        "fulfill",
        focus=["eligibility_check"],
        patterns=[],
        difficulty="hard",
        blueprint_id=f"bp-report-{seed}",
    )
    task = generator.generate(bp, seed=seed)
    assert task.task.description.purpose.startswith("Troubleshooting")
    _, messages = verified_rollout(task, TelecomTeacher(), ReplayVerifier("telecom"))
    reported = False
    fixes = 0
    for message in messages:
        if isinstance(message, ToolMessage) and message.requestor == "user":
            reported = True
        if isinstance(message, UserMessage) and "status bar shows" in (message.content or ""):
            reported = True
        for call in getattr(message, "tool_calls", None) or []:
            if call.requestor == "user" and domain.symbol(call.name, "user") == (
                FunctionalSymbol.WRITE
            ):
                assert reported, call.name
                fixes += 1
    assert fixes >= 2
