"""Telecom troubleshooting: phone faults, roaming abroad, and what is escalated."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.grounding import Step
from evosyn.environments.telecom import faults
from evosyn.environments.telecom.drafts import (
    _assert,
    _Draft,
    _escalated,
    _init,
    _refused,
    _Request,
)
from evosyn.environments.telecom.wording import (
    ROAMING_FOR,
    SYMPTOM_FIXED,
    SYMPTOM_REASONS,
    SYMPTOM_SOLVED,
)

if TYPE_CHECKING:
    from evosyn.environments.telecom.generator import TelecomGenerator


_COUNTRIES = ("France", "Japan", "Mexico", "Italy", "Canada", "Spain")


def _abroad(draft: _Draft, rng: random.Random) -> None:
    """The caller's phone is abroad, its roaming switch on, roaming off on its line."""
    draft.known.append(f"You are currently abroad in {rng.choice(_COUNTRIES)}.")
    draft.init.append(_init("user", "set_user_location", abroad=True))
    if draft.line.roaming_enabled:
        draft.init.append(_init("assistant", "disable_roaming", **draft.account))
    # The phone's own roaming switch is on unless a phone fault turns it off.
    draft.init.append(_init("user", "turn_roaming_on"))
    draft.assertions.append(_assert("user", "assert_mobile_roaming_status", expected_status=True))
    draft.data_works = True


def _fixes(gen: TelecomGenerator, request: _Request) -> _Draft:
    owner, record = gen._pick(request, gen._active)
    draft = _Draft(
        owner,
        record,
        reason="Your phone is not working properly.",
        purpose="Troubleshooting: the user fixes the faults the agent diagnoses on the phone.",
        troubleshooting=True,
    )
    return draft


def _roaming(gen: TelecomGenerator, request: _Request, own: bool = False) -> _Draft:
    """Roaming enabled on a line abroad, the caller's own or another of their account.

    Another (its user abroad; the caller's phone at home and fine) only where no phone
    fault is asked for and not ``own``.
    """
    rng = request.rng
    option = request.option
    others = not own and (option.fixes, option.checks) == (0, 0)
    pool = [
        (owner, record, phone)
        for owner, record in gen._active
        for phone in (gen._phones(owner, record) if others else [None])
    ]
    owner, record, phone = gen._pick(request, pool)
    args = {"customer_id": owner.customer_id, "line_id": record.line_id}
    if phone is None:
        draft = _Draft(
            owner,
            record,
            reason="You are travelling abroad and your mobile data does not work here.",
            purpose="Troubleshooting abroad: roaming is enabled on the line.",
            troubleshooting=True,
        )
        _abroad(draft, rng)
    else:
        country = rng.choice(_COUNTRIES)
        draft = _Draft(
            owner,
            record,
            reason=say(rng, ROAMING_FOR, number=record.phone_number, country=country),
            purpose="Roaming enabled on another line of the caller's account, abroad.",
            phone=phone,
        )
        if record.roaming_enabled:
            draft.init.append(_init("assistant", "disable_roaming", **args))
    draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
    draft.steps.append(Step("enable_roaming", args))
    draft.note = f"roaming is enabled on the line {record.phone_number} at no cost"
    return draft


