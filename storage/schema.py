"""Map lake records to Arrow rows and back.

Scalar fields (str, int, float, bool, datetime, enums, literals) become typed columns; anything
nested (lists, dicts, records, τ²-bench tasks and messages) becomes a JSON string column, so
every table can be read by plain SQL and parsed back into its record losslessly. A missing
(``None``) value is NULL in either kind of column.
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


@cache
def arrow_schema(cls: type[LakeRecord]) -> pa.Schema:
    """The Arrow schema of ``cls``'s table; JSON columns carry ``evosyn.json`` metadata."""
    fields = []
    for name, info in cls.model_fields.items():
        scalar = _scalar_type(info.annotation)
        if scalar is None:
            fields.append(pa.field(name, pa.string(), metadata={"evosyn.json": "1"}))
        else:
            fields.append(pa.field(name, scalar))
    return pa.schema(fields)


def json_columns(cls: type[LakeRecord]) -> frozenset[str]:
    """Names of the columns of ``cls`` stored as JSON text."""
    return frozenset(f.name for f in arrow_schema(cls) if f.metadata)


def to_table(records: typing.Sequence[LakeRecord], cls: type[LakeRecord]) -> pa.Table:
    """Records of one type as an Arrow table with the table's schema."""
    schema = arrow_schema(cls)
    as_json = json_columns(cls)
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    for record in records:
        if type(record) is not cls:
            raise TypeError(f"cannot store {type(record).__name__} in table {cls.TABLE}")
        plain = record.model_dump(mode="json")
        for name in columns:
            value = plain[name]
            if name in as_json:
                # A missing value is SQL NULL, not the JSON text 'null': `IS NULL` finds it.
                text = None if value is None else json.dumps(value, ensure_ascii=False)
                columns[name].append(text)
            elif isinstance(schema.field(name).type, pa.TimestampType):
                columns[name].append(getattr(record, name))
            else:
                columns[name].append(value)
    return pa.table(columns, schema=schema)


def from_rows(rows: typing.Iterable[dict[str, Any]], cls: type[LakeRecord]) -> list[LakeRecord]:
    """Parse rows read from a table back into records of ``cls``."""
    as_json = json_columns(cls)
    # A column that files written before its field existed lack reads as null; such a field
    # takes its default instead.
    defaulted = {
        name for name, f in cls.model_fields.items() if not f.is_required() and _non_null_default(f)
    }
    out = []
    for row in rows:
        data = {
            k: (json.loads(v) if k in as_json and v is not None else v)
            for k, v in row.items()
            if k in cls.model_fields and not (v is None and k in defaulted)
        }
        out.append(cls.model_validate(data))
    return out


def _non_null_default(field: FieldInfo) -> bool:
    return field.default_factory is not None or field.default is not None
