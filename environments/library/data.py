"""The library's database, written here as compact tables and built into a :class:`LibraryDB`.

Hand-written, not sampled: every record a task leans on is placed on purpose (the loan already
renewed twice, the title another patron waits for, the patron whose fines block the account),
and the rest are ordinary neighbours so that look-ups have something to tell apart. Copies sit
at branches by a fixed rotation; a copy's status follows from the loans and holds below. The
build is deterministic, so τ²-bench's database hash is the same in every process.
"""

from __future__ import annotations

import functools

from evosyn.environments.library.data_model import (
    Branch,
    Copy,
    CopyStatus,
    Fine,
    FineKind,
    FineStatus,
    Hold,
    HoldStatus,
    LibraryDB,
    Loan,
    LoanStatus,
    Patron,
    PaymentKind,
    PaymentMethod,
    Title,
)

BRANCHES = (
    ("BR1", "Central Library", "100 Market Street"),
    ("BR2", "Riverside", "12 Wharf Road"),
    ("BR3", "Northgate", "450 North Avenue"),
    ("BR4", "Elm Park", "7 Elm Park Lane"),
)

#: book id, title, author, year, replacement cost ($). Each title has two copies.
TITLES = (
    ("B001", "The Orchard Keeper's Daughter", "Miriam Vale", 2019, 22.50),
    ("B002", "A Brief Atlas of Tides", "Tomas Eriksen", 2016, 31.00),
    ("B003", "Salt and Static", "Adaeze Okafor", 2021, 18.99),
    ("B004", "The Clockmaker's Ledger", "Henri Duval", 2012, 26.00),
    ("B005", "Northern Lights Cookbook", "Sigrid Lund", 2020, 35.00),
    ("B006", "Small Engines Explained", "Raymond Choi", 2008, 29.50),
    ("B007", "The Glass Meridian", "Priya Raman", 2022, 24.00),
    ("B008", "Letters from Kettle Hill", "Owen Marsh", 2015, 16.75),
    ("B009", "Beginner's Guide to Birdsong", "Lucia Ferreira", 2018, 21.00),
    ("B010", "Lanterns Over Kestrel Bay", "Nadia Hale", 2023, 27.99),
    ("B011", "The Quiet Algorithm", "Samuel Achebe", 2021, 32.00),
    ("B012", "Midnight at the Ferry Terminal", "Rosa Quintero", 2017, 17.50),
    ("B013", "Gardens of the High Desert", "Ellen Park", 2014, 38.00),
    ("B014", "The Cartographer's Apprentice", "Miriam Vale", 2023, 25.00),
    ("B015", "A History of Small Rivers", "Tomas Eriksen", 2011, 28.00),
    ("B016", "Paper Boats", "Jun Watanabe", 2019, 14.99),
    ("B017", "The Winter Orchard", "Hallie Brooks", 2020, 19.50),
    ("B018", "Learning Python the Gentle Way", "Dana Whitfield", 2022, 44.00),
    ("B019", "Stone Soup Stories", "Amara Diallo", 2010, 12.00),
    ("B020", "The Last Lighthouse Keeper", "Colm Brennan", 2016, 23.00),
    ("B021", "Fieldwork", "Ines Moreau", 2018, 20.00),
    ("B022", "Weathering", "Kwame Boateng", 2021, 26.50),
    ("B023", "The Patient Gardener", "Ellen Park", 2019, 30.00),
    ("B024", "Knots and Splices", "Harold Finch", 2005, 15.00),
    ("B025", "Echoes in the Stacks", "Beatrice Lowell", 2024, 27.00),
)

#: patron id, name, card expiry, home branch, payment methods (kind, last four).
PATRONS: tuple[tuple[str, str, str, str, tuple[tuple[PaymentKind, str], ...]], ...] = (
    ("P10001", "Ana Lopez", "2026-05-31", "BR3", (("credit_card", "2231"),)),
    ("P10002", "Ben Okafor", "2025-11-30", "BR1", (("debit_card", "6604"),)),
    ("P10003", "Chloe Martin", "2026-01-31", "BR1", (("credit_card", "1198"),)),
    ("P10004", "David Kim", "2025-09-30", "BR4", (("credit_card", "7745"),)),
    (
        "P10005",
        "Elena Rossi",
        "2026-03-31",
        "BR2",
        (("credit_card", "4421"), ("debit_card", "9087")),
    ),
    ("P10006", "Farah Haddad", "2025-12-31", "BR3", (("debit_card", "3052"),)),
    ("P10007", "George Novak", "2026-07-31", "BR2", (("credit_card", "8816"),)),
    ("P10008", "Hana Sato", "2025-10-31", "BR1", (("credit_card", "3310"),)),
    ("P10009", "Ivan Petrov", "2026-02-28", "BR2", (("debit_card", "5527"),)),
    ("P10010", "Julia Brandt", "2025-02-28", "BR1", (("credit_card", "0461"),)),
    ("P10011", "Kofi Mensah", "2026-06-30", "BR3", (("credit_card", "2789"),)),
    (
        "P10012",
        "Liam O'Brien",
        "2025-08-31",
        "BR4",
        (("credit_card", "5120"), ("debit_card", "7781")),
    ),
    ("P10013", "Maya Chen", "2026-04-30", "BR1", (("debit_card", "1846"),)),
    ("P10014", "Noah Williams", "2025-12-31", "BR1", (("credit_card", "9930"),)),
    ("P10015", "Olivia Grant", "2026-09-30", "BR4", (("credit_card", "4075"),)),
    ("P10016", "Pedro Alves", "2025-07-31", "BR1", (("debit_card", "6218"),)),
    ("P10017", "Quinn Harper", "2026-08-31", "BR2", (("credit_card", "3397"),)),
    ("P10018", "Rania Aziz", "2025-06-30", "BR3", (("debit_card", "8450"),)),
    ("P10019", "Sven Larsen", "2026-10-31", "BR4", (("credit_card", "1129"),)),
    ("P10020", "Tara Singh", "2026-11-30", "BR2", (("debit_card", "5764"),)),
)

