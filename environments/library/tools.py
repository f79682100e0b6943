"""The library desk's tools, in τ²-bench's shape: READ, WRITE and GENERIC tools on a ToolKit.

As in τ²-bench's domains, the tools check only what the database itself forbids (an unknown id,
a loan that is no longer running); the policy's rules (fines that block an account, renewal
limits, what may be waived) are the agent's to apply. The docstrings are the schemas the model
sees. The ``assert_*`` methods are not tools: they are the tasks' environment assertions.
"""

from __future__ import annotations

import datetime

from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool

from evosyn.environments.library.data_model import (
    Fine,
    FineStatus,
    Hold,
    HoldStatus,
    LibraryDB,
    Loan,
    Patron,
    Title,
)

#: The day the desk works on (the policy states it too).
TODAY = datetime.date(2025, 3, 10)
#: Days a renewal adds to a loan's due date.
RENEWAL_DAYS = 21
#: What reporting a copy lost adds to its replacement cost, in dollars.
PROCESSING_FEE = 5.0


class LibraryTools(ToolKitBase):
    """Tools of the library's patron-services desk."""

    db: LibraryDB  # type: ignore[assignment]  # tau2 types it with an unbound TypeVar

    def __init__(self, db: LibraryDB) -> None:
        super().__init__(db)

    # ------------------------------------------------------------------ look-ups

    def _patron(self, patron_id: str) -> Patron:
        if patron_id not in self.db.patrons:
            raise ValueError(f"Patron {patron_id} not found")
        return self.db.patrons[patron_id]

    def _loan(self, loan_id: str) -> Loan:
        if loan_id not in self.db.loans:
            raise ValueError(f"Loan {loan_id} not found")
        return self.db.loans[loan_id]

    def _hold(self, hold_id: str) -> Hold:
        if hold_id not in self.db.holds:
            raise ValueError(f"Hold {hold_id} not found")
        return self.db.holds[hold_id]

    def _fine(self, fine_id: str) -> Fine:
        if fine_id not in self.db.fines:
            raise ValueError(f"Fine {fine_id} not found")
        return self.db.fines[fine_id]

    def _title(self, book_id: str) -> Title:
        if book_id not in self.db.titles:
            raise ValueError(f"Book {book_id} not found")
        return self.db.titles[book_id]

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def find_patron_by_email(self, email: str) -> str:
        """Find a patron's library card number by their email address.

        Args:
            email: The patron's email address, such as 'ana.lopez@example.com'.

        Returns:
            The patron's library card number (patron id).

        Raises:
            ValueError: If no patron has this email address.
        """
        wanted = email.strip().lower()
        for patron in self.db.patrons.values():
            if patron.email.lower() == wanted:
                return patron.patron_id
        raise ValueError("Patron not found")

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def get_patron_details(self, patron_id: str) -> Patron:
        """Get a patron's details.

        The card's expiry date, home branch, saved payment methods, and the ids of the patron's
        loans, holds and fines.

        Args:
            patron_id: The library card number, such as 'P10001'.

        Returns:
            The patron's details.

        Raises:
            ValueError: If the patron is not found.
        """
        return self._patron(patron_id)

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def get_loan_details(self, loan_id: str) -> Loan:
        """Get a loan: the copy id and book id lent, the patron, dates, renewals and status.

        get_book_details on that book id gives the title and its author.

        Args:
            loan_id: The loan id, such as 'L5001'.

        Returns:
            The loan, naming its title by book id only.

        Raises:
            ValueError: If the loan is not found.
        """
        return self._loan(loan_id)

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def get_hold_details(self, hold_id: str) -> Hold:
        """Get a hold: the book id held, the patron, pickup branch id, date placed and status.

        get_book_details on that book id gives the title and its author.

        Args:
            hold_id: The hold id, such as 'H7001'.

        Returns:
            The hold, naming its title by book id only.

        Raises:
            ValueError: If the hold is not found.
        """
        return self._hold(hold_id)

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def get_fine_details(self, fine_id: str) -> Fine:
        """Get the details of a fine: its kind, amount, status and the loan it arose from.

        Args:
            fine_id: The fine id, such as 'F9001'.

        Returns:
            The fine.

        Raises:
            ValueError: If the fine is not found.
        """
        return self._fine(fine_id)

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def search_catalog(self, query: str) -> list[dict[str, object]]:
        """Search the catalog by words of a title or an author's name.

        Args:
            query: Words to look for, such as 'orchard' or 'Okafor'.

        Returns:
            The matching titles, each with its book id, title, author, year and the number of
            copies available on the shelf at each branch.
        """
        words = query.lower().split()
        found: list[dict[str, object]] = []
        for title in self.db.titles.values():
            text = f"{title.title} {title.author}".lower()
            if words and all(word in text for word in words):
                found.append(
                    {
                        "book_id": title.book_id,
                        "title": title.title,
                        "author": title.author,
                        "year": title.year,
                        "available_by_branch": self._available(title),
                    }
                )
        return found

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def get_book_details(self, book_id: str) -> dict[str, object]:
        """Get a title's details, its copies, and the number of holds waiting for it.

        Args:
            book_id: The book id, such as 'B001'.

        Returns:
            The title with its copies, and how many holds wait in the queue for it.

        Raises:
            ValueError: If the book is not found.
        """
        title = self._title(book_id)
        copies = [self.db.copies[c].model_dump() for c in title.copies]
        waiting = sum(
            1 for h in self.db.holds.values() if h.book_id == book_id and h.status == "waiting"
        )
        return {**title.model_dump(exclude={"copies"}), "copies": copies, "holds_waiting": waiting}

    @is_tool(ToolType.READ)  # type: ignore[untyped-decorator]
    def list_branches(self) -> list[dict[str, str]]:
        """List the library's branches with their ids, names and addresses.

        Returns:
            Every branch.
        """
        return [branch.model_dump() for branch in self.db.branches.values()]

    def _available(self, title: Title) -> dict[str, int]:
        counts: dict[str, int] = {}
        for copy_id in title.copies:
            copy = self.db.copies[copy_id]
            if copy.status == "available":
                counts[copy.branch_id] = counts.get(copy.branch_id, 0) + 1
        return counts

    # ------------------------------------------------------------------ writes

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def renew_loan(self, loan_id: str) -> Loan:
        """Renew an active loan: its due date moves 21 days later.

        Args:
            loan_id: The loan id, such as 'L5001'.

        Returns:
            The renewed loan.

        Raises:
            ValueError: If the loan is not found or is not active.
        """
        loan = self._loan(loan_id)
        if loan.status != "active":
            raise ValueError(f"Loan {loan_id} is not active")
        due = datetime.date.fromisoformat(loan.due_date)
        loan.due_date = (due + datetime.timedelta(days=RENEWAL_DAYS)).isoformat()
        loan.renewals += 1
        return loan

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def place_hold(self, patron_id: str, book_id: str, pickup_branch: str) -> Hold:
        """Place a hold on a title for a patron, to be collected at a branch.

        Args:
            patron_id: The library card number, such as 'P10001'.
            book_id: The book id, such as 'B001'.
            pickup_branch: The id of the branch to collect the copy at, such as 'BR1'.

        Returns:
            The new hold, waiting in the queue.

        Raises:
            ValueError: If the patron, book or branch is not found.
        """
        patron = self._patron(patron_id)
        self._title(book_id)
        if pickup_branch not in self.db.branches:
            raise ValueError(f"Branch {pickup_branch} not found")
        hold_id = f"H{7001 + len(self.db.holds)}"
        hold = Hold(
            hold_id=hold_id,
            book_id=book_id,
            patron_id=patron_id,
            pickup_branch=pickup_branch,
            placed_date=TODAY.isoformat(),
            status="waiting",
        )
        self.db.holds[hold_id] = hold
        patron.holds.append(hold_id)
        return hold

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def cancel_hold(self, hold_id: str) -> Hold:
        """Cancel a waiting or ready hold.

        A copy waiting on the hold shelf for it goes back on the shelf.

        Args:
            hold_id: The hold id, such as 'H7001'.

        Returns:
            The cancelled hold.

        Raises:
            ValueError: If the hold is not found, or is already cancelled or fulfilled.
        """
        hold = self._hold(hold_id)
        if hold.status not in ("waiting", "ready"):
            raise ValueError(f"Hold {hold_id} is {hold.status}")
        if hold.status == "ready":
            for copy_id in self.db.titles[hold.book_id].copies:
                copy = self.db.copies[copy_id]
                if copy.status == "on_hold_shelf" and copy.branch_id == hold.pickup_branch:
                    copy.status = "available"
                    break
        hold.status = "cancelled"
        return hold

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def change_pickup_branch(self, hold_id: str, pickup_branch: str) -> Hold:
        """Change the branch a waiting hold will be collected at.

        Args:
            hold_id: The hold id, such as 'H7001'.
            pickup_branch: The id of the new branch, such as 'BR2'.

        Returns:
            The updated hold.

        Raises:
            ValueError: If the hold or branch is not found, or the hold is not waiting.
        """
        hold = self._hold(hold_id)
        if pickup_branch not in self.db.branches:
            raise ValueError(f"Branch {pickup_branch} not found")
        if hold.status != "waiting":
            raise ValueError(f"Hold {hold_id} is {hold.status}, not waiting")
        hold.pickup_branch = pickup_branch
        return hold

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def pay_fine(self, fine_id: str, payment_method_id: str) -> Fine:
        """Pay an unpaid fine in full with one of the patron's saved payment methods.

        Args:
            fine_id: The fine id, such as 'F9001'.
            payment_method_id: The id of a payment method saved on the patron's profile,
                such as 'card_4421'.

        Returns:
            The paid fine.

        Raises:
            ValueError: If the fine is not found or not unpaid, or the payment method is not
                the patron's.
        """
        fine = self._fine(fine_id)
        if fine.status != "unpaid":
            raise ValueError(f"Fine {fine_id} is {fine.status}")
        if payment_method_id not in self._patron(fine.patron_id).payment_methods:
            raise ValueError(f"Payment method {payment_method_id} not found")
        fine.status = "paid"
        fine.paid_with = payment_method_id
        return fine

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def waive_fine(self, fine_id: str) -> Fine:
        """Waive an unpaid fine: the patron no longer owes it.

        Args:
            fine_id: The fine id, such as 'F9001'.

        Returns:
            The waived fine.

        Raises:
            ValueError: If the fine is not found or not unpaid.
        """
        fine = self._fine(fine_id)
        if fine.status != "unpaid":
            raise ValueError(f"Fine {fine_id} is {fine.status}")
        fine.status = "waived"
        return fine

    @is_tool(ToolType.WRITE)  # type: ignore[untyped-decorator]
    def report_lost_item(self, loan_id: str) -> Fine:
        """Report the copy of an active loan as lost.

        The loan ends, the copy is written off, and the patron is charged the title's
        replacement cost plus a $5.00 processing fee as one new lost_item fine.

        Args:
            loan_id: The loan id, such as 'L5001'.

        Returns:
            The new unpaid fine.

        Raises:
            ValueError: If the loan is not found or is not active.
        """
        loan = self._loan(loan_id)
        if loan.status != "active":
            raise ValueError(f"Loan {loan_id} is not active")
        loan.status = "lost"
        self.db.copies[loan.copy_id].status = "lost"
        fine_id = f"F{9001 + len(self.db.fines)}"
        amount = round(self.db.titles[loan.book_id].replacement_cost + PROCESSING_FEE, 2)
        fine = Fine(
            fine_id=fine_id,
            patron_id=loan.patron_id,
            loan_id=loan_id,
            kind="lost_item",
            amount=amount,
            status="unpaid",
        )
        self.db.fines[fine_id] = fine
        self._patron(loan.patron_id).fines.append(fine_id)
        return fine

    # ------------------------------------------------------------------ generic

    @is_tool(ToolType.GENERIC)  # type: ignore[untyped-decorator]
    def calculate(self, expression: str) -> str:
        """Calculate the result of a mathematical expression.

        Args:
            expression: The expression to calculate, such as '2.5 + 3.75'. It may contain
                numbers, operators (+, -, *, /), parentheses and spaces.

        Returns:
            The result, rounded to 2 decimals.

        Raises:
            ValueError: If the expression is invalid.
        """
        if not all(char in "0123456789+-*/(). " for char in expression):
            raise ValueError("Invalid characters in expression")
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))

    @is_tool(ToolType.GENERIC)  # type: ignore[untyped-decorator]
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the patron to a human agent, with a summary of their issue.

        Only transfer if the patron explicitly asks for a human agent, or if the policy and the
        available tools do not let you resolve the issue.

        Args:
            summary: A summary of the patron's issue.

        Returns:
            A message saying the patron has been transferred.
        """
        return "Transfer successful"

    # ------------------------------------------------------------------ task assertions

    def assert_loan_due_date(self, loan_id: str, expected_due_date: str) -> bool:
        """Whether the loan is due on ``expected_due_date``."""
        return self._loan(loan_id).due_date == expected_due_date

    def assert_fine_status(self, fine_id: str, expected_status: FineStatus) -> bool:
        """Whether the fine has ``expected_status``."""
        return self._fine(fine_id).status == expected_status

    def assert_hold_status(self, hold_id: str, expected_status: HoldStatus) -> bool:
        """Whether the hold has ``expected_status``."""
        return self._hold(hold_id).status == expected_status

    def assert_unpaid_total(self, patron_id: str, expected_total: float) -> bool:
        """Whether the patron's unpaid fines add up to ``expected_total`` dollars."""
        patron = self._patron(patron_id)
        owed = sum(
            self.db.fines[f].amount for f in patron.fines if self.db.fines[f].status == "unpaid"
        )
        return round(owed, 2) == round(expected_total, 2)
