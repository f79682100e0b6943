"""The programmatic telecom Generator: grounds blueprints into new τ²-bench tasks on the real DB.

Telecom is dual-control: the agent works on the account (bills, lines, data, roaming) and
the user works on their phone through user tools. Most tasks are troubleshooting calls built
the way τ²-bench builds its own (:mod:`~evosyn.environments.telecom.faults`): the caller
reports a symptom (no service, mobile data, MMS) that faults on the phone and the line
cause, composed from τ²-bench's base tasks (airplane mode, the SIM card, APN and MMS
settings, mobile data, roaming, data saver, a VPN, the network mode, Wi-Fi calling, app
permissions, a data limit, a suspension). The agent identifies the caller, has the user check
the phone and says what to fix only after the user reported what the check showed; the user
fixes it on the phone. The task's initial state binds the phone to one of the caller's lines
(``set_user_info``) and sets the faults up with τ²-bench's own initialization functions.
Which records qualify is queried from the database and decided with the policy model
(:mod:`evosyn.environments.telecom.policy`); the line of every official task (the same phone
in all of them) is never used. The space of tasks is the product of the faults, not of the
database's few customers.

Each (family, outcome) has a few *forms*, and the family is what the gold's writes realize:
a line over its data limit refuelled for ``plan_change`` (the amount the caller's, left open
to the agent's proposal where ``preference_change`` is asked for), alone or, abroad, with
roaming enabled on the line first (τ²-bench's most common composition); a payment request,
paid now or later, for ``billing_issue`` (phone faults a side problem the caller may have);
lifting a suspension, directly, on two lines at once, or after paying the overdue bill, then
a restart, for ``line_management``; phone fixes alone, or with roaming enabled on the line
abroad, for ``service_troubleshooting``. Account requests vary with the account's story as
τ²-bench's own initialization functions set it up: a bill that suspended a line (an earlier
one, or a new one, the line's contract ended with it or not), a bill paid before the call so
a suspension may be lifted, and a caller who calls from their phone about another line of
their account (a family member's) where the phone itself plays no part. Refusals either
read the evidence and explain the rule, or, as τ²-bench's failing tasks do, escalate what no
tool can fix (a SIM locked with a PIN, a line whose contract ended, a refuel already at its
cap) to a human; ``device_upgrade`` and ``account_profile_update`` are handed off, as no
telecom tool fulfils them. ``num_write`` is
met by how many phone faults are composed (each checked, then fixed; one restart for all);
``num_read`` and ``difficulty_profile`` by the checks and added look-ups; ``computation`` by
what the agent derives: a refuel amount the user asks for only as "what I am over by, plus
0.5 GB" (``aggregate``), the overdue bill picked from the listed bills
(``constrained_opt``). ``conditional`` needs a calculation and telecom has no calculate tool,
so :func:`infeasible` names it.

Telecom ``tool_use_pattern`` values are honoured as hard requests: ``lookup_then_update``,
``verify_before_action`` and ``state_change_with_confirmation`` need an agent write (a read of
the record right before it, a confirmation turn), ``compare_options_then_apply`` the bill
list, ``diagnose_then_resolve`` a phone check before a user fix, ``multi_hop_retrieval`` a
customer -> line -> plan or device chain. A requested ``fault_kind`` (a candidate factor of the
ontology) is a phone fault every candidate sets up, composed with whatever else its shape
draws; the feasibility rule names a request no shape can show it in. Tasks are judged like
τ²-bench's own telecom tasks:
environment assertions on the final phone and line (the symptom gone: service back, mobile
data at excellent speed, MMS sending), the gold actions, and what the agent must tell (the
database hash is not used: τ²-bench's gold replay does not sync the phone).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tau2.data_model.tasks import EnvAssertion, EnvFunctionCall, RewardType, Task
from tau2.domains.telecom.data_model import Bill, Customer, Line, TelecomDB

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.grounding import (
    CONTROLS,
    Draft,
    GroundedGenerator,
    Request,
    Step,
    control,
    money,
)
from evosyn.environments.kit.rules import Asked, Checks, Conflict, opening_rules
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.telecom import faults, policy
from evosyn.records import Blueprint

#: Families of the telecom seed ontology.
FAMILIES = (
    "plan_change",
    "billing_issue",
    "device_upgrade",
    "line_management",
    "service_troubleshooting",
    "account_profile_update",
)
#: Families no telecom tool can fulfil: the request is handed to a human agent.
HANDOFF_FAMILIES = frozenset({"device_upgrade", "account_profile_update"})
#: Patterns that need an agent write (a read of its record, a confirmation, a choice).
AGENT_WRITE_PATTERNS = frozenset(
    {
        "lookup_then_update",
        "verify_before_action",
        "state_change_with_confirmation",
        "compare_options_then_apply",
    }
)
#: Candidates the Generator tries for a blueprint: the database is small, so a request's
#: fresh tasks can be few among many it already made.
CANDIDATES = 16
#: Candidates drawn from the form first chosen before any form the request allows is drawn.
FORM_TRIES = 6
#: How much likelier a fulfilled request's form is drawn when the caller's phone shows it.
SHOWN_WEIGHT = 3
#: Most look-ups added to a task beyond the ones its form needs (the pool is larger).
MAX_PADS = 8
TRANSFER_MESSAGE = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
#: Extra for the ``aggregate`` refuel: the user asks for their overage plus this.
REFUEL_MARGIN = 0.5

#: Phone checks the agent may ask the user to run beyond a fault's own (a look at the phone).
USER_CHECKS = (
    "check_status_bar",
    "check_network_status",
    "check_sim_status",
    "check_data_restriction_status",
    "check_network_mode_preference",
    "check_wifi_status",
    "check_vpn_status",
    "check_apn_settings",
)
#: What a caller says is wrong, per symptom (phrase-grammar templates, second person).
SYMPTOM_REASONS: dict[str, tuple[str, ...]] = {
    "service": (
        "Your phone (shows|has shown) no service (since this morning|for a few hours|since "
        "yesterday)[ and you cannot make or take calls].",
        "You (cannot|can't) make calls or send texts: your phone (says it has|has) no "
        "(signal|service)[ at all].",
    ),
    "mobile_data": (
        "(Mobile data|The internet) on your phone (is not working|stopped working|barely "
        "works)[ when you are away from Wi-Fi].",
        "Your phone's (mobile data|data connection) is (very slow|not working)[ and pages do "
        "not load].",
    ),
    "mms": (
        "You (cannot|can't) send (picture messages|MMS messages|photos by text) from your "
        "phone[ (since yesterday|this week|for a few days)].",
        "(Picture messages|Photos you text) (will not|won't) send from your phone's messaging app.",
    ),
}
#: Why a caller wants to pay an overdue bill. This and the other reasons say when, never how
#: urgently ("right away"): urgency is emotional_pressure's, acted only where it is requested.
PAY_REASONS = (
    "You (received|got) a (notice|message|letter) that (one of your bills|a bill on your "
    "account) is overdue[,] and you want to pay it[ (now|today)].",
    "You want to (settle|pay) (an|the) overdue bill on your account[ (today|now|before it causes "
    "(trouble|problems))].",
    "(A bill on your account is overdue|Your account has an overdue bill); you (want|would like) "
    "to pay it[ (now|from your phone)].",
)
#: Who uses another line of the caller's account, in the caller's words.
WHOSE = "(your (daughter|son|partner|husband|wife|mother|father)|a family member)"
#: The same, opening a sentence.
WHOSE_CAP = "(Your (daughter|son|partner|husband|wife|mother|father)|A family member)"
#: The user simulator answers about the phone from its tools only.
GROUNDED = (
    "Whenever the agent asks about your phone, ground your answer on your phone's tools; never "
    "make up what they show.",
    "(Answer|Describe) (what your phone shows|anything about your phone) only from what your "
    "phone's tools (show|return); (never|do not) (make up|guess) a result.",
    "(If|When) the agent asks you to check something on your phone, use your phone's tools and "
    "(say|report) what they (show|return)[ in your own words]; (never|don't) invent it.",
)
#: Why a caller asks for roaming on another line of their account.
ROAMING_FOR = (
    WHOSE_CAP + " (is travelling|is) (abroad|in {country}) and mobile data (does not work|is not "
    "working) on (their|the) line {number}; you want roaming (enabled|turned on) on that line.",
    "You want [international ]roaming (enabled|turned on) on {number}, the line of "
    + WHOSE
    + ", who (is|has just arrived) (abroad|in {country})[ and (has|gets) no mobile data there].",
    "(The line|Line) {number} on your account (has no data|cannot use mobile data) (abroad|in "
    "{country}), where " + WHOSE + " is travelling; you want roaming (enabled|switched on) for it.",
)
#: The bill the caller knows about (its id from the notice).
BILL_KNOWN = (
    "The bill you are calling about is {bill_id}.",
    "(The|Your) (notice|message) (names|is about) bill {bill_id}.",
    "The overdue bill (is|has the id) {bill_id}[, as the notice says].",
)
#: A payment request sent now, paid after the call.
PAY_LATER = (
    "You want the payment request sent now, but you will pay it later yourself; do not pay it "
    "during this call.",
    "(Have|Let) the agent send the payment request to your phone; you (will|'ll) pay it "
    "(later|tonight|after the call)[ yourself], not (now|during this call).",
    "You (only want|want just) the payment request (sent|on your phone) for now: you (will|plan "
    "to) pay it (later|once you are home)[, not during this call].",
)
#: A payment request paid during the call.
PAY_NOW = (
    "When the agent sends the payment request, check it and pay it.",
    "(Once|When) the payment request (arrives|reaches your phone), (check|look at) it and pay "
    "it[ (right away|during the call)].",
    "You want to pay (during|in) this call: (check|open) the payment request on your phone and "
    "pay it.",
)
#: The line the overdue bill had suspended, as the caller knows it (own phone's or another).
SUSPENDED_FOR_BILL: dict[bool, str] = {
    True: "(Because of the bill|Because of it), your line (was|has been) suspended.",
    False: "(Because of the bill|Because of it), (the|your) line {number} (was|has been) "
    "suspended[; (it is used by|it belongs to) (your (daughter|son|partner)|a family member)].",
}
#: The suspended line's contract ended with the bill (τ²-bench's contract_end_suspension).
CONTRACT_ENDED_TOO = (
    "(That line's|Its) contract (has also ended|ended last month)[, so you do not expect it back]."
)
#: The caller leaves the suspended line for another call.
LINE_LATER = (
    "You only want the bill (handled|taken care of) in this call; you will ask about the "
    "suspended line another time.",
    "(Do not|Don't) ask for the line to be (reactivated|turned back on) in this call: you "
    "(will|'ll) (deal with|sort out) that (later|another time).",
)
#: Why a caller wants a suspension lifted: on their own phone's line, or on another line.
RESUME_REASONS: dict[bool, tuple[str, ...]] = {
    False: (
        "Your line (was|has been) suspended and you want (the suspension lifted|it (reactivated|"
        "back on|working again))[ today].",
        "You want your suspended line (reactivated|turned back on|restored)[ so you can use your "
        "phone (again|normally)].",
        "(Your phone line is|Your line is) still suspended(| and you cannot use it); you want "
        "(it reactivated|the suspension lifted)[ now].",
    ),
    True: (
        "The line {number} on your account, (used by|which belongs to) " + WHOSE + ", (was|has "
        "been) suspended; you want it (reactivated|back on|restored)[ today].",
        "You want the suspension lifted on {number}, (the line of " + WHOSE + "|a (second|"
        "family) line on your account)[ today].",
        "(The line|Line) {number} on your account is suspended and " + WHOSE + " (cannot use it|"
        "needs it back); you want it (reactivated|turned back on).",
    ),
}
#: Why a caller wants two lines of their account back.
RESUME_BOTH = (
    "Two lines on your account, {first} and {second}, (were|have been) suspended; you want "
    "(both|them both) (reactivated|back on|working again)[ today].",
    "You want the suspensions lifted on (both|two of) your lines, {first} and {second}[, "
    "(which your family uses|one of them " + WHOSE + "'s)].",
    "(Your|The) lines {first} and {second} are [both ]suspended and you (need|want) them "
    "(restored|reactivated)[ today].",
)
#: Why a suspended line no longer owes anything: the bill was paid before the call.
PAID_SINCE = (
    "(The|Your) line was suspended (over|for) an unpaid bill, which you (have paid since|paid "
    "(yesterday|this morning|a few days ago))."
)
PAID_SINCE_BOTH = (
    "(The|Both) lines were suspended (over|for) an unpaid bill, which you (have paid since|paid "
    "(yesterday|this morning|a few days ago))."
)
#: The line a caller asks about when it is not their phone's.
OTHER_LINE = (
    "You are calling (from your own phone|from your phone) about (another|a second|a family) "
    "line on your account, {number}[, used by " + WHOSE + "]."
)
#: When the caller considers the problem solved, per symptom.
SYMPTOM_SOLVED: dict[str, str] = {
    "service": "You consider it fixed once your status bar shows signal again.",
    "mobile_data": "You consider it fixed only once mobile data works at excellent speed.",
    "mms": "You consider it fixed once your phone can send MMS messages.",
}
#: What the agent tells the caller at the end, per symptom (the task's note).
SYMPTOM_FIXED: dict[str, str] = {
    "service": "your phone should have service again",
    "mobile_data": "your mobile data should work again at full speed",
    "mms": "your phone should send picture messages again",
}
#: What the user's phone must do at the end, per symptom (τ²-bench's assertions).
SYMPTOM_CHECKS: dict[str, tuple[tuple[str, dict[str, object]], ...]] = {
    "service": (("assert_service_status", {"expected_status": "connected"}),),
    "mobile_data": (
        ("assert_mobile_data_status", {"expected_status": True}),
        ("assert_internet_speed", {"expected_speed": 200, "expected_desc": "excellent"}),
    ),
    "mms": (("assert_can_send_mms", {"expected_status": True}),),
}

#: Families whose write has no detail a caller leaves open to the agent's proposal.
UNVARIED = tuple(f for f in FAMILIES if f != "plan_change")
#: Refuel amounts (GB) a caller may want, or the agent first propose.
REFUEL_AMOUNTS = (1.0, 1.5, 2.0)

PERSONAS: tuple[str, ...] = (
    "You are polite and brief; you answer the agent's questions directly.",
    "You are in a hurry and want your phone working again quickly.",
    "You are friendly and chatty, but you follow the agent's instructions.",
    "You are not comfortable with phone settings and need step-by-step guidance.",
    "You are a long-time customer who knows your account well.",
    "You are careful and want every charge explained before you agree.",
)
CHALLENGES: dict[str, tuple[str, ...]] = {
    "missing_information": (
        "You do not know your customer id or any bill or line ids; the agent must look them up.",
        "You only know your phone number; let the agent find the rest.",
    ),
    "ambiguous_request": (
        "Start vague ('my phone is acting up') and give the details only when asked.",
        "Describe the problem loosely at first; be precise once the agent asks.",
    ),
    "user_false_claim": (
        "Claim at first that another agent already fixed this for you; accept the records "
        "when the agent shows otherwise.",
        "Insist at first that you were promised this for free; drop it when the agent explains.",
    ),
    "preference_change": (
        "Do not say how much data you want at first; when the agent proposes an amount, change "
        "your mind to the amount named here.",
        "Leave the amount open; if the agent suggests a different one, say you would rather "
        "have the amount named here.",
    ),
    "emotional_pressure": (
        "You are frustrated that your phone is not working and press the agent to hurry.",
        "You are upset and push the agent to make an exception.",
    ),
    "multi_intent_interleaving": (
        "Mix a side question about your account into the main request.",
        "Interrupt once with an unrelated question about your bill, then go back.",
    ),
}
_HANDOFF_ASKS: dict[str, tuple[str, ...]] = {
    "device_upgrade": (
        "You want to upgrade your phone to a newer model on your plan.",
        "You want to trade in your device for a new one.",
        "You want a replacement device shipped to you.",
    ),
    "account_profile_update": (
        "You want to change the email address on your account.",
        "You want to update the mailing address on your account.",
        "You want to add a new payment method to your account.",
    ),
}


@dataclass(frozen=True)
class Form:
    """One way a (family, outcome) is grounded, with the calls it always makes."""

    name: str
    family: str
    outcome: str
    writes: int  # primary writes (phone fixes and the restart come on top)
    reads: int  # reads the form always makes, identification included
    agent_write: bool = False
    user_write: bool = False  # the primary writes include a user write
    diagnosed: bool = False  # a user read precedes the first primary user write
    transfers: int = 0
    computations: frozenset[str] = frozenset({"none"})
    #: Symptoms the caller may report: the phone faults come from them (none: no faults).
    symptoms: tuple[str, ...] = ()
    #: Symptoms a fault on the account causes by itself, so phone faults are optional.
    caused: frozenset[str] = frozenset()
    #: Phone fault groups left out (the form sets that part of the phone up itself).
    without: frozenset[str] = frozenset()
    #: Whether the account fix needs the phone restarted (one restart, with the phone's).
    reboot: bool = False
    #: Whether the phone faults are a side problem the caller may not have: without them the
    #: caller reports no symptom (``caused`` then only lets the combos go empty).
    optional: bool = False
    #: Whether the form reads the line it acts on: a customer -> line -> plan or device chain
    #: then needs one more look-up, not two.
    reads_line: bool = False


_PAY = frozenset({"none", "constrained_opt"})
#: Forms that escalate what no tool fixes (τ²-bench's failing troubleshooting tasks).
ESCALATIONS = frozenset(
    {"sim_locked", "contract_ended", "contract_ended_sim_locked", "refuel_spent"}
)
_ALL = faults.SYMPTOMS
_DATA = ("mobile_data", "mms")
FORMS: tuple[Form, ...] = (
    Form(
        "refuel",
        "plan_change",
        "fulfill",
        1,
        3,
        True,
        computations=frozenset({"none", "aggregate"}),
        symptoms=_DATA,
        caused=frozenset({"mobile_data"}),
        reads_line=True,
    ),
    Form(
        "roaming_refuel",
        "plan_change",
        "fulfill",
        2,
        3,
        True,
        computations=frozenset({"none", "aggregate"}),
        symptoms=_DATA,
        caused=frozenset({"mobile_data"}),
        reads_line=True,
    ),
    Form(
        "pay_later",
        "billing_issue",
        "fulfill",
        1,
        2,
        True,
        computations=_PAY,
        symptoms=_ALL,
        caused=frozenset(_ALL),
        optional=True,
    ),
    Form(
        "pay",
        "billing_issue",
        "fulfill",
        2,
        4,
        True,
        True,
        True,
        computations=_PAY,
        symptoms=_ALL,
        caused=frozenset(_ALL),
        optional=True,
    ),
    Form("resume", "line_management", "fulfill", 1, 2, True, reads_line=True),
    Form("resume_lines", "line_management", "fulfill", 2, 3, True, reads_line=True),
    Form(
        "resume_reboot",
        "line_management",
        "fulfill",
        1,
        2,
        True,
        True,
        symptoms=_ALL,
        caused=frozenset(_ALL),
        reboot=True,
        reads_line=True,
    ),
    Form(
        "resume_roaming",
        "line_management",
        "fulfill",
        2,
        2,
        True,
        True,
        symptoms=_ALL,
        caused=frozenset(_ALL),
        reboot=True,
        reads_line=True,
    ),
    Form(
        "overdue_resume_reboot",
        "line_management",
        "fulfill",
        3,
        5,
        True,
        True,
        True,
        computations=_PAY,
        symptoms=_ALL,
        caused=frozenset(_ALL),
        reboot=True,
        reads_line=True,
    ),
    Form("fixes", "service_troubleshooting", "fulfill", 0, 1, symptoms=_ALL),
    Form(
        "roaming",
        "service_troubleshooting",
        "fulfill",
        1,
        2,
        True,
        symptoms=_DATA,
        caused=frozenset({"mobile_data"}),
        reads_line=True,
    ),
    Form("refuse", "plan_change", "refuse", 0, 2),
    Form("refuel_spent", "plan_change", "refuse", 0, 2, transfers=1),
    Form("refuse", "billing_issue", "refuse", 0, 2),
    Form("refuse", "line_management", "refuse", 0, 2, reads_line=True),
    Form("contract_ended", "line_management", "refuse", 0, 2, transfers=1, reads_line=True),
    # The SIM card locked with a PIN too (as in 6 of τ²-bench's 8 tasks with an ended
    # contract): the user's SIM check is the third read.
    Form(
        "contract_ended_sim_locked",
        "line_management",
        "refuse",
        0,
        3,
        transfers=1,
        reads_line=True,
    ),
    Form("refuse", "service_troubleshooting", "refuse", 0, 2),
    # A locked SIM with the phone faults of no service the caller fixes first, as in most of
    # τ²-bench's tasks with one (the airplane mode, the SIM card out, a broken APN).
    Form(
        "sim_locked",
        "service_troubleshooting",
        "refuse",
        0,
        2,
        transfers=1,
        symptoms=("service",),
        caused=frozenset({"service"}),
    ),
    Form("handoff", "device_upgrade", "refuse", 0, 1, transfers=1),
    Form("handoff", "account_profile_update", "refuse", 0, 1, transfers=1),
)


@dataclass(frozen=True)
class Option:
    """A form with the phone fixes and checks its faults need and its look-ups: one shape."""

    form: Form
    #: Phone fixes (the restart included) and phone checks of the faults.
    fixes: int
    checks: int
    reads: int
    #: Look-ups added beyond those the form, its faults and the patterns need.
    pads: int = 0

    @property
    def writes(self) -> int:
        """Writes of the shape: the form's own and the fixes on the phone."""
        return self.form.writes + self.fixes

    @property
    def calls(self) -> int:
        """Tool calls of the shape."""
        return self.reads + self.writes + self.form.transfers

    def combos(self) -> tuple[faults.Combo, ...]:
        """The phone faults that give the shape its fixes and checks."""
        return _combos(self.form).get((self.fixes, self.checks), ())