#: loan id, copy id, patron id, checkout date, due date, renewals, status.
LOANS: tuple[tuple[str, str, str, str, str, int, LoanStatus], ...] = (
    ("L5001", "B001-1", "P10001", "2025-02-21", "2025-03-14", 0, "active"),
    ("L5002", "B016-1", "P10001", "2025-02-21", "2025-03-14", 0, "active"),
    ("L5003", "B003-1", "P10002", "2025-02-24", "2025-03-17", 0, "active"),
    ("L5004", "B008-2", "P10002", "2025-01-10", "2025-01-31", 0, "returned"),
    ("L5005", "B004-1", "P10003", "2025-01-09", "2025-03-13", 2, "active"),
    ("L5006", "B009-1", "P10003", "2025-02-27", "2025-03-20", 0, "active"),
    ("L5007", "B006-2", "P10004", "2025-02-10", "2025-03-03", 0, "active"),
    ("L5008", "B012-1", "P10005", "2025-01-06", "2025-01-27", 0, "returned"),
    ("L5009", "B017-1", "P10005", "2025-02-24", "2025-03-17", 0, "active"),
    ("L5010", "B019-2", "P10005", "2024-12-02", "2024-12-23", 0, "returned"),
    ("L5011", "B013-1", "P10006", "2025-01-13", "2025-02-03", 0, "returned"),
    ("L5012", "B020-1", "P10007", "2024-11-04", "2024-11-25", 0, "lost"),
    ("L5013", "B021-1", "P10008", "2025-01-20", "2025-02-10", 0, "returned"),
    ("L5014", "B024-1", "P10008", "2024-10-01", "2024-10-22", 0, "returned"),
    ("L5015", "B010-1", "P10015", "2025-03-01", "2025-03-22", 0, "active"),
    ("L5016", "B010-2", "P10016", "2025-03-03", "2025-03-24", 0, "active"),
    ("L5017", "B022-1", "P10012", "2025-02-14", "2025-03-07", 0, "active"),
    ("L5018", "B011-1", "P10014", "2025-02-28", "2025-03-21", 0, "active"),
    ("L5019", "B025-1", "P10014", "2025-03-05", "2025-03-26", 0, "active"),
    ("L5020", "B007-1", "P10017", "2025-02-20", "2025-03-13", 0, "active"),
    ("L5021", "B007-2", "P10018", "2025-02-22", "2025-03-15", 0, "active"),
    ("L5022", "B002-1", "P10019", "2025-02-15", "2025-03-08", 0, "active"),
    ("L5023", "B018-1", "P10020", "2025-02-26", "2025-03-19", 0, "active"),
    ("L5024", "B018-2", "P10017", "2025-03-04", "2025-03-25", 0, "active"),
    ("L5025", "B003-2", "P10019", "2025-03-02", "2025-03-23", 0, "active"),
    ("L5026", "B002-2", "P10020", "2025-02-18", "2025-03-11", 0, "active"),
    ("L5027", "B011-2", "P10015", "2025-02-27", "2025-03-20", 0, "active"),
    ("L5028", "B025-2", "P10016", "2025-03-06", "2025-03-27", 0, "active"),
    ("L5029", "B005-1", "P10017", "2024-12-10", "2024-12-31", 0, "returned"),
)

