"""The library desk's database: branches, titles and their copies, patrons, loans, holds, fines.

A τ²-bench ``DB`` (extra fields forbidden, hashed for the evaluator's state comparison). Every
record is keyed by its id in its table; a patron lists the ids of their loans, holds and fines.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from tau2.environment.db import DB

CopyStatus = Literal["available", "on_loan", "on_hold_shelf", "lost"]
LoanStatus = Literal["active", "returned", "lost"]
HoldStatus = Literal["waiting", "ready", "cancelled", "fulfilled"]
FineKind = Literal["overdue", "lost_item", "damage"]
FineStatus = Literal["unpaid", "paid", "waived"]
PaymentKind = Literal["credit_card", "debit_card"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Branch(_Record):
    """A branch of the library, where copies live and holds are picked up."""

    branch_id: str = Field(description="Unique identifier of the branch.")
    name: str = Field(description="The branch's name, as patrons say it.")
    address: str = Field(description="Street address.")


class Title(_Record):
    """A book in the catalog (every copy of it shares these details)."""

    book_id: str = Field(description="Unique identifier of the title.")
    title: str = Field(description="Title of the book.")
    author: str = Field(description="Author of the book.")
    year: int = Field(description="Year of publication.")
    replacement_cost: float = Field(description="What a lost copy costs the patron, in dollars.")
    copies: list[str] = Field(description="Ids of the title's physical copies.")


class Copy(_Record):
    """One physical copy of a title, at one branch."""

    copy_id: str = Field(description="Unique identifier (barcode) of the copy.")
    book_id: str = Field(description="Id of the book (title) it is a copy of.")
    branch_id: str = Field(description="The branch that owns the copy.")
    status: CopyStatus = Field(description="Where the copy is now.")


class PaymentMethod(_Record):
    """A card a patron saved to pay fines with."""

    payment_method_id: str = Field(description="Unique identifier of the payment method.")
    kind: PaymentKind = Field(description="The kind of card.")
    last_four: str = Field(description="The card's last four digits.")


class Patron(_Record):
    """A library card holder."""

    patron_id: str = Field(description="The library card number.")
    name: str = Field(description="The patron's full name.")
    email: str = Field(description="The patron's email address.")
    card_expiry: str = Field(description="The date the library card expires (YYYY-MM-DD).")
    home_branch: str = Field(description="The id of the patron's home branch.")
    payment_methods: dict[str, PaymentMethod] = Field(description="Saved payment methods, by id.")
    loans: list[str] = Field(description="Ids of the patron's loans, past and present.")
    holds: list[str] = Field(description="Ids of the patron's holds, past and present.")
    fines: list[str] = Field(description="Ids of the patron's fines, whatever their status.")


class Loan(_Record):
    """One copy lent to one patron."""

    loan_id: str = Field(description="Unique identifier of the loan.")
    copy_id: str = Field(description="The copy lent.")
    book_id: str = Field(description="Id of the book (title) of the copy lent.")
    patron_id: str = Field(description="The borrower.")
    checkout_date: str = Field(description="The date the copy was lent (YYYY-MM-DD).")
    due_date: str = Field(description="The date the copy is due back (YYYY-MM-DD).")
    renewals: int = Field(description="How many times the loan has been renewed.")
    status: LoanStatus = Field(description="Whether the loan is running, returned or lost.")


class Hold(_Record):
    """A patron's place in the queue for a title."""

    hold_id: str = Field(description="Unique identifier of the hold.")
    book_id: str = Field(description="Id of the book (title) held.")
    patron_id: str = Field(description="The patron who placed the hold.")
    pickup_branch: str = Field(description="The id of the branch to collect the copy at.")
    placed_date: str = Field(description="The date the hold was placed (YYYY-MM-DD).")
    status: HoldStatus = Field(
        description="waiting (in the queue), ready (a copy waits on the hold shelf), "
        "cancelled or fulfilled."
    )


class Fine(_Record):
    """A charge on a patron's account."""

    fine_id: str = Field(description="Unique identifier of the fine.")
    patron_id: str = Field(description="The patron charged.")
    loan_id: str = Field(description="The loan the fine arose from.")
    kind: FineKind = Field(description="Why the fine was charged.")
    amount: float = Field(description="The amount in dollars.")
    status: FineStatus = Field(description="Whether the fine is unpaid, paid or waived.")
    paid_with: str | None = Field(
        default=None, description="The payment method that paid it, once paid."
    )


class LibraryDB(DB):
    """The library's database."""

    branches: dict[str, Branch] = Field(description="Branches by id.")
    titles: dict[str, Title] = Field(description="Catalog titles by book id.")
    copies: dict[str, Copy] = Field(description="Physical copies by copy id.")
    patrons: dict[str, Patron] = Field(description="Patrons by library card number.")
    loans: dict[str, Loan] = Field(description="Loans by id.")
    holds: dict[str, Hold] = Field(description="Holds by id.")
    fines: dict[str, Fine] = Field(description="Fines by id.")