def _combos(form: Form) -> Mapping[tuple[int, int], tuple[faults.Combo, ...]]:
    """The form's phone-fault combinations by (fixes, checks); none but (0, 0) without symptoms."""
    if not form.symptoms:
        return {(0, 0): (faults.Combo("", ()),)}
    return faults.by_counts(form.symptoms, form.caused, form.without, form.reboot)


def _draw(shapes: Sequence[Option], rng: random.Random) -> Option:
    """One of a form's ``shapes``: a set of phone faults that fits, more fixes more likely.

    A count with many sets is drawn more often, so small shapes do not run out first; no
    fault at all only when nothing else fits; then the fewest reads.
    """
    form = shapes[0].form
    pairs = sorted({(o.fixes, o.checks) for o in shapes})
    pairs = [p for p in pairs if p[0]] or pairs
    # Weighted by the fixes too: callers bring several faults, as in τ²-bench (3.45 fixes).
    weights = [(len(_combos(form).get(p, ())) or 1) * max(p[0], 1) ** 2 for p in pairs]
    fixes, checks = rng.choices(pairs, weights)[0]
    return rng.choice([o for o in shapes if (o.fixes, o.checks) == (fixes, checks)][:2])


def _hops_from_line(form: Form, patterns: frozenset[str]) -> bool:
    """Whether a multi-hop chain starts at the form's own read of the line.

    The plan or device read then follows that line read, so the read is not right before
    the line's write: not where ``verify_before_action`` asks for it.
    """
    return form.reads_line and "verify_before_action" not in patterns


