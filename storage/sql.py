"""Read-only SQL over the lake's catalog."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from evosyn.storage.lake import Lake

# Statement types that only read. DESCRIBE, SHOW, SUMMARIZE and PRAGMA parse as SELECT.
_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class ReadOnlyQueryError(ValueError):
    """A query that would write, attach, copy out or configure; nothing was run."""


def check_read_only(query: str) -> None:
    """Raise ReadOnlyQueryError unless ``query`` is one or more read-only statements."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise ReadOnlyQueryError(f"cannot parse query: {exc}") from None
    if not statements:
        raise ReadOnlyQueryError("the query is empty")
    for statement in statements:
        if statement.type not in _READ_ONLY:
            kind = statement.type.name
            raise ReadOnlyQueryError(
                f"evosyn sql is read-only: {kind} statements are refused "
                "(use SELECT, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN); nothing was changed"
            )


Result = tuple[list[str], list[tuple[object, ...]]]
"""A query's columns and rows."""


def query(lake: Lake, sql: str) -> Result:
    """Run read-only ``sql`` on the lake's catalog; the last statement's columns and rows."""
    [result] = queries(lake, [sql])
    return result


def queries(lake: Lake, sqls: Sequence[str], campaign: str | None = None) -> list[Result]:
    """Run each read-only query of ``sqls`` on one connection; their results in order.

    With ``campaign``, the tables hold only that campaign's rows (:meth:`Lake.connect`): for
    queries that ask about that campaign alone, the same answers from a fraction of the files.
    """
    for sql in sqls:
        check_read_only(sql)
    con = lake.connect(campaign)
    try:
        results = []
        for sql in sqls:
            statements = duckdb.extract_statements(sql)
            for statement in statements[:-1]:
                con.execute(statement)
            result = con.execute(statements[-1])
            columns = [d[0] for d in result.description or []]
            results.append((columns, result.fetchall()))
        return results
    finally:
        con.close()
