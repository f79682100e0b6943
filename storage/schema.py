"""Map lake records to Arrow rows and back.

Scalar fields (str, int, float, bool, datetime, enums, literals) become typed columns. Nested
fields of a fixed shape become typed nested columns, so SQL reads them without JSON functions:
``dict[str, X]`` a MAP, ``list[X]`` a LIST, a record (:class:`~evosyn.records.Factor`, ...) a
STRUCT of its fields. Anything else (free-form dicts, τ²-bench tasks and messages, unions of
shapes) is JSON text in a column of the JSON logical type (DuckDB: ``JSON``). A missing
(``None``) value is NULL in every kind of column.

Files written before a column was typed hold it as JSON text; readers accept either.
"""

from __future__ import annotations

import json
import types
import typing
from datetime import datetime
from enum import Enum
from functools import cache
from typing import Any

import pyarrow as pa
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from evosyn.records import LakeRecord

TIMESTAMP = pa.timestamp("us", tz="UTC")


def _scalar_type(annotation: Any) -> pa.DataType | None:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _scalar_type(args[0]) if len(args) == 1 else None
    if origin is typing.Literal:
        values = typing.get_args(annotation)
        return pa.string() if all(isinstance(v, str) for v in values) else None
    if isinstance(annotation, type):
        if issubclass(annotation, Enum):
            return pa.string()
        if annotation is bool:
            return pa.bool_()
        if annotation is int:
            return pa.int64()
        if annotation is float:
            return pa.float64()
        if annotation is str:
            return pa.string()
        if annotation is datetime:
            return TIMESTAMP
    return None


JSON = pa.json_(pa.string())


def _optional(annotation: Any) -> Any:
    """``X`` of ``X | None``; the annotation itself otherwise."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _nested_type(annotation: Any) -> pa.DataType | None:
    """The typed Arrow type of a fixed-shape annotation, or None (stored as JSON)."""
    annotation = _optional(annotation)
    scalar = _scalar_type(annotation)
    if scalar is not None:
        return scalar
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and len(args) == 1:
        item = _nested_type(args[0])
        return pa.list_(item) if item is not None else None
    if origin is dict and len(args) == 2 and args[0] is str:
        value = _nested_type(args[1])
        return pa.map_(pa.string(), value) if value is not None else None
    # EvoSyn's own records only: τ²-bench's models (tasks, messages) stay JSON, as τ²-bench
    # itself reads and writes them.
    if (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and annotation.__module__.startswith("evosyn.")
    ):
        fields = []
        for name, info in annotation.model_fields.items():
            kind = _nested_type(info.annotation)
            if kind is None:
                return None
            fields.append(pa.field(name, kind))
        return pa.struct(fields)
    return None


@cache
def arrow_schema(cls: type[LakeRecord]) -> pa.Schema:
    """The Arrow schema of ``cls``'s table: typed columns where the shape is fixed, else JSON."""
    fields = []
    for name, info in cls.model_fields.items():
        kind = _nested_type(info.annotation)
        fields.append(pa.field(name, kind if kind is not None else JSON))
    return pa.schema(fields)


def json_columns(cls: type[LakeRecord]) -> frozenset[str]:
    """Names of the columns of ``cls`` stored as JSON text."""
    return frozenset(f.name for f in arrow_schema(cls) if f.type == JSON)


def _to_arrow(value: Any, kind: pa.DataType) -> Any:
    """A JSON-mode value shaped for ``kind`` (maps as key/value pairs)."""
    if value is None:
        return None
    if isinstance(kind, pa.MapType):
        return [(k, _to_arrow(v, kind.item_type)) for k, v in value.items()]
    if isinstance(kind, pa.ListType):
        return [_to_arrow(v, kind.value_type) for v in value]
    if isinstance(kind, pa.StructType):
        return {f.name: _to_arrow(value.get(f.name), f.type) for f in kind}
    return value


