"""The telecom task forms, the shapes they take, and the feasibility rule over them."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evosyn.buckets import BUCKET_RANGES, DIFFICULTY_CALLS, OPEN_END
from evosyn.environments.feasibility import Asked, Checks, Conflict
from evosyn.environments.kit.rules import opening_rules
from evosyn.environments.telecom import faults

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
#: Most look-ups added to a task beyond the ones its form needs (the pool is larger).
MAX_PADS = 8
#: Families whose write has no detail a caller leaves open to the agent's proposal.
UNVARIED = tuple(f for f in FAMILIES if f != "plan_change")


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