#: hold id, book id, patron id, pickup branch, date placed, status. A ready hold's copy waits
#: on the hold shelf of its pickup branch.
HOLDS: tuple[tuple[str, str, str, str, str, HoldStatus], ...] = (
    ("H7001", "B007", "P10003", "BR1", "2025-02-25", "waiting"),
    ("H7002", "B003", "P10005", "BR2", "2025-03-01", "waiting"),
    ("H7003", "B002", "P10011", "BR3", "2025-02-10", "waiting"),
    ("H7004", "B007", "P10011", "BR3", "2025-02-12", "waiting"),
    ("H7005", "B011", "P10011", "BR3", "2025-02-20", "waiting"),
    ("H7006", "B016", "P10011", "BR3", "2025-02-26", "ready"),
    ("H7007", "B025", "P10011", "BR3", "2025-03-02", "waiting"),
    ("H7008", "B018", "P10013", "BR1", "2025-03-04", "waiting"),
    ("H7009", "B023", "P10013", "BR1", "2025-03-06", "ready"),
)

#: fine id, patron id, loan id, kind, amount ($), status.
FINES: tuple[tuple[str, str, str, FineKind, float, FineStatus], ...] = (
    ("F9001", "P10005", "L5008", "overdue", 6.50, "unpaid"),
    ("F9002", "P10005", "L5010", "overdue", 4.75, "unpaid"),
    ("F9003", "P10006", "L5011", "overdue", 3.25, "unpaid"),
    ("F9004", "P10007", "L5012", "lost_item", 28.00, "unpaid"),
    ("F9005", "P10008", "L5013", "overdue", 2.00, "unpaid"),
    ("F9006", "P10008", "L5014", "overdue", 1.50, "waived"),
    ("F9007", "P10017", "L5029", "damage", 12.00, "unpaid"),
)


def _copy_branch(title_number: int, copy_number: int) -> str:
    """The branch of a title's copy: the two copies of a title sit at neighbouring branches."""
    return BRANCHES[(title_number + copy_number) % len(BRANCHES)][0]


def _email(name: str) -> str:
    return name.lower().replace("'", "").replace(" ", ".") + "@example.com"


def _statuses() -> dict[str, CopyStatus]:
    """Copy id -> status, from the running and lost loans and the ready holds."""
    status: dict[str, CopyStatus] = {}
    for _, copy_id, _, _, _, _, loan_status in LOANS:
        if loan_status == "active":
            status[copy_id] = "on_loan"
        elif loan_status == "lost":
            status[copy_id] = "lost"
    for _, book_id, _, branch, _, hold_status in HOLDS:
        if hold_status != "ready":
            continue
        number = int(book_id[1:])
        shelf = next(
            f"{book_id}-{n}"
            for n in (1, 2)
            if _copy_branch(number, n) == branch and f"{book_id}-{n}" not in status
        )
        status[shelf] = "on_hold_shelf"
    return status


@functools.cache
def _data() -> dict[str, object]:
    """The database as JSON-ready data (built once per process)."""
    statuses = _statuses()
    titles: dict[str, Title] = {}
    copies: dict[str, Copy] = {}
    for book_id, name, author, year, cost in TITLES:
        number = int(book_id[1:])
        ids = [f"{book_id}-{n}" for n in (1, 2)]
        titles[book_id] = Title(
            book_id=book_id,
            title=name,
            author=author,
            year=year,
            replacement_cost=cost,
            copies=ids,
        )
        for n, copy_id in enumerate(ids, start=1):
            copies[copy_id] = Copy(
                copy_id=copy_id,
                book_id=book_id,
                branch_id=_copy_branch(number, n),
                status=statuses.get(copy_id, "available"),
            )
    patrons = {
        pid: Patron(
            patron_id=pid,
            name=name,
            email=_email(name),
            card_expiry=expiry,
            home_branch=home,
            payment_methods={
                f"card_{last}": PaymentMethod(
                    payment_method_id=f"card_{last}", kind=kind, last_four=last
                )
                for kind, last in methods
            },
            loans=[row[0] for row in LOANS if row[2] == pid],
            holds=[row[0] for row in HOLDS if row[2] == pid],
            fines=[row[0] for row in FINES if row[1] == pid],
        )
        for pid, name, expiry, home, methods in PATRONS
    }
    db = LibraryDB(
        branches={b: Branch(branch_id=b, name=n, address=a) for b, n, a in BRANCHES},
        titles=titles,
        copies=copies,
        patrons=patrons,
        loans={
            lid: Loan(
                loan_id=lid,
                copy_id=cid,
                book_id=cid.split("-")[0],
                patron_id=pid,
                checkout_date=out,
                due_date=due,
                renewals=renewals,
                status=status,
            )
            for lid, cid, pid, out, due, renewals, status in LOANS
        },
        holds={
            hid: Hold(
                hold_id=hid,
                book_id=bid,
                patron_id=pid,
                pickup_branch=branch,
                placed_date=placed,
                status=status,
            )
            for hid, bid, pid, branch, placed, status in HOLDS
        },
        fines={
            fid: Fine(fine_id=fid, patron_id=pid, loan_id=lid, kind=kind, amount=amount, status=s)
            for fid, pid, lid, kind, amount, s in FINES
        },
    )
    return db.model_dump()


def load_db() -> LibraryDB:
    """A fresh copy of the library's database (validated, so a bad table fails here)."""
    return LibraryDB.model_validate(_data())