def _from_arrow(value: Any, kind: pa.DataType) -> Any:
    """The plain value of a cell read back (maps arrive as key/value pairs, or as old JSON)."""
    if value is None:
        return None
    if kind == JSON or (isinstance(value, str) and kind != pa.string()):
        return json.loads(value) if isinstance(value, str) else value
    if isinstance(kind, pa.MapType):
        pairs = value.items() if isinstance(value, dict) else value
        return {k: _from_arrow(v, kind.item_type) for k, v in pairs}
    if isinstance(kind, pa.ListType):
        return [_from_arrow(v, kind.value_type) for v in value]
    if isinstance(kind, pa.StructType):
        return {f.name: _from_arrow(value.get(f.name), f.type) for f in kind}
    return value


def to_table(records: typing.Sequence[LakeRecord], cls: type[LakeRecord]) -> pa.Table:
    """Records of one type as an Arrow table with the table's schema."""
    schema = arrow_schema(cls)
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    for record in records:
        if type(record) is not cls:
            raise TypeError(f"cannot store {type(record).__name__} in table {cls.TABLE}")
        plain = record.model_dump(mode="json")
        for field in schema:
            value = plain[field.name]
            if field.type == JSON:
                # A missing value is SQL NULL, not the JSON text 'null': `IS NULL` finds it.
                text = None if value is None else json.dumps(value, ensure_ascii=False)
                columns[field.name].append(text)
            elif isinstance(field.type, pa.TimestampType):
                columns[field.name].append(getattr(record, field.name))
            else:
                columns[field.name].append(_to_arrow(value, field.type))
    return pa.table(
        {
            f.name: pa.array(columns[f.name], type=f.type.storage_type)
            if f.type == JSON
            else pa.array(columns[f.name], type=f.type)
            for f in schema
        },
        schema=schema,
    )


def from_rows(rows: typing.Iterable[dict[str, Any]], cls: type[LakeRecord]) -> list[LakeRecord]:
    """Parse rows read from a table back into records of ``cls``."""
    schema = arrow_schema(cls)
    # A column that files written before its field existed lack reads as null; such a field
    # takes its default instead.
    defaulted = {
        name for name, f in cls.model_fields.items() if not f.is_required() and _non_null_default(f)
    }
    out = []
    for row in rows:
        data = {
            k: _from_arrow(v, schema.field(k).type)
            for k, v in row.items()
            if k in cls.model_fields and not (v is None and k in defaulted)
        }
        out.append(cls.model_validate(data))
    return out


def _non_null_default(field: FieldInfo) -> bool:
    return field.default_factory is not None or field.default is not None


# --------------------------------------------------------------------------- reference


COLUMNS_BEGIN = "<!-- columns: generated by `python -m evosyn.storage.schema docs/lake.md` -->"
COLUMNS_END = "<!-- end of generated columns -->"


def columns_markdown() -> str:
    """Every table's columns with their DuckDB types and the records' field descriptions."""
    import duckdb

    from evosyn.records import TABLES

    out = []
    con = duckdb.connect()
    try:
        for table, cls in TABLES.items():
            empty = pa.Table.from_pylist([], schema=arrow_schema(cls))
            con.register("empty", empty)
            types_ = dict(
                con.execute("SELECT column_name, column_type FROM (DESCRIBE empty)").fetchall()
            )
            con.unregister("empty")
            doc = (cls.__doc__ or "").strip().splitlines()[0]
            out += [f"### `{table}`", "", f"`{cls.__name__}`: {doc}", ""]
            out += ["| column | type | description |", "|---|---|---|"]
            for name, info in cls.model_fields.items():
                text = (info.description or "").replace("|", "\\|")
                out.append(f"| `{name}` | `{types_[name]}` | {text} |")
            out.append("")
    finally:
        con.close()
    return "\n".join(out)


def write_columns(doc: str) -> str:
    """``doc`` with the text between the column markers replaced by :func:`columns_markdown`."""
    head, sep, rest = doc.partition(COLUMNS_BEGIN)
    _, sep2, tail = rest.partition(COLUMNS_END)
    if not sep or not sep2:
        raise ValueError(f"the document lacks the markers {COLUMNS_BEGIN} ... {COLUMNS_END}")
    return f"{head}{COLUMNS_BEGIN}\n\n{columns_markdown()}\n{COLUMNS_END}{tail}"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    for name in sys.argv[1:]:
        path = Path(name)
        path.write_text(write_columns(path.read_text("utf-8")), "utf-8")
