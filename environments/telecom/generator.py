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
from collections.abc import Callable, Sequence

from tau2.data_model.tasks import RewardType, Task
from tau2.domains.telecom.data_model import Customer, Line, TelecomDB

from evosyn.environments.kit.grammar import say
from evosyn.environments.kit.grounding import CONTROLS, GroundedGenerator, Request, Step, control
from evosyn.environments.kit.screen import GeneratorRejection
from evosyn.environments.telecom import policy
from evosyn.environments.telecom.billing import _pay, _refuse_payment
from evosyn.environments.telecom.drafts import (
    PickT,
    _assert,
    _Draft,
    _init,
    _Payable,
    _pick_key,
    _Request,
)
from evosyn.environments.telecom.forms import (
    CHECKS,
    ESCALATIONS,
    FAMILIES,
    HANDOFF_FAMILIES,
    _draw,
    _hops_from_line,
    _with_fault,
    infeasible,
    options,
)
from evosyn.environments.telecom.refuels import (
    _refuel,
    _refuel_spent,
    _refuse_refuel,
    _roaming_refuel,
)
from evosyn.environments.telecom.suspension import _contract_ended, _lift_suspension, _refuse_line
from evosyn.environments.telecom.troubleshooting import (
    _faults,
    _refuse_roaming,
    _sim_locked,
    _troubleshoot,
)
from evosyn.environments.telecom.wording import GROUNDED, OTHER_LINE, SYMPTOM_CHECKS
from evosyn.records import Blueprint

__all__ = ["CANDIDATES", "CHECKS", "FAMILIES", "HANDOFF_FAMILIES", "TelecomGenerator", "infeasible"]

#: Candidates the Generator tries for a blueprint: the database is small, so a request's
#: fresh tasks can be few among many it already made.
CANDIDATES = 16
#: Candidates drawn from the form first chosen before any form the request allows is drawn.
FORM_TRIES = 6
#: How much likelier a fulfilled request's form is drawn when the caller's phone shows it.
SHOWN_WEIGHT = 3

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
        _faults(draft, request)
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


def _handoff(gen: TelecomGenerator, request: _Request) -> _Draft:
    owner, record = gen._pick(request, gen._lines)
    ask = request.rng.choice(_HANDOFF_ASKS[request.family])
    draft = _Draft(
        owner,
        record,
        reason=ask,
        purpose="A request no telecom tool can fulfil: the agent transfers it.",
    )
    draft.instructions.append("If the agent transfers you, wait for the human agent.")
    summary = f"Customer {owner.customer_id}: {ask[len('You want ') :].rstrip('.')}"
    # The summary is the agent's to write: compared by name only, as in τ²-bench's own tasks.
    draft.tail.append(Step("transfer_to_human_agents", {"summary": summary}, compare_args=[]))
    draft.transfer = summary
    return draft


def _by_form(
    **builders: Callable[[TelecomGenerator, _Request], _Draft],
) -> Callable[[TelecomGenerator, _Request], _Draft]:
    """The builder of the option's form, by form name."""

    def build(gen: TelecomGenerator, request: _Request) -> _Draft:
        return builders[request.option.form.name](gen, request)

    return build


_BUILDERS: dict[tuple[str, str], Callable[[TelecomGenerator, _Request], _Draft]] = {
    ("plan_change", "fulfill"): _by_form(refuel=_refuel, roaming_refuel=_roaming_refuel),
    ("plan_change", "refuse"): _by_form(refuse=_refuse_refuel, refuel_spent=_refuel_spent),
    ("billing_issue", "fulfill"): _pay,
    ("billing_issue", "refuse"): _refuse_payment,
    ("line_management", "fulfill"): _lift_suspension,
    ("line_management", "refuse"): _by_form(
        refuse=_refuse_line,
        contract_ended=_contract_ended,
        contract_ended_sim_locked=_contract_ended,
    ),
    ("service_troubleshooting", "fulfill"): _troubleshoot,
    ("service_troubleshooting", "refuse"): _by_form(refuse=_refuse_roaming, sim_locked=_sim_locked),
    ("device_upgrade", "refuse"): _handoff,
    ("account_profile_update", "refuse"): _handoff,
}