def _form_reason(form: Form, computation: str | None, patterns: frozenset[str]) -> Conflict | None:
    """Why ``form`` cannot show the computation and patterns, or None."""
    if computation is not None and computation not in form.computations:
        return Conflict(
            "computation",
            f"computation={computation} cannot be realized by {form.family}/{form.outcome}",
        )
    wants_agent = sorted(patterns & AGENT_WRITE_PATTERNS)
    if wants_agent and not form.agent_write:
        return Conflict(
            "pattern_needs_agent_write",
            f"tool_use_pattern={wants_agent[0]} needs an agent write; the task makes none",
        )
    if "compare_options_then_apply" in patterns and "constrained_opt" not in form.computations:
        return Conflict(
            "compare_without_options",
            f"tool_use_pattern=compare_options_then_apply has no options in {form.family}",
        )
    if "compare_options_then_apply" in patterns and computation not in (None, "constrained_opt"):
        return Conflict(
            "compare_computation",
            f"tool_use_pattern=compare_options_then_apply conflicts with computation={computation}",
        )
    return None


def options(
    family: str,
    outcome: str,
    *,
    writes: str | None = None,
    reads: str | None = None,
    computation: str | None = None,
    difficulty: str | None = None,
    patterns: frozenset[str] = frozenset(),
) -> tuple[list[Option], Conflict]:
    """Every shape that meets the requested counts, and (if none) why not."""
    w_lo, w_hi = BUCKET_RANGES.get(writes or "", (0, OPEN_END))
    r_lo, r_hi = BUCKET_RANGES.get(reads or "", (0, OPEN_END))
    d_lo, d_hi = DIFFICULTY_CALLS.get(difficulty or "", (0, OPEN_END))
    found: list[Option] = []
    # The reason of the shape that came closest: counts beat writes beat form conflicts.
    reasons: dict[int, Conflict] = {0: Conflict("counts", f"no {family}/{outcome} task fits")}
    forms = [f for f in FORMS if f.family == family and f.outcome == outcome]
    if not forms:
        return [], Conflict(
            "handoff_fulfil", f"{family}/{outcome} cannot be realized: no telecom tool fulfils it"
        )
    for form in forms:
        why = _form_reason(form, computation, patterns)
        if why is not None:
            reasons.setdefault(1, why)
            continue
        for fixes, checks in _combos(form):
            option_writes = form.writes + fixes
            if not w_lo <= option_writes <= w_hi:
                reasons.setdefault(
                    2,
                    Conflict("write_count", f"num_write={writes} does not fit {family}/{outcome}"),
                )
                continue
            user_writes = form.user_write or fixes > 0
            if "diagnose_then_resolve" in patterns and not user_writes:
                reasons.setdefault(
                    3,
                    Conflict(
                        "diagnose_without_fix",
                        "tool_use_pattern=diagnose_then_resolve needs a fix on the phone",
                    ),
                )
                continue
            base = form.reads + checks
            if "diagnose_then_resolve" in patterns and not (form.diagnosed or checks):
                base += 1
            if "multi_hop_retrieval" in patterns:
                base += 1 if _hops_from_line(form, patterns) else 2
            fitting = [
                r
                for r in range(max(base, r_lo), min(base + MAX_PADS, r_hi) + 1)
                if d_lo <= r + option_writes + form.transfers <= d_hi
            ]
            if not fitting:
                reasons.setdefault(
                    4,
                    Conflict(
                        "counts",
                        f"num_read={reads} and difficulty_profile={difficulty} do not fit "
                        f"{family}/{outcome} with {option_writes} write(s) and {base}+ read(s)",
                    ),
                )
            found += [Option(form, fixes, checks, r, r - base) for r in fitting]
    reason = reasons[max(reasons)]
    return found, reason


#: The feasibility rule, one check per rule: no reads (every caller is identified with a
#: read), ``conditional`` (no calculate tool), fulfilling a device upgrade or profile change (no
#: tool does it), a proposal challenge on anything but a refuel whose amount the caller may
#: leave open, a pattern needing an agent write or a phone fix in a task without one, and
#: write, read and tool-call counts that cannot add up. ``.rules`` states each id in a sentence.
CHECKS = Checks()


# A refuel's amount is the one detail a caller may leave open to the agent's proposal (the
# proposal rule); a payment request, a resumed line or a phone fix leaves nothing to choose
# otherwise.
opening_rules(CHECKS, first_read="identifies the customer with a read", unvaried=UNVARIED)


@CHECKS.rule("preference_derived")
def _preference_derived(a: Asked) -> str | None:
    if (
        a.family == "plan_change"
        and a.computation == "aggregate"
        and "preference_change" in a.values("interaction_challenge")
    ):
        return (
            "interaction_challenge=preference_change varies the refuel amount, but "
            "computation=aggregate derives it from the overage"
        )
    return None


@CHECKS.rule("conditional")
def _conditional(a: Asked) -> str | None:
    if a.computation == "conditional":
        return "computation=conditional needs a calculation; telecom has no calculate tool"
    return None


# The shapes are searched with the counts and computation as selected: no reads or a
# conditional computation would only be named again, as a count or a computation no shape fits.
# The search names one rule, the one of the shape that came closest (see ``options``).
@CHECKS.rule(
    "handoff_fulfil",
    "computation",
    "pattern_needs_agent_write",
    "compare_without_options",
    "compare_computation",
    "write_count",
    "diagnose_without_fix",
    "counts",
    after=("no_reads", "conditional"),
)
def _shapes(a: Asked) -> Conflict | None:
    if not a.known(FAMILIES):
        return None
    found, reason = _asked_options(a)
    return None if found else reason


def _asked_options(a: Asked) -> tuple[list[Option], Conflict | None]:
    """The task shapes that meet what ``a`` asks for, or none and why."""
    return options(
        a.family,
        a.outcome,
        writes=a.writes,
        reads=a.reads,
        computation=a.computation,
        difficulty=a.difficulty,
        patterns=a.patterns,
    )


#: Why a combination of selections can never be realized, or None (a Planner rule): the reason of
#: the first conflict :data:`CHECKS` finds.
infeasible = CHECKS.first


#: Forms that find roaming off on the line and enable it: the phone's roaming switch being off
#: then reads as τ²-bench's ``user_abroad_roaming_disabled_off``, not the phone fault alone.
_LINE_ROAMING_FORMS = frozenset({"roaming_refuel", "resume_roaming", "roaming"})
_PHONE_ROAMING = "user_abroad_roaming_enabled_off"


def _with_fault(found: Sequence[Option], fault: str | None) -> list[Option]:
    """The shapes of ``found`` whose task can show the phone ``fault`` (None: every shape)."""
    if fault is None:
        return list(found)
    return [
        o
        for o in found
        if any(fault in c.faults for c in o.combos())
        and not (fault == _PHONE_ROAMING and o.form.name in _LINE_ROAMING_FORMS)
    ]


