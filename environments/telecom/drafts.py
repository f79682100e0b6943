"""The telecom Generator's records: the draft under construction and the request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tau2.data_model.tasks import EnvAssertion, EnvFunctionCall
from tau2.domains.telecom.data_model import Bill, Customer, Line

from evosyn.environments.kit.grounding import Draft, Request, Step
from evosyn.environments.telecom.forms import Option


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


def _refused(draft: _Draft, why: str, rule: str, refused: Step) -> _Draft:
    """``draft`` refusing ``refused`` (the write the caller asks for) because ``why``."""
    draft.instructions.append("If the agent cannot do it, accept and end the call.")
    draft.note = why
    draft.refused.append(refused)
    draft.nl_assertions.append(f"Agent does not {rule} because {why}.")
    return draft


def _escalated(draft: _Draft, why: str, summary: str) -> _Draft:
    """The agent cannot fix it (``why``) and transfers the call, as the manual says."""
    draft.instructions.append("If the agent transfers you, wait for the human agent.")
    draft.note = why
    full = f"Customer {draft.customer.customer_id}: {summary}"
    # The summary is the agent's to write: compared by name only, as in τ²-bench's own tasks.
    draft.tail.append(Step("transfer_to_human_agents", {"summary": full}, compare_args=[]))
    draft.transfer = full
    return draft
