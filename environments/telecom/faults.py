"""Faults on the caller's phone and line, composed into troubleshooting tasks as τ²-bench does.

τ²-bench builds its telecom tasks (``tau2/domains/telecom/tasks/``) from *base tasks*: a fault
set up by initialization calls (airplane mode on, the SIM card out, mobile data off, ...) and
the calls that fix it, grouped in selection sets per symptom: no service, mobile data, MMS. A
task is one symptom with a choice of at most one fault per set, so the space of tasks is the
product of the faults, not of the customers. This module holds the faults a user fixes on the
phone, under τ²-bench's own base-task names, with the phone check that shows each one; the
faults on the account (a line over its data limit, a suspended line, roaming off on the line,
a locked SIM, an ended contract) need the database and are set up by the Generator.

:func:`fault_kinds` reads the fault kinds of any telecom task (official or synthesized) from
its initialization calls, so coverage can compare the two.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tau2.data_model.tasks import Task

#: The symptoms a caller reports, as τ²-bench's task managers name them.
SYMPTOMS = ("service", "mobile_data", "mms")
#: The most phone faults composed into one task.
MAX_FAULTS = 4
#: The mode a phone on 2G only is set back to (τ²-bench's fix).
GOOD_MODE = "4g_5g_preferred"

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Fault:
    """A fault the user fixes on the phone: how it is set up, shown and fixed."""

    #: τ²-bench's base-task name ("airplane_mode_on").
    name: str
    #: Its selection set: a task has at most one fault of a group.
    group: str
    #: User-side initialization calls that break the phone.
    breaks: tuple[Call, ...]
    #: The phone check that shows the fault (the network status shows airplane mode, the
    #: SIM card, mobile data and roaming at once: one look for several faults).
    check: Call
    #: The user's calls that fix it, in order.
    fixes: tuple[Call, ...]


def _fault(name: str, group: str, breaks: Sequence[Call], check: Call, *fixes: Call) -> Fault:
    return Fault(name, group, tuple(breaks), check, tuple(fixes))


_MESSAGING = {"app_name": "messaging"}
_REBOOT: Call = ("reboot_device", {})

FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        _fault(
            "airplane_mode_on",
            "airplane",
            [("turn_airplane_mode_on", {})],
            ("check_network_status", {}),
            ("toggle_airplane_mode", {}),
        ),
        _fault(
            "unseat_sim_card",
            "sim",
            [("unseat_sim_card", {})],
            ("check_network_status", {}),
            ("reseat_sim_card", {}),
        ),
        _fault(
            "break_apn_settings",
            "apn",
            [("break_apn_settings", {})],
            ("check_apn_settings", {}),
            ("reset_apn_settings", {}),
            _REBOOT,
        ),
        _fault(
            "data_mode_off",
            "data",
            [("turn_data_off", {})],
            ("check_network_status", {}),
            ("toggle_data", {}),
        ),
        _fault(
            "user_abroad_roaming_enabled_off",
            "roaming",
            [("set_user_location", {"abroad": True}), ("turn_roaming_off", {})],
            ("check_network_status", {}),
            ("toggle_roaming", {}),
        ),
        _fault(
            "data_saver_mode_on",
            "saver",
            [("turn_data_saver_mode_on", {})],
            ("check_data_restriction_status", {}),
            ("toggle_data_saver_mode", {}),
        ),
        _fault(
            "bad_vpn",
            "vpn",
            [("break_vpn", {})],
            ("check_vpn_status", {}),
            ("disconnect_vpn", {}),
        ),
        _fault(
            "bad_network_preference",
            "network",
            [("set_network_mode_preference", {"mode": "2g_only"})],
            ("check_network_mode_preference", {}),
            ("set_network_mode_preference", {"mode": GOOD_MODE}),
        ),
        _fault(
            "bad_wifi_calling",
            "wifi_calling",
            [("set_wifi_calling", {"enabled": True, "mms_over_wifi": True})],
            ("check_wifi_calling_status", {}),
            ("toggle_wifi_calling", {}),
        ),
        _fault(
            "break_apn_mms_setting",
            "apn_mms",
            [("break_apn_mms_setting", {})],
            ("check_apn_settings", {}),
            ("reset_apn_settings", {}),
            _REBOOT,
        ),
        *(
            _fault(
                f"break_app_{kind}_permission{'s' if kind == 'both' else ''}",
                "permission",
                [("remove_app_permission", {**_MESSAGING, "permission": p}) for p in perms],
                ("check_app_permissions", dict(_MESSAGING)),
                *[("grant_app_permission", {**_MESSAGING, "permission": p}) for p in perms],
            )
            for kind, perms in (
                ("sms", ("sms",)),
                ("storage", ("storage",)),
                ("both", ("sms", "storage")),
            )
        ),
    )
}
#: What a caller noticed around each fault, in daily use (never its cause or its fix): the
#: context a caller gives when asked what happened (phrase-grammar templates).
NOTICES: dict[str, tuple[str, ...]] = {
    "airplane_mode_on": ("(calls|phone calls) (fail|do not go through) either",),
    "unseat_sim_card": ("you (dropped the phone|changed the phone case) (yesterday|recently)",),
    "break_apn_settings": ("it started after you (changed|played with) some network settings",),
    "data_mode_off": ("apps (say|complain) there is no internet connection",),
    "user_abroad_roaming_enabled_off": ("it stopped working (when you landed|once you arrived)",),
    "data_saver_mode_on": ("(videos|pages) (load|play) (very slowly|in low quality)",),
    "bad_vpn": ("you installed a (privacy|security) app (last week|a few days ago)",),
    "bad_network_preference": ("(the phone|it) (feels|seems) (much slower|slow) than before",),
    "bad_wifi_calling": ("you (turned on|tried) some calling options in the settings",),
    "break_apn_mms_setting": ("(ordinary|plain) text messages still go through",),
    "break_app_sms_permission": (
        "you (declined|tapped away) a permission request from the messaging app",
    ),
    "break_app_storage_permission": ("the messaging app cannot (open|attach) your photos",),
    "break_app_both_permissions": (
        "you (reset|cleaned up) your app permissions (recently|last week)",
    ),
}
#: The phone's groups a symptom's faults come from, in the order the tech-support manual
#: diagnoses them (service, then mobile data, then MMS).
GROUPS: dict[str, tuple[str, ...]] = {
    "service": ("airplane", "sim", "apn"),
    "mobile_data": ("airplane", "data", "roaming", "saver", "vpn", "network"),
    "mms": (
        "airplane",
        "sim",
        "data",
        "roaming",
        "network",
        "wifi_calling",
        "apn_mms",
        "permission",
    ),
}
#: Groups of which a task of the symptom needs one (τ²-bench's task validators), unless a
#: fault on the account causes the symptom.
CORE: dict[str, frozenset[str]] = {
    "service": frozenset(GROUPS["service"]),
    "mobile_data": frozenset(GROUPS["mobile_data"]) - {"airplane"},
    "mms": frozenset({"network", "wifi_calling", "apn_mms", "permission"}),
}
#: Faults on the account and the locked SIM, set up by the Generator (τ²-bench's names).
ACCOUNT_FAULTS = (
    "data_usage_exceeded",
    "data_usage_exceeded_no_refuel",
    "user_abroad_roaming_disabled_on",
    "user_abroad_roaming_disabled_off",
    "overdue_bill_suspension",
    "contract_end_suspension",
    "lock_sim_card_pin",
)
#: Every fault kind of τ²-bench's telecom tasks.
KINDS = (*FAULTS, *ACCOUNT_FAULTS)
#: Fault kinds synthesized tasks add: a line on hold (suspended without a bill owed).
EXTRA_KINDS = ("line_suspension",)


#: Faults the status bar shows, in the caller's words (τ²-bench's ``check_status_bar``).
ICONS = {
    "airplane_mode_on": "the airplane mode icon",
    "bad_vpn": "a VPN icon",
    "data_mode_off": "mobile data shown as disabled",
    "data_saver_mode_on": "the data saver icon",
}
#: Fault groups that leave the phone without a network (the status bar then hides data icons).
_DARK = frozenset({"airplane", "sim", "apn"})


@dataclass(frozen=True)
class Combo:
    """Phone faults of one symptom: what the user checks and does to fix them."""

    symptom: str
    faults: tuple[str, ...]
    #: Faults the caller reads off the status bar when reporting the symptom: the agent may
    #: prescribe their fixes without a check.
    seen: tuple[str, ...] = ()

    def steps(self, reboot: bool = False) -> list[tuple[str, Call]]:
        """(kind, call) of the checks and fixes, each fault checked before it is fixed.

        ``kind`` is ``check`` or ``fix``. A check shared by two faults is made once, and a
        fault the caller already saw needs none; the restart several fixes need (and a
        restart the account needs, with ``reboot``) comes once, last.
        """
        out: list[tuple[str, Call]] = []
        checked: set[str] = set()
        restart = reboot
        for name in self.faults:
            fault = FAULTS[name]
            key = _key(fault.check)
            if key not in checked and name not in self.seen:
                checked.add(key)
                out.append(("check", fault.check))
            for fix in fault.fixes:
                if fix == _REBOOT:
                    restart = True
                else:
                    out.append(("fix", fix))
        if restart:
            out.append(("fix", _REBOOT))
        return out

    def counts(self, reboot: bool = False) -> tuple[int, int]:
        """(fixes, checks) the combo needs."""
        steps = self.steps(reboot)
        return sum(k == "fix" for k, _ in steps), sum(k == "check" for k, _ in steps)


def _key(call: Call) -> str:
    return f"{call[0]}{sorted(call[1].items())}"


def visible(names: Sequence[str], suspended: bool = False) -> tuple[str, ...]:
    """The faults of ``names`` the status bar shows (on a ``suspended`` line, no data icons).

    Airplane mode hides the signal and data icons; without a network (no SIM, a broken APN,
    a suspended line) mobile data shows as disabled whatever its switch, so neither data
    fault can be read off the bar.
    """
    groups = {FAULTS[n].group for n in names}
    dark = bool(groups & _DARK) or suspended
    shown = []
    for name in names:
        group = FAULTS[name].group
        if name not in ICONS or (group in ("data", "saver") and dark):
            continue
        if group == "saver" and "data" in groups:
            continue  # the saver icon shows only with mobile data on
        shown.append(name)
    return tuple(shown)


@functools.cache
def combos(
    symptom: str,
    caused: bool = False,
    without: frozenset[str] = frozenset(),
    suspended: bool = False,
) -> list[Combo]:
    """Every valid set of phone faults of ``symptom``, at most :data:`MAX_FAULTS`.

    Each set comes checked fault by fault and, where the status bar shows some of its faults,
    also as the caller reads them off the bar. ``caused``: a fault on the account already
    causes the symptom, so no phone fault is needed (the empty combo is valid). ``without``:
    groups to leave out. ``suspended``: the line is suspended (the bar shows no data icons).
    """
    groups = [g for g in GROUPS[symptom] if g not in without]
    options = [[None, *[f.name for f in FAULTS.values() if f.group == g]] for g in groups]
    found = []
    for picked in itertools.product(*options):
        names = tuple(n for n in picked if n is not None)
        if len(names) > MAX_FAULTS:
            continue
        core = {FAULTS[n].group for n in names} & CORE[symptom]
        if not core and not caused:
            continue
        found.append(Combo(symptom, names))
        seen = visible(names, suspended)
        if seen:
            found.append(Combo(symptom, names, seen))
    return found


@functools.cache
def by_counts(
    symptoms: tuple[str, ...], caused: frozenset[str], without: frozenset[str], reboot: bool
) -> Mapping[tuple[int, int], tuple[Combo, ...]]:
    """The combos of ``symptoms`` by the (fixes, checks) they need.

    ``caused``: the symptoms a fault on the account causes by itself; ``reboot``: the
    account fix is a lifted suspension, which needs a restart.
    """
    out: dict[tuple[int, int], list[Combo]] = {}
    for symptom in symptoms:
        for combo in combos(symptom, symptom in caused, without, reboot):
            out.setdefault(combo.counts(reboot), []).append(combo)
    return {k: tuple(v) for k, v in sorted(out.items())}


_KIND_OF_INIT = {
    "turn_airplane_mode_on": "airplane_mode_on",
    "unseat_sim_card": "unseat_sim_card",
    "break_apn_settings": "break_apn_settings",
    "turn_data_off": "data_mode_off",
    "turn_data_saver_mode_on": "data_saver_mode_on",
    "break_vpn": "bad_vpn",
    "set_wifi_calling": "bad_wifi_calling",
    "break_apn_mms_setting": "break_apn_mms_setting",
    "set_network_mode_preference": "bad_network_preference",
    "lock_sim_card": "lock_sim_card_pin",
}


def fault_kinds(task: Task) -> list[str]:
    """The τ²-bench fault kinds ``task`` sets up, read from its initialization calls, sorted."""
    calls = list(task.initial_state.initialization_actions or []) if task.initial_state else []
    names = [c.func_name for c in calls]
    kinds = {_KIND_OF_INIT[n] for n in names if n in _KIND_OF_INIT}
    removed = sorted(
        str(c.arguments.get("permission")) for c in calls if c.func_name == "remove_app_permission"
    )
    if removed:
        kinds.add(
            "break_app_both_permissions"
            if len(removed) > 1
            else f"break_app_{removed[0]}_permission"
        )
    for call in calls:
        if call.func_name == "suspend_line_for_overdue_bill":
            ended = call.arguments.get("contract_ended")
            kinds.add("contract_end_suspension" if ended else "overdue_bill_suspension")
    if "suspend_line" in names:
        # τ²-bench's suspend_line: a suspension for the overdue bill the task pays, or a hold.
        actions = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
        pays = any(a.name == "send_payment_request" for a in actions)
        kinds.add("overdue_bill_suspension" if pays else "line_suspension")
    if "set_data_usage" in names:
        spent = "refuel_data" in names
        kinds.add("data_usage_exceeded_no_refuel" if spent else "data_usage_exceeded")
    if "set_user_location" in names:
        line_off = "disable_roaming" in names or (
            "enable_roaming" not in names and "turn_roaming_on" in names
        )
        phone_off = "turn_roaming_off" in names
        if line_off:
            kinds.add(
                "user_abroad_roaming_disabled_off"
                if phone_off
                else "user_abroad_roaming_disabled_on"
            )
        elif phone_off:
            kinds.add("user_abroad_roaming_enabled_off")
    return sorted(kinds)