def _faults(draft: _Draft, request: _Request) -> None:
    """Phone faults set up at the start; the user checks and fixes each on the phone.

    The checks and fixes come before the account work, the one restart last; the symptom
    the faults cause is what the caller reports.
    """
    option = request.option
    rng = request.rng
    combos = option.combos()
    symptoms = sorted({c.symptom for c in combos})
    if not symptoms or not symptoms[0] or draft.phone is not None:
        return  # no symptom, or the caller's phone is not the line the task is about
    if request.fault is not None:
        # Only the sets of faults that have the requested one (the shape has some).
        combos = tuple(c for c in combos if request.fault in c.faults)
        symptoms = sorted({c.symptom for c in combos})
    symptom = rng.choice(symptoms)
    combo = rng.choice([c for c in combos if c.symptom == symptom])
    if not combo.faults and option.form.optional:
        return  # the phone is fine: nothing to report
    draft.symptom = symptom
    draft.phone_faults = combo.faults
    if not draft.note:
        draft.note = SYMPTOM_FIXED[symptom]
    handset = draft.handset
    for name in combo.faults:
        fault = faults.FAULTS[name]
        line_blocks = not any(c.func_name == "disable_roaming" for c in draft.init)
        if fault.group == "roaming" and not handset.roaming_enabled and line_blocks:
            # Roaming abroad is allowed on the line; only the phone's switch is off.
            draft.init.append(
                _init(
                    "assistant",
                    "enable_roaming",
                    customer_id=draft.customer.customer_id,
                    line_id=handset.line_id,
                )
            )
        draft.init += [_init("user", func, **args) for func, args in fault.breaks]
        if fault.group == "roaming" and not any("abroad in" in k for k in draft.known):
            draft.known.append(f"You are currently abroad in {rng.choice(_COUNTRIES)}.")
    phone: list[Step] = []
    for _, (tool, arguments) in combo.steps(option.form.reboot):
        step = Step(tool, dict(arguments), "user")
        if tool == "reboot_device":
            draft.tail.insert(0, step)
        else:
            phone.append(step)
    draft.steps[0:0] = phone
    said = say(rng, SYMPTOM_REASONS[symptom])
    if combo.seen:
        icons = [faults.ICONS[name] for name in combo.seen]
        shown = icons[0] if len(icons) == 1 else ", ".join(icons[:-1]) + " and " + icons[-1]
        said += f" Your phone's status bar shows {shown}."
    abroad = next((k for k in draft.known if "abroad in" in k), None)
    if abroad is not None:
        # The agent may enable roaming or prescribe it only for a caller it knows is away.
        said += f" {abroad}"
    if not draft.troubleshooting:
        # The phone is why the caller calls; the account request comes with it.
        draft.instructions.insert(0, f"You also want this done: {draft.reason}")
        draft.troubleshooting = True
    draft.reason = said
    if draft.troubleshooting and not draft.purpose.startswith("Troubleshooting"):
        draft.purpose = f"Troubleshooting: {draft.purpose[0].lower()}{draft.purpose[1:]}"
    noticed = [say(rng, faults.NOTICES[name]).rstrip(".") for name in combo.faults]
    if noticed:
        draft.instructions.append(
            "What you noticed, to say if the agent asks what happened: "
            + "; ".join(n[0].lower() + n[1:] for n in noticed)
            + "."
        )
    draft.instructions.append(SYMPTOM_SOLVED[symptom])
    draft.instructions.append(
        "Do what the agent asks on your phone and say in your own words what it shows."
    )


def _refuse_roaming(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Roaming asked for on a line of another customer: refused."""
    rng = request.rng
    owner, record = gen._pick(request, gen._active)
    others = [(c, x) for c, x in gen._lines if c.customer_id != owner.customer_id]
    other_owner, other = rng.choice(others)
    draft = _Draft(
        owner,
        record,
        reason=f"You want roaming enabled on the line {other.phone_number}, which belongs "
        f"to a friend who is travelling.",
        purpose="Roaming on another customer's line: refused.",
    )
    draft.known.append(f"Your friend is {other_owner.full_name}; you are not on their account.")
    draft.steps.append(Step("get_customer_by_phone", {"phone_number": other.phone_number}))
    why = (
        f"line {other.phone_number} is not on your account, and only the lines of the "
        "identified customer's own account can be changed"
    )
    refused = Step("enable_roaming", {"line_id": other.line_id})
    return _refused(draft, why, "enable roaming on that line", refused)


def _sim_locked(gen: TelecomGenerator, request: _Request) -> _Draft:
    """No service from a SIM card locked with a PIN: only technical support can unlock it."""
    owner, record = gen._pick(request, gen._active)
    draft = _Draft(
        owner,
        record,
        reason=say(request.rng, SYMPTOM_REASONS["service"]),
        purpose="Troubleshooting a SIM card locked with a PIN: escalated.",
        troubleshooting=True,
    )
    draft.init.append(_init("user", "lock_sim_card", mode="pin"))
    draft.steps.append(Step("check_sim_status", {}, "user"))
    draft.assertions.append(_assert("user", "assert_service_status", expected_status="no_service"))
    # The phone faults' set-up (``_faults``) says when the caller considers it fixed.
    return _escalated(
        draft,
        "your SIM card is locked with a PIN, which only technical support can unlock",
        "no service, SIM card locked with a PIN",
    )


def _troubleshoot(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Fix the phone: its faults alone, or with roaming enabled abroad (the option's form)."""
    if request.option.form.name == "fixes":
        return _fixes(gen, request)
    return _roaming(gen, request)