# ``fault_kind`` (``ontology.yaml``'s candidate, whose rule sentence states this id): the
# phone fault must be among the faults of some shape that meets the rest of the request.
@CHECKS.rule("fault_kind_unmade", after=CHECKS.ids_but("proposal", "preference_derived"))
def _fault_kind_unmade(a: Asked) -> str | None:
    fault = next(iter(a.values("fault_kind")), None)
    if fault is None or not a.known(FAMILIES):
        return None
    found, _ = _asked_options(a)
    if _with_fault(found, fault):
        return None
    return (
        f"fault_kind={fault}: no {a.family}/{a.outcome} task with the requested counts, "
        "computation and patterns has it on the caller's phone"
    )


@dataclass
class _Draft(Draft):
    """A telecom task under construction: the caller, the phone's line, the expected state."""

    customer: Customer
    line: Line
    #: The caller's phone when it is another of the customer's lines than ``line`` (an
    #: account request about a family member's line); None: the phone is ``line``'s.
    phone: Line | None = None
    #: Calls after the account work: the user's fixes on the phone, a transfer.
    tail: list[Step] = field(default_factory=list)
    assertions: list[EnvAssertion] = field(default_factory=list)
    #: Whether mobile data must work at the end (an assertion on the phone).
    data_works: bool = False
    #: What the caller reports is wrong with the phone (a key of ``SYMPTOM_REASONS``).
    symptom: str | None = None
    #: Whether the symptom is what the caller calls about (not a side problem).
    troubleshooting: bool = False
    #: The phone faults set up (τ²-bench's base-task names).
    phone_faults: tuple[str, ...] = ()
    transfer: str | None = None

    @property
    def account(self) -> dict[str, str]:
        """The arguments that name the line the task is about: customer id and line id."""
        return {"customer_id": self.customer.customer_id, "line_id": self.line.line_id}

    @property
    def handset(self) -> Line:
        """The line of the caller's phone: where phone faults are and what its checks show."""
        return self.phone or self.line

    def clear_overdue(self, bills: Sequence[Bill]) -> None:
        """The customer paid ``bills`` (overdue) before the call: a payment request, paid.

        τ²-bench's own tools set it up: the request reaches the phone at the next sync and
        the payment marks the bill paid at the one after.
        """
        for owed in bills:
            self.init.append(
                _init(
                    "assistant",
                    "send_payment_request",
                    customer_id=self.customer.customer_id,
                    bill_id=owed.bill_id,
                )
            )
            self.init.append(_init("user", "make_payment"))

    def over_limit(self, used: float) -> None:
        """The line starts with ``used`` GB used (over its limit); the agent looks it up."""
        self.init.append(_init("assistant", "set_data_usage", **self.account, data_used_gb=used))
        self.steps.append(Step("get_data_usage", self.account))

    def expect_refuel(self, amount: float) -> None:
        """The line must end with ``amount`` GB refuelled."""
        self.assertions.append(
            _assert(
                "assistant", "assert_data_refueling_amount", **self.account, expected_amount=amount
            )
        )

    def suspended(self, bill_id: str, ended: bool) -> None:
        """The line starts suspended for the overdue bill ``bill_id`` (its contract ``ended``)."""
        self.init.append(
            _init(
                "assistant",
                "suspend_line_for_overdue_bill",
                **self.account,
                new_bill_id=bill_id,
                contract_ended=ended,
            )
        )

    def expect_status(self, status: str) -> None:
        """The line must end in ``status``."""
        self.assertions.append(
            _assert("assistant", "assert_line_status", **self.account, expected_status=status)
        )


@dataclass(kw_only=True)
class _Request(Request):
    """What the blueprint asks for, in the telecom Generator's terms."""

    option: Option
    computation: str
    #: Every shape of the chosen form: a candidate that repeats a kept task draws anew.
    shapes: list[Option] = field(default_factory=list)
    #: Every shape of every form the request allows: drawn from once the first form's
    #: candidates keep repeating kept tasks.
    fallback: list[Option] = field(default_factory=list)
    #: Candidates tried so far.
    tries: int = 0
    #: What the latest candidate was built on (:func:`_pick_key`): kept off the next ones.
    picked: str = ""
    #: The requested ``fault_kind``: a phone fault every candidate sets up (None: any).
    fault: str | None = None


PickT = TypeVar("PickT", bound=tuple[Any, ...])
#: An overdue bill a caller may pay (see ``TelecomGenerator._payable``).
_Payable = tuple[Customer, Line, Bill | None, Line | None, bool, bool]


def _pick_key(item: tuple[Any, ...]) -> str:
    """What a pool entry is built on, by ids: customer, line, phone, bill, set-up."""
    return "/".join(_part_id(part) for part in item)


def _part_id(part: object) -> str:
    if isinstance(part, Line):
        return part.line_id
    if isinstance(part, Bill):
        return part.bill_id
    if isinstance(part, Customer):
        return part.customer_id
    return str(part)


def _assert(env: str, func: str, **arguments: object) -> EnvAssertion:
    return EnvAssertion(env_type=env, func_name=func, arguments=arguments, assert_value=True)


def _init(env: str, func: str, **arguments: object) -> EnvFunctionCall:
    return EnvFunctionCall(env_type=env, func_name=func, arguments=arguments)


def _gb(value: float) -> str:
    return f"{value:g}"


