"""What a library patron chooses, which writes move money, which ids stay internal.

The choice parameters of the information-flow gate
(:mod:`~evosyn.environments.information_flow`): a patron names the book (by its title), the
branch (by its name) and the card (by its last four digits); the agent may propose which fine
it means, by amount and title, and take the patron's yes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evosyn.environments.information_flow import Choice, FlowRules, Seen
from evosyn.environments.kit import choices
from evosyn.environments.library.data import BRANCHES

_ARTICLES = ("the ", "a ", "an ")


def _title_forms(book_id: str, seen: Seen) -> list[str]:
    """A title as a patron says it: whole, and without its leading article."""
    forms: list[str] = []
    for _, record in seen.records_of(book_id):
        title = record.get("title")
        if isinstance(title, str):
            forms.append(title)
            forms += [title[len(a) :] for a in _ARTICLES if title.lower().startswith(a)]
    return forms


def _via_book(value: object, arguments: Mapping[str, object], seen: Seen) -> Sequence[str]:
    """A loan or hold, named by its id or by the title of the book it is for."""
    record = seen.record_of(str(value)) or {}
    book_id = record.get("book_id")
    return [str(value), *(_title_forms(book_id, seen) if isinstance(book_id, str) else ())]


def _fine(value: object, arguments: Mapping[str, object], seen: Seen) -> Sequence[str]:
    """A fine, named by its id, its amount, or the title of the loan it arose from."""
    record = seen.record_of(str(value)) or {}
    forms = [str(value)]
    amount = record.get("amount")
    if isinstance(amount, int | float):
        forms += [f"${amount:.2f}", f"{amount:.2f}", f"${amount:g}"]
    loan = seen.record_of(str(record.get("loan_id", ""))) or {}
    if isinstance(loan.get("book_id"), str):
        forms += _title_forms(str(loan["book_id"]), seen)
    return forms


_BOOK = choices.entity("title", "author")
_BRANCH = choices.entity("name")
_SAY_BOOK = choices.say_record("{title}", "title")
_SAY_BRANCH = choices.say_record("the {name} branch", "name")


def _branch(tool: str) -> Choice:
    return Choice(
        tool,
        "pickup_branch",
        "the pickup branch",
        _BRANCH,
        "which branch you would like to collect it at",
        _SAY_BRANCH,
    )


def _fine_choice(tool: str) -> Choice:
    return Choice(tool, "fine_id", "the fine", _fine, "which fine", proposable=True)


RULES = FlowRules(
    choices=(
        Choice("renew_loan", "loan_id", "the loan", _via_book, "which book to renew"),
        Choice("report_lost_item", "loan_id", "the loan", _via_book, "which book was lost"),
        Choice("place_hold", "book_id", "the title", _BOOK, "which book", _SAY_BOOK),
        _branch("place_hold"),
        Choice("cancel_hold", "hold_id", "the hold", _via_book, "which hold to cancel"),
        Choice("change_pickup_branch", "hold_id", "the hold", _via_book, "which hold to move"),
        _branch("change_pickup_branch"),
        _fine_choice("pay_fine"),
        choices.payment_choice("pay_fine", "payment_method_id", "which saved card to pay with"),
        _fine_choice("waive_fine"),
    ),
    priced_writes=frozenset({"pay_fine", "report_lost_item"}),
    internal_ids=frozenset({"payment_method_id", "payment_methods", "paid_with"}),
    internal_patterns=(r"\bcard_\d{4}\b",),
    aliases={branch_id: (name.lower(),) for branch_id, name, _ in BRANCHES},
    distinctive=frozenset({r"card number|library card"}),
    identifiers={
        r"card number|library card": r"\bP\d{5}\b",
        r"e-?mail": r"[\w.+-]+@[\w-]+\.\w+",
    },
)