class TelecomGenerator(GroundedGenerator[_Draft, _Request, TelecomDB]):
    """Grounds telecom blueprints into new τ²-bench tasks whose gold actions realize them."""

    domain_name = "telecom"
    database = TelecomDB
    max_candidates = CANDIDATES

    # ---------------------------------------------------------------- database views

    @functools.cached_property
    def _official_lines(self) -> frozenset[str]:
        """Lines official tasks are about (by line id or phone number): never used."""
        used: set[str] = set()
        for task in self.domain.tasks():
            calls = (
                list(task.initial_state.initialization_actions or []) if task.initial_state else []
            )
            for call in calls:
                used.update(
                    str(v) for k, v in call.arguments.items() if k in ("line_id", "phone_number")
                )
            for action in (
                task.evaluation_criteria.actions if task.evaluation_criteria else None
            ) or []:
                used.update(str(v) for k, v in action.arguments.items() if k == "line_id")
        return frozenset(used)

    @functools.cached_property
    def _lines(self) -> list[tuple[Customer, Line]]:
        """(customer, line) of every line official tasks do not use, in id order."""
        out = []
        for owner in sorted(self.db.customers, key=lambda c: c.customer_id):
            for line_id in owner.line_ids:
                record = policy.line(self.db, line_id)
                if record is None:
                    continue
                if (
                    record.line_id in self._official_lines
                    or record.phone_number in self._official_lines
                ):
                    continue
                out.append((owner, record))
        return out

    @functools.cached_property
    def _active(self) -> list[tuple[Customer, Line]]:
        """(customer, line) of every active line official tasks do not use."""
        return [(c, x) for c, x in self._lines if policy.status_of(x) == "Active"]

    @functools.cached_property
    def _suspendable(self) -> list[tuple[Customer, Line]]:
        """Active lines whose customer owes nothing and whose contract runs."""
        return [
            (c, x)
            for c, x in self._active
            if not policy.overdue_bills(self.db, c) and not policy.contract_ended(x)
        ]

    # ---------------------------------------------------------------- the candidate loop

    def _gold(self, draft: _Draft) -> list[Step]:
        return draft.steps + draft.tail

    def _exclude(self, draft: _Draft, request: _Request) -> None:
        request.excluded.add(request.picked or draft.line.line_id)
        # Another pick alone may not do: the next candidate draws its phone faults anew, and
        # past FORM_TRIES candidates from any form the request allows.
        request.tries += 1
        shapes = request.shapes
        if request.tries >= FORM_TRIES and request.fallback:
            form = request.rng.choice(sorted({o.form for o in request.fallback}, key=repr))
            shapes = [o for o in request.fallback if o.form == form]
        request.option = _draw(shapes, request.rng)

    def _request(self, blueprint: Blueprint, seed: int) -> _Request:
        asked = Request.read(
            blueprint, seed, FAMILIES, "a telecom family", infeasible, checked=CONTROLS
        )
        family, outcome, rng, patterns = asked.family, asked.outcome, asked.rng, asked.patterns
        controls = asked.controls
        found, reason = options(
            family,
            outcome,
            writes=controls["num_write"],
            reads=controls["num_read"],
            computation=controls["computation"],
            difficulty=controls["difficulty_profile"],
            patterns=patterns,
        )
        if not found:
            raise GeneratorRejection(reason.reason)
        fault = control(blueprint, "fault_kind")
        found = _with_fault(found, fault)
        if not found:
            raise GeneratorRejection(
                f"fault_kind={fault}: no {family}/{outcome} task has it on the caller's phone"
            )
        # Forms first (each equally likely among those with phone faults), then the phone
        # faults, then the fewest reads.
        forms = sorted({o.form for o in found}, key=lambda f: (f.name, f.family))
        # A form the caller's phone shows goes first (a troubleshooting call, or an escalation
        # of what no tool fixes, as τ²-bench's failing tasks): the database alone holds few
        # tasks. A refusal whose focus is a rule an escalation does not hinge on keeps the
        # refusal that does.
        focus = set(asked.focus)
        if "identity_or_authorization_constraint" in focus:
            forms = [f for f in forms if f.name != "sim_locked"] or forms
        if "billing_or_payment_constraint" in focus and not focus & {
            "contract_or_fee_constraint",
            "time_window_constraint",
        }:
            forms = [f for f in forms if not f.name.startswith("contract_ended")] or forms
        fallback = [o for o in found if o.form in forms]
        # Forms that meet the counts with the fewest added look-ups: padding is filler.
        fewest = {f: min(o.pads for o in found if o.form == f) for f in forms}
        forms = [f for f in forms if fewest[f] == min(fewest.values())]
        shown = [f for f in forms if f.symptoms or f.name in ESCALATIONS]
        if outcome == "fulfill" and shown:
            # An account request without a phone fault (two lines, another line of the
            # account) now and then: its tasks are the account's, not the phone's.
            weights = [SHOWN_WEIGHT if f in shown else 1 for f in forms]
            form = rng.choices(forms, weights)[0]
        else:
            form = rng.choice(shown or forms)
        shapes = [o for o in found if o.form == form]
        option = _draw(shapes, rng)
        computation = controls["computation"]
        if computation is None:
            wants_list = "compare_options_then_apply" in patterns
            computation = "constrained_opt" if wants_list else "none"
        return _Request(
            **asked.shared(),
            option=option,
            computation=computation,
            shapes=shapes,
            fallback=fallback,
            fault=fault,
        )

    # ---------------------------------------------------------------- the caller

    def _identify(self, draft: _Draft, request: _Request) -> None:
        """Who the caller is and the identification read (by phone, id, or name and birth)."""
        owner, record = draft.customer, draft.handset
        draft.known.insert(0, f"You are {owner.full_name}.")
        draft.init.insert(
            0,
            _init("user", "set_user_info", name=owner.full_name, phone_number=record.phone_number),
        )
        how = request.rng.choice(["phone", "phone", "id", "name"])
        if "missing_information" in request.challenges:
            how = "phone"  # the caller only knows their number: the agent finds the rest
        if how == "phone":
            draft.known.append(f"Your phone number is {record.phone_number}.")
            step = Step("get_customer_by_phone", {"phone_number": record.phone_number})
        elif how == "id":
            draft.known.append(
                f"Your customer id is {owner.customer_id} and your phone number is "
                f"{record.phone_number}."
            )
            step = Step("get_customer_by_id", {"customer_id": owner.customer_id})
        else:
            draft.known.append(
                f"Your date of birth is {owner.date_of_birth} and your phone number is "
                f"{record.phone_number}."
            )
            step = Step(
                "get_customer_by_name", {"full_name": owner.full_name, "dob": owner.date_of_birth}
            )
        draft.steps.insert(0, step)
        if draft.phone is not None:
            draft.known.append(say(request.rng, OTHER_LINE, number=draft.line.phone_number))

    def _pick(self, request: _Request, pool: Sequence[PickT]) -> PickT:
        """One of ``pool`` (customer, line, ...) earlier candidates were not built on."""
        fresh = [p for p in pool if _pick_key(p) not in request.excluded] or list(pool)
        if not fresh:
            raise GeneratorRejection(
                f"no line in the database fits {request.family}/{request.outcome}"
            )
        picked = request.rng.choice(fresh)
        request.picked = _pick_key(picked)
        return picked

    def _phones(self, owner: Customer, record: Line, *unavailable: str) -> list[Line | None]:
        """The phones a caller about ``record`` may call from: its own (None) or another.

        Another is an active line of the same customer, not one of ``unavailable`` (a line
        the task suspends at the start has no service to call from).
        """
        others = [
            x
            for x in self._active_of.get(owner.customer_id, ())
            if x.line_id != record.line_id and x.line_id not in unavailable
        ]
        return [None, *others]

    @functools.cached_property
    def _active_of(self) -> dict[str, list[Line]]:
        """The active lines of each customer, by customer id."""
        out: dict[str, list[Line]] = {}
        for owner, record in self._active:
            out.setdefault(owner.customer_id, []).append(record)
        return out

    # ---------------------------------------------------------------- forms

    def _build(self, request: _Request) -> _Draft:
        """A candidate; with a requested ``fault_kind``, one whose phone has that fault.

        A caller who calls about another line than their phone's has no phone fault: another
        candidate is drawn, :data:`FORM_TRIES` times before the request is rejected.
        """
        for _ in range(FORM_TRIES):
            draft = self._build_once(request)
            if request.fault is None or request.fault in draft.phone_faults:
                return draft
            self._exclude(draft, request)
        raise GeneratorRejection(
            f"fault_kind={request.fault}: no candidate has it on the caller's phone"
        )

    def _build_once(self, request: _Request) -> _Draft:
        draft = _BUILDERS[(request.family, request.outcome)](self, request)
        self._faults(draft, request)
        self._identify(draft, request)
        if draft.troubleshooting:
            # The phone searches the network once everything is set up: a suspended line, a
            # SIM or APN fault shows as no service.
            draft.init.append(_init("user", "simulate_network_search"))
        if "diagnose_then_resolve" in request.patterns:
            self._diagnose(draft)
        return draft

    def _diagnose(self, draft: _Draft) -> None:
        """A phone check before the first fix on the phone, unless a check precedes a fix."""
        gold = draft.steps + draft.tail
        user = [s for s in gold if s.requestor == "user"]
        reads = [i for i, s in enumerate(user) if self._is_read(s)]
        writes = [i for i, s in enumerate(user) if not self._is_read(s)]
        if not writes or (reads and reads[0] < writes[-1]):
            return
        for steps in (draft.steps, draft.tail):
            for index, step in enumerate(steps):
                if step.requestor == "user":
                    steps.insert(index, Step("check_status_bar", {}, "user"))
                    return

    def _refuel(self, request: _Request) -> _Draft:
        owner, record = self._pick(request, self._active)
        draft = _Draft(
            owner,
            record,
            reason="Your mobile data stopped working.",
            purpose="Troubleshooting: a line over its data limit gets the data refuelled.",
            troubleshooting=True,
        )
        # The line's record names its phone number: the number the caller gave names the line.
        draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
        self._add_refuel(draft, request)
        return draft

    def _roaming_refuel(self, request: _Request) -> _Draft:
        """Abroad with roaming off on the line and the data limit reached: both fixed.

        τ²-bench's most common composition (data_usage_exceeded with
        user_abroad_roaming_disabled_*): the agent enables roaming, then refuels the data.
        """
        draft = self._roaming(request, own=True)
        draft.purpose = (
            "Troubleshooting abroad: roaming is enabled on the line and, over its data limit, "
            "the line gets data refuelled."
        )
        roaming_note = draft.note
        self._add_refuel(draft, request)
        draft.note = f"{roaming_note}; {draft.note}"
        return draft

    def _add_refuel(self, draft: _Draft, request: _Request) -> None:
        """The line starts over its data limit; the agent reads the usage and refuels data.

        The amount is the caller's (``aggregate``: their overage plus a margin, a rule the
        agent works out; with ``preference_change``, left open to the agent's proposal).
        """
        rng, record = request.rng, draft.line
        limit = policy.plan(self.db, record.plan_id).data_limit_gb
        price = policy.plan(self.db, record.plan_id).data_refueling_price_per_gb
        if request.computation == "aggregate":
            # Overages whose amount (overage + margin) is no number the caller or a record says.
            overs = [o / 10 for o in range(1, 15)]
            overs = [o for o in overs if round(o + REFUEL_MARGIN, 1) % 0.5 > 1e-9]
            over = rng.choice(overs)
            amount = round(over + REFUEL_MARGIN, 1)
            ask = (
                "you want just enough data added to cover what you are over your limit by, "
                f"plus {_gb(REFUEL_MARGIN)} GB more. You do not know how much you are over by."
            )
        else:
            amount = rng.choice(REFUEL_AMOUNTS)
            over = rng.choice([o / 10 for o in range(1, int(amount * 10))])
            ask = f"you want to add {_gb(amount)} GB of data to your line."
        # Left open, the amount is the agent's to propose and the user's to settle afterwards.
        left_open = "preference_change" in request.challenges
        if left_open:
            ask = "you want some extra data added to your line."
        used = round(limit + over, 1)
        draft.instructions.append(f"If the agent finds you are over your data limit, {ask}")
        if left_open:
            draft.instructions.append(f"You want {_gb(amount)} GB of data added.")
        draft.over_limit(used)
        # A rule for the amount is the caller's answer when the agent offers data.
        cue = f"You want {ask[len('you want ') :]}" if request.computation == "aggregate" else None
        draft.steps.append(Step("refuel_data", {**draft.account, "gb_amount": amount}, cue=cue))
        charge = round(amount * price, 2)
        draft.communicate.append(money(charge, "the charge for the extra data"))
        draft.note = f"{_gb(amount)} GB were added for ${charge:.2f}"
        draft.expect_refuel(amount)
        draft.data_works = True

    def _bill_check(self, draft: _Draft, request: _Request, bill_id: str) -> None:
        owner = draft.customer
        # Where no computation is asked for, a caller without the bill id has the agent find
        # it among their bills (which makes the write a pick from a list).
        unasked = request.controls["computation"] is None
        lacks_id = "missing_information" in request.challenges and unasked
        if request.computation == "constrained_opt" or lacks_id:
            # The agent finds the bill among the customer's: the caller does not know its id.
            draft.steps.append(Step("get_bills_for_customer", {"customer_id": owner.customer_id}))
        else:
            draft.known.append(say(request.rng, BILL_KNOWN, bill_id=bill_id))
            draft.steps.append(Step("get_details_by_id", {"id": bill_id}))

    def _payment(self, draft: _Draft, request: _Request, bill_id: str, pay: bool) -> None:
        owner = draft.customer
        self._bill_check(draft, request, bill_id)
        draft.steps.append(
            Step("send_payment_request", {"customer_id": owner.customer_id, "bill_id": bill_id})
        )
        if not pay:
            draft.instructions.append(say(request.rng, PAY_LATER))
            draft.note = f"a payment request for bill {bill_id} was sent to your phone"
            return
        draft.instructions.append(say(request.rng, PAY_NOW))
        draft.steps.append(Step("check_payment_request", {}, "user"))
        draft.steps.append(Step("make_payment", {}, "user"))
        draft.steps.append(Step("get_details_by_id", {"id": bill_id}))
        draft.assertions.append(
            _assert("assistant", "assert_no_overdue_bill", overdue_bill_id=bill_id)
        )

    @functools.cached_property
    def _payables(self) -> dict[bool, list[_Payable]]:
        """:meth:`_payable`, with and without phone faults."""
        return {faults: self._payable(faults) for faults in (False, True)}

    def _payable(self, phone_faults: bool) -> list[_Payable]:
        """(customer, phone, bill, line, paid first, ended) of every bill a caller may pay.

        An overdue bill of the database, or (``bill`` None) a new one; with ``line``, that
        line was suspended for the bill at the start (τ²-bench's suspend_line, or
        suspend_line_for_overdue_bill for a new bill, the line's contract ``ended`` with it
        or not; a customer who owed a bill paid it before, ``paid first``). The phone is one
        of the customer's active lines, the suspended one only without ``phone_faults`` (it
        has no service to check). A line suspended in the database gets its new bill's
        suspension instead (lifted, then suspended for the bill: τ²-bench's tools need an
        active line).
        """
        out: list[_Payable] = []
        for owner, record in self._lines:
            owed = policy.overdue_bills(self.db, owner)
            active = policy.status_of(record) == "Active"
            if active:
                out += [(owner, record, bill, None, False, False) for bill in owed]
            if policy.contract_ended(record) or not (
                active or policy.status_of(record) == "Suspended"
            ):
                continue
            phones = [p or record for p in self._phones(owner, record)][int(phone_faults) :]
            for phone in phones:
                if active:
                    out += [(owner, phone, bill, record, False, False) for bill in owed[:1]]
                out += [(owner, phone, None, record, bool(owed), end) for end in (False, True)]
        return out

    def _pay(self, request: _Request) -> _Draft:
        option = request.option
        pool = self._payables[(option.fixes, option.checks) != (0, 0)]
        if request.computation == "constrained_opt":
            # The bill list offers a choice: two bills or more, a new one counted.
            pool = [p for p in pool if len(p[0].bill_ids) + (p[2] is None) >= 2]
        if not pool:
            raise GeneratorRejection("no customer in the database has an overdue bill")
        owner, record, bill, suspended, paid_first, ended = self._pick(request, pool)
        pay = option.form.name == "pay"
        draft = _Draft(
            owner,
            record,
            reason=say(request.rng, PAY_REASONS),
            purpose="Overdue bill payment through a payment request.",
        )
        if suspended is not None:
            number = suspended.phone_number
            mine = suspended.line_id == record.line_id
            draft.known.append(say(request.rng, SUSPENDED_FOR_BILL[mine], number=number))
            if ended:
                draft.known.append(say(request.rng, CONTRACT_ENDED_TOO))
            draft.instructions.append(say(request.rng, LINE_LATER))
        if bill is not None:
            bill_id, due = bill.bill_id, bill.total_due
            if suspended is not None:
                draft.init.append(
                    _init(
                        "assistant",
                        "suspend_line",
                        customer_id=owner.customer_id,
                        line_id=suspended.line_id,
                        reason="overdue bill",
                    )
                )
        else:
            assert suspended is not None
            if paid_first:
                draft.clear_overdue(policy.overdue_bills(self.db, owner))
            if policy.status_of(suspended) == "Suspended":
                draft.init.append(
                    _init(
                        "assistant",
                        "resume_line",
                        customer_id=owner.customer_id,
                        line_id=suspended.line_id,
                    )
                )
            bill_id = self._new_bill_id(request)
            draft.init.append(
                _init(
                    "assistant",
                    "suspend_line_for_overdue_bill",
                    customer_id=owner.customer_id,
                    line_id=suspended.line_id,
                    new_bill_id=bill_id,
                    contract_ended=ended,
                )
            )
            due = policy.plan(self.db, suspended.plan_id).price_per_month
        self._payment(draft, request, bill_id, pay)
        draft.communicate.append(money(due, "the amount due on the overdue bill"))
        if pay:
            draft.note = f"bill {bill_id} is now paid"
        # A phone on the suspended line has no service, and paying does not lift it.
        draft.data_works = suspended is None or suspended.line_id != record.line_id
        return draft

    @functools.cached_property
    def _resumable(self) -> list[tuple[Customer, Line, str]]:
        """(customer, line, how it comes to be suspended) of every line a resume may lift.

        ``suspended``: suspended in the database; ``hold``: suspended at the start (τ²-bench's
        suspend_line) for a customer who owes nothing; ``paid``: suspended for the overdue
        bill its customer paid before the call, so nothing is owed any more.
        """
        out = []
        for owner, record in self._lines:
            if policy.contract_ended(record):
                continue
            if policy.status_of(record) == "Suspended":
                if policy.resume_allowed(self.db, owner, record)[0]:
                    out.append((owner, record, "suspended"))
            elif policy.status_of(record) == "Active":
                owes = bool(policy.overdue_bills(self.db, owner))
                out.append((owner, record, "paid" if owes else "hold"))
        return out

    def _resume(self, request: _Request) -> _Draft:
        """A suspension lifted: alone, with a restart, or abroad with roaming enabled too.

        Without a restart the caller may call from another of their lines about this one.
        """
        reboot = request.option.form.reboot
        pool = [
            (owner, record, how, phone)
            for owner, record, how in self._resumable
            for phone in ([None] if reboot else self._phones(owner, record))
        ]
        owner, record, how, phone = self._pick(request, pool)
        rng = request.rng
        draft = _Draft(
            owner,
            record,
            reason=say(rng, RESUME_REASONS[phone is not None], number=record.phone_number),
            purpose="Lift a line suspension the policy allows lifting.",
            phone=phone,
        )
        self._suspend_first(draft, record, how)
        if how == "paid":
            draft.clear_overdue(policy.overdue_bills(self.db, owner))
            draft.known.append(say(rng, PAID_SINCE))
        self._lift(draft, reboot=reboot)
        if request.option.form.name == "resume_roaming":
            self._abroad(draft, rng)
            draft.steps.append(Step("enable_roaming", draft.account))
            draft.note += "; roaming is enabled on it at no cost"
        return draft

    @staticmethod
    def _abroad(draft: _Draft, rng: random.Random) -> None:
        """The caller's phone is abroad, its roaming switch on, roaming off on its line."""
        draft.known.append(f"You are currently abroad in {rng.choice(_COUNTRIES)}.")
        draft.init.append(_init("user", "set_user_location", abroad=True))
        if draft.line.roaming_enabled:
            draft.init.append(_init("assistant", "disable_roaming", **draft.account))
        # The phone's own roaming switch is on unless a phone fault turns it off.
        draft.init.append(_init("user", "turn_roaming_on"))
        draft.assertions.append(
            _assert("user", "assert_mobile_roaming_status", expected_status=True)
        )
        draft.data_works = True

    def _suspend_first(self, draft: _Draft, record: Line, how: str) -> None:
        """Set ``record`` up suspended as ``how`` says (see :meth:`_resumable`)."""
        args = {"customer_id": draft.customer.customer_id, "line_id": record.line_id}
        if how == "hold":
            draft.init.append(_init("assistant", "suspend_line", **args, reason="hold"))
        elif how == "paid":
            draft.init.append(_init("assistant", "suspend_line", **args, reason="overdue bill"))

    def _resume_lines(self, request: _Request) -> _Draft:
        """Two suspended lines of one account, both lifted (a family's lines, one call)."""
        rng = request.rng
        resumable = self._resumable
        pool = []
        for owner, first, how in resumable:
            for other, second, how2 in resumable:
                if other.customer_id != owner.customer_id or second.line_id <= first.line_id:
                    continue
                phones = self._phones(owner, first, second.line_id)
                pool += [(owner, first, second, how, how2, phone) for phone in phones]
        owner, first, second, how, how2, phone = self._pick(request, pool)
        numbers = {"first": first.phone_number, "second": second.phone_number}
        draft = _Draft(
            owner,
            first,
            reason=say(rng, RESUME_BOTH, **numbers),
            purpose="Lift the suspensions of two lines of one account, as the policy allows.",
            phone=phone,
        )
        for record, kind in ((first, how), (second, how2)):
            self._suspend_first(draft, record, kind)
        if "paid" in (how, how2):
            draft.clear_overdue(policy.overdue_bills(self.db, owner))
            draft.known.append(say(rng, PAID_SINCE_BOTH))
        for record in (first, second):
            args = {"customer_id": owner.customer_id, "line_id": record.line_id}
            draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
            draft.steps.append(Step("resume_line", args))
            draft.assertions.append(
                _assert("assistant", "assert_line_status", **args, expected_status="Active")
            )
        draft.note = f"the lines {first.phone_number} and {second.phone_number} are active again"
        return draft

    def _lift(self, draft: _Draft, reboot: bool) -> None:
        record = draft.line
        draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
        draft.steps.append(Step("resume_line", draft.account))
        draft.expect_status("Active")
        draft.note = f"the line {record.phone_number} is active again"
        if reboot:
            # The restart comes with the phone's fixes (faults.Combo.steps), last.
            draft.troubleshooting = True
            draft.reason = "Your line was suspended and your phone has no service."
        elif draft.phone is None:
            draft.instructions.append("You will restart your phone yourself after the call.")

    def _overdue_resume(self, request: _Request) -> _Draft:
        # A line suspended for a new overdue bill (τ²-bench's suspend_line_for_overdue_bill,
        # for customers who owe nothing yet), or for the one overdue bill its customer has.
        pool: list[tuple[Customer, Line, Bill | None]] = [
            (c, x, None) for c, x in self._suspendable
        ]
        for owner, record in self._active:
            owed = policy.overdue_bills(self.db, owner)
            if len(owed) == 1 and not policy.contract_ended(record):
                pool.append((owner, record, owed[0]))
        if request.computation == "constrained_opt":
            pool = [p for p in pool if p[0].bill_ids]  # with the overdue one: two or more
        owner, record, bill = self._pick(request, pool)
        draft = _Draft(
            owner,
            record,
            reason="Your line was suspended because of an unpaid bill. You want to pay it and "
            "have the line working again.",
            purpose="Pay the overdue bill, then lift the suspension.",
        )
        if bill is None:
            bill_id = self._new_bill_id(request)
            draft.suspended(bill_id, ended=False)
            due = policy.plan(self.db, record.plan_id).price_per_month
        else:
            bill_id = bill.bill_id
            draft.init.append(
                _init("assistant", "suspend_line", **draft.account, reason="overdue bill")
            )
            due = bill.total_due
        draft.instructions.append("You agree to pay any overdue bill.")
        self._payment(draft, request, bill_id, pay=True)
        draft.communicate.append(money(due, "the amount due on the overdue bill"))
        self._lift(draft, reboot=request.option.form.reboot)
        draft.reason = (
            "Your phone has had no service since your line was suspended for an unpaid bill."
        )
        return draft

    def _new_bill_id(self, request: _Request) -> str:
        taken = {b.bill_id for b in self.db.bills}
        while True:
            bill_id = f"B{request.rng.randint(2_000_000, 9_999_999)}"
            if bill_id not in taken:
                return bill_id

    def _fixes(self, request: _Request) -> _Draft:
        owner, record = self._pick(request, self._active)
        draft = _Draft(
            owner,
            record,
            reason="Your phone is not working properly.",
            purpose="Troubleshooting: the user fixes the faults the agent diagnoses on the phone.",
            troubleshooting=True,
        )
        return draft

    def _roaming(self, request: _Request, own: bool = False) -> _Draft:
        """Roaming enabled on a line abroad, the caller's own or another of their account.

        Another (its user abroad; the caller's phone at home and fine) only where no phone
        fault is asked for and not ``own``.
        """
        rng = request.rng
        option = request.option
        others = not own and (option.fixes, option.checks) == (0, 0)
        pool = [
            (owner, record, phone)
            for owner, record in self._active
            for phone in (self._phones(owner, record) if others else [None])
        ]
        owner, record, phone = self._pick(request, pool)
        args = {"customer_id": owner.customer_id, "line_id": record.line_id}
        if phone is None:
            draft = _Draft(
                owner,
                record,
                reason="You are travelling abroad and your mobile data does not work here.",
                purpose="Troubleshooting abroad: roaming is enabled on the line.",
                troubleshooting=True,
            )
            self._abroad(draft, rng)
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

    def _faults(self, draft: _Draft, request: _Request) -> None:
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

    # ---------------------------------------------------------------- refusals

    def _refuse_refuel(self, request: _Request) -> _Draft:
        """A refuel beyond the cap: refused."""
        rng = request.rng
        owner, record = self._pick(request, self._active)
        limit = policy.plan(self.db, record.plan_id).data_limit_gb
        amount = rng.choice([2.5, 3.0, 4.0, 5.0])
        draft = _Draft(
            owner,
            record,
            reason=f"Your mobile data stopped working. You want {_gb(amount)} GB of data "
            "added to your line, and you will not accept less.",
            purpose="Refuel beyond the 2 GB cap: refused.",
        )
        used = round(limit + rng.choice([0.3, 0.6, 1.2]), 1)
        draft.over_limit(used)
        why = policy.refuel_allowed(record, amount)[1]
        draft.expect_refuel(0.0)
        refused = Step("refuel_data", {**draft.account, "gb_amount": amount})
        return self._refused(draft, why, "refuel the data", refused)

    def _refuse_payment(self, request: _Request) -> _Draft:
        """A payment request for a bill that is not overdue: refused."""
        pool = []
        for owner, record in self._lines:
            for bill_id in owner.bill_ids:
                bill = policy.bill(self.db, bill_id)
                if bill is not None and policy.status_of(bill) in (
                    "Issued",
                    "Paid",
                    "Disputed",
                ):
                    pool.append((owner, record, bill))
        owner, record, bill = self._pick(request, pool)
        draft = _Draft(
            owner,
            record,
            reason=f"You want to pay bill {bill.bill_id} now through a payment request.",
            purpose="Payment request for a bill that is not overdue: refused.",
        )
        draft.known.append(f"The bill you are calling about is {bill.bill_id}.")
        draft.steps.append(Step("get_details_by_id", {"id": bill.bill_id}))
        why = policy.payment_request_allowed(self.db, owner, bill)[1]
        refused = Step(
            "send_payment_request", {"customer_id": owner.customer_id, "bill_id": bill.bill_id}
        )
        return self._refused(draft, why, "send a payment request", refused)

    def _refuse_roaming(self, request: _Request) -> _Draft:
        """Roaming asked for on a line of another customer: refused."""
        rng = request.rng
        owner, record = self._pick(request, self._active)
        others = [(c, x) for c, x in self._lines if c.customer_id != owner.customer_id]
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
        return self._refused(draft, why, "enable roaming on that line", refused)

    def _refuse_line(self, request: _Request) -> _Draft:
        rng = request.rng
        kinds = ["contract", "unpaid", "suspend"]
        if (
            "contract_or_fee_constraint" in request.focus
            or "time_window_constraint" in request.focus
        ):
            kinds = ["contract"]
        elif "billing_or_payment_constraint" in request.focus:
            kinds = ["unpaid"]
        kind = rng.choice(kinds)
        owner, record = self._pick(request, self._suspendable)
        if kind == "suspend":
            draft = _Draft(
                owner,
                record,
                reason="You are going abroad for a few months and want your line suspended "
                "while you are away.",
                purpose="Suspension without a policy reason: refused.",
            )
            draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
            why = policy.suspend_allowed(self.db, owner, record)[1]
            draft.expect_status("Active")
            refused = Step("suspend_line", {**draft.account, "reason": "travelling abroad"})
            return self._refused(draft, why, "suspend the line", refused)
        ended = kind == "contract"
        bill_id = self._new_bill_id(request)
        draft = _Draft(
            owner,
            record,
            reason="Your line is suspended and you want the suspension lifted."
            + ("" if ended else " You do not want to pay anything during this call."),
            purpose="Lifting a suspension the policy forbids: refused.",
        )
        draft.suspended(bill_id, ended)
        draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
        if ended:
            end = _last_month_end()
            why = (
                f"the contract of the line {record.phone_number} ended on {end}, so its suspension "
                "cannot be lifted, even once the bills are paid"
            )
        else:
            why = (
                f"bill {bill_id} is overdue; the suspension can be lifted only after every "
                "overdue bill is paid"
            )
        draft.expect_status("Suspended")
        return self._refused(draft, why, "lift the suspension", Step("resume_line", draft.account))

    def _refused(self, draft: _Draft, why: str, rule: str, refused: Step) -> _Draft:
        """``draft`` refusing ``refused`` (the write the caller asks for) because ``why``."""
        draft.instructions.append("If the agent cannot do it, accept and end the call.")
        draft.note = why
        draft.refused.append(refused)
        draft.nl_assertions.append(f"Agent does not {rule} because {why}.")
        return draft

    def _escalated(self, draft: _Draft, why: str, summary: str) -> _Draft:
        """The agent cannot fix it (``why``) and transfers the call, as the manual says."""
        draft.instructions.append("If the agent transfers you, wait for the human agent.")
        draft.note = why
        full = f"Customer {draft.customer.customer_id}: {summary}"
        draft.tail.append(Step("transfer_to_human_agents", {"summary": full}))
        draft.transfer = full
        return draft

    def _sim_locked(self, request: _Request) -> _Draft:
        """No service from a SIM card locked with a PIN: only technical support can unlock it."""
        owner, record = self._pick(request, self._active)
        draft = _Draft(
            owner,
            record,
            reason=say(request.rng, SYMPTOM_REASONS["service"]),
            purpose="Troubleshooting a SIM card locked with a PIN: escalated.",
            troubleshooting=True,
        )
        draft.init.append(_init("user", "lock_sim_card", mode="pin"))
        draft.steps.append(Step("check_sim_status", {}, "user"))
        draft.assertions.append(
            _assert("user", "assert_service_status", expected_status="no_service")
        )
        # The phone faults' set-up (``_faults``) says when the caller considers it fixed.
        return self._escalated(
            draft,
            "your SIM card is locked with a PIN, which only technical support can unlock",
            "no service, SIM card locked with a PIN",
        )

    def _contract_ended(self, request: _Request) -> _Draft:
        """No service on a line suspended after its contract ended: it cannot be lifted.

        With the ``contract_ended_sim_locked`` form, the SIM card is locked with a PIN too.
        """
        owner, record = self._pick(request, self._suspendable)
        locked = request.option.form.name == "contract_ended_sim_locked"
        draft = _Draft(
            owner,
            record,
            reason=say(request.rng, SYMPTOM_REASONS["service"]),
            purpose="Troubleshooting a line suspended after its contract ended"
            + (" and a SIM card locked with a PIN" if locked else "")
            + ": escalated.",
            troubleshooting=True,
        )
        draft.suspended(self._new_bill_id(request), ended=True)
        if locked:
            draft.init.append(_init("user", "lock_sim_card", mode="pin"))
        draft.init.append(_init("user", "simulate_network_search"))
        draft.steps.append(Step("get_details_by_id", {"id": record.line_id}))
        if locked:
            draft.steps.append(Step("check_sim_status", {}, "user"))
            draft.instructions.append(
                "Do what the agent asks on your phone and say in your own words what it shows."
            )
        draft.instructions.append("You agree to pay any overdue bill.")
        draft.instructions.append(SYMPTOM_SOLVED["service"])
        draft.expect_status("Suspended")
        draft.assertions.append(
            _assert("user", "assert_service_status", expected_status="no_service")
        )
        why = (
            f"the contract of the line {record.phone_number} ended on {_last_month_end()}, so "
            "its suspension cannot be lifted"
        )
        if locked:
            why += (
                ", and your SIM card is locked with a PIN, which only technical support can unlock"
            )
        # Service comes back only with the suspension lifted: the write the policy forbids.
        draft.refused.append(Step("resume_line", draft.account))
        return self._escalated(
            draft,
            why,
            "no service, line suspended after its contract ended"
            + (", SIM card locked with a PIN" if locked else ""),
        )

    def _refuel_spent(self, request: _Request) -> _Draft:
        """No mobile data on a line over its limit that already had the most data refuelled."""
        rng = request.rng
        # The earlier refuel is charged on a draft bill: a new one would get a random id.
        pool = [
            (c, x)
            for c, x in self._active
            if not x.data_refueling_gb
            and any(
                (b := policy.bill(self.db, i)) is not None and policy.status_of(b) == "Draft"
                for i in c.bill_ids
            )
        ]
        owner, record = self._pick(request, pool)
        limit = policy.plan(self.db, record.plan_id).data_limit_gb
        draft = _Draft(
            owner,
            record,
            reason=say(rng, SYMPTOM_REASONS["mobile_data"]),
            purpose="Troubleshooting a line over its limit with no refuel left: escalated.",
            troubleshooting=True,
        )
        draft.init.append(
            _init("assistant", "refuel_data", **draft.account, gb_amount=policy.MAX_REFUEL_GB)
        )
        draft.over_limit(round(limit + policy.MAX_REFUEL_GB + rng.choice([0.3, 0.6, 1.1]), 1))
        draft.instructions.append(
            f"You would add up to {_gb(policy.MAX_REFUEL_GB)} GB of data if needed, but you do "
            "not want to change your plan."
        )
        draft.assertions.append(_assert("user", "assert_mobile_data_status", expected_status=False))
        # Data comes back only with more data: the refuel the policy forbids.
        draft.refused.append(Step("refuel_data", draft.account))
        return self._escalated(
            draft,
            f"the line {record.phone_number} is over its data limit, and at most "
            f"{_gb(policy.MAX_REFUEL_GB)} GB of data can be refuelled on a line: it already had "
            f"{_gb(policy.MAX_REFUEL_GB)} GB this month",
            "mobile data off, data limit reached with the refuel maximum used",
        )

    def _handoff(self, request: _Request) -> _Draft:
        owner, record = self._pick(request, self._lines)
        ask = request.rng.choice(_HANDOFF_ASKS[request.family])
        draft = _Draft(
            owner,
            record,
            reason=ask,
            purpose="A request no telecom tool can fulfil: the agent transfers it.",
        )
        draft.instructions.append("If the agent transfers you, wait for the human agent.")
        summary = f"Customer {owner.customer_id}: {ask[len('You want ') :].rstrip('.')}"
        draft.tail.append(Step("transfer_to_human_agents", {"summary": summary}))
        draft.transfer = summary
        return draft

    # ---------------------------------------------------------------- reads and counts

    def _pool(self, draft: _Draft, request: _Request) -> list[Step]:
        """Look-ups the agent could add: the customer, the line, its plan and device, bills."""
        owner, record = draft.customer, draft.line
        done = {(s.name, str(s.arguments)) for s in draft.steps + draft.tail}
        ids = {str(v) for s in draft.steps + draft.tail for v in s.arguments.values()}
        pool = [
            Step("get_customer_by_id", {"customer_id": owner.customer_id}),
            Step("get_details_by_id", {"id": record.plan_id}),
            Step("get_details_by_id", {"id": record.device_id}),
        ]
        if record.line_id not in ids:
            pool.append(Step("get_details_by_id", {"id": record.line_id}))
            pool.append(Step("get_data_usage", draft.account))
        # The bill list would offer a choice to a later payment request: only where it is one.
        pays = any(s.name == "send_payment_request" for s in draft.steps)
        if not pays:
            pool.append(Step("get_bills_for_customer", {"customer_id": owner.customer_id}))
        request.rng.shuffle(pool)
        pool += [Step(name, {}, "user") for name in USER_CHECKS]
        return [s for s in pool if (s.name, str(s.arguments)) not in done]

    def _pad_reads(self, draft: _Draft, request: _Request) -> None:
        """Add look-ups right after the identification to reach the planned read count."""
        first: list[Step] = []
        hops: set[str] = set()
        if "multi_hop_retrieval" in request.patterns:
            # customer -> line -> its plan or device: ids the agent learns from the records.
            hop = request.rng.choice([x for x in (draft.line.plan_id, draft.line.device_id) if x])
            hops = {hop, draft.line.line_id}
            line_read = self._line_read(draft)
            if _hops_from_line(request.option.form, request.patterns) and line_read is not None:
                draft.steps.insert(line_read + 1, Step("get_details_by_id", {"id": hop}))
            else:
                first = [
                    Step("get_details_by_id", {"id": draft.line.line_id}),
                    Step("get_details_by_id", {"id": hop}),
                ]
        reads = self._reads(draft)
        pool = [s for s in self._pool(draft, request) if s.arguments.get("id") not in hops]
        if not first and self._line_read_guards_write(draft):
            # A plan or device read would go between that line read and its write.
            needs_line = {draft.line.plan_id, draft.line.device_id}
            pool = [s for s in pool if s.arguments.get("id") not in needs_line]
        extra = request.option.reads - reads - len(first)
        if extra < 0 or extra > len(pool):
            raise GeneratorRejection(
                f"num_read could not be met: the task needs {reads + len(first)} read(s), "
                f"{request.option.reads} were planned"
            )
        agent = [s for s in pool if s.requestor == "assistant"]
        user = [s for s in pool if s.requestor == "user"]
        picked = (agent[: extra // 2 + extra % 2] + user)[:extra]
        if len(picked) < extra:
            picked = (agent + user)[:extra]
        self._place(draft, first + picked)

    @staticmethod
    def _line_read(draft: _Draft) -> int | None:
        """Where the draft first reads the line it acts on, or None."""
        return next(
            (
                i
                for i, s in enumerate(draft.steps)
                if s.name == "get_details_by_id" and s.arguments.get("id") == draft.line.line_id
            ),
            None,
        )

    def _line_read_guards_write(self, draft: _Draft) -> bool:
        """Whether the draft's only read of the line comes right before a write."""
        steps = draft.steps
        at = [
            i
            for i, s in enumerate(steps)
            if s.name == "get_details_by_id" and s.arguments.get("id") == draft.line.line_id
        ]
        return len(at) == 1 and at[0] + 1 < len(steps) and not self._is_read(steps[at[0] + 1])

    def _place(self, draft: _Draft, pads: list[Step]) -> None:
        """Put ``pads`` after the identification; a plan or device read after a line read.

        The plan and device ids are on the line's record: read before it, the agent would have
        to look the line up first, a call the task does not count.
        """
        line = draft.line
        needs_line = {line.plan_id, line.device_id}
        reads_line = Step("get_details_by_id", {"id": line.line_id})

        def is_line(step: Step) -> bool:
            return step.name == "get_details_by_id" and step.arguments.get("id") == line.line_id

        needy = [s for s in pads if s.arguments.get("id") in needs_line]
        if not needy or any(is_line(s) for s in pads):
            pads.sort(key=lambda s: s.arguments.get("id") in needs_line)
            draft.steps[1:1] = pads
            return
        later = next((i for i, s in enumerate(draft.steps) if is_line(s)), None)
        if later is None:
            # No read of the line anywhere: one of the plan or device reads makes way for it.
            pads[pads.index(needy[0])] = reads_line
            pads.sort(key=lambda s: s.arguments.get("id") in needs_line)
            draft.steps[1:1] = pads
            return
        rest = [s for s in pads if s not in needy]
        draft.steps[later + 1 : later + 1] = needy
        draft.steps[1:1] = rest

    # ---------------------------------------------------------------- assembly

    def _assemble(self, draft: _Draft, request: _Request) -> Task:
        rng, instructions = self._scene(
            request,
            draft.instructions,
            CHALLENGES,
            say(request.rng, GROUNDED),
        )
        assertions = list(draft.assertions)
        # An escalated call leaves the symptom as it is (a locked SIM keeps the phone off the
        # network): its own assertions say so.
        if draft.symptom is not None and draft.transfer is None:
            assertions += [
                _assert("user", func, **arguments)
                for func, arguments in SYMPTOM_CHECKS[draft.symptom]
            ]
        if draft.data_works and draft.symptom != "mobile_data":
            assertions.append(_assert("user", "assert_mobile_data_status", expected_status=True))
        basis = [RewardType.ACTION]
        if assertions:
            basis.insert(0, RewardType.ENV_ASSERTION)
        if draft.communicate:
            basis.append(RewardType.COMMUNICATE)
        return self._task(
            draft,
            request,
            persona=rng.choice(PERSONAS),
            instructions=instructions,
            reward_basis=basis,
            env_assertions=assertions,
        )


_COUNTRIES = ("France", "Japan", "Mexico", "Italy", "Canada", "Spain")


def _last_month_end() -> str:
    # suspend_line_for_overdue_bill ends the contract on the last day of the previous month.
    first = policy.TODAY.replace(day=1)
    return str(first.fromordinal(first.toordinal() - 1))


def _lift_suspension(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Lift a suspension: directly, on two lines, or after paying the overdue bill."""
    if request.option.form.name.startswith("overdue"):
        return gen._overdue_resume(request)
    if request.option.form.name == "resume_lines":
        return gen._resume_lines(request)
    return gen._resume(request)


def _troubleshoot(gen: TelecomGenerator, request: _Request) -> _Draft:
    """Fix the phone: its faults alone, or with roaming enabled abroad (the option's form)."""
    if request.option.form.name == "fixes":
        return gen._fixes(request)
    return gen._roaming(request)


def _by_form(
    **builders: Callable[[TelecomGenerator, _Request], _Draft],
) -> Callable[[TelecomGenerator, _Request], _Draft]:
    """The builder of the option's form, by form name."""

    def build(gen: TelecomGenerator, request: _Request) -> _Draft:
        return builders[request.option.form.name](gen, request)

    return build


_BUILDERS: dict[tuple[str, str], Callable[[TelecomGenerator, _Request], _Draft]] = {
    ("plan_change", "fulfill"): _by_form(
        refuel=TelecomGenerator._refuel, roaming_refuel=TelecomGenerator._roaming_refuel
    ),
    ("plan_change", "refuse"): _by_form(
        refuse=TelecomGenerator._refuse_refuel, refuel_spent=TelecomGenerator._refuel_spent
    ),
    ("billing_issue", "fulfill"): TelecomGenerator._pay,
    ("billing_issue", "refuse"): TelecomGenerator._refuse_payment,
    ("line_management", "fulfill"): _lift_suspension,
    ("line_management", "refuse"): _by_form(
        refuse=TelecomGenerator._refuse_line,
        contract_ended=TelecomGenerator._contract_ended,
        contract_ended_sim_locked=TelecomGenerator._contract_ended,
    ),
    ("service_troubleshooting", "fulfill"): _troubleshoot,
    ("service_troubleshooting", "refuse"): _by_form(
        refuse=TelecomGenerator._refuse_roaming, sim_locked=TelecomGenerator._sim_locked
    ),
    ("device_upgrade", "refuse"): TelecomGenerator._handoff,
    ("account_profile_update", "refuse"): TelecomGenerator._handoff,
}
