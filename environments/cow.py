"""Copy-on-write views of a parsed τ²-bench database.

τ²-bench's evaluator parses the domain database from JSON for every environment it builds
(twice per task) and hashes the whole database to compare two of them. Here a database is
parsed once per process; each replay gets a *view* whose keyed collections share the parsed
records until a tool touches one, at which point that record alone is deep-copied. Two views
of the same base then differ only in records that one of them touched, so comparing those
records decides what comparing τ²-bench's whole-database hashes decides.

Records read by a READ tool are not copied: τ²-bench marks those tools as not modifying state
and serialises their results at once. Every other access (write tools, generic tools,
initialisation functions, environment syncs and assertions) copies before handing a record out.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, TypeAdapter
from tau2.utils.utils import get_dict_hash

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_values

_MISSING = object()

DBT = TypeVar("DBT", bound=BaseModel)
RecordT = TypeVar("RecordT")


class CowContext:
    """Mode shared by the collections of one view: copy records on access or not."""

    def __init__(self) -> None:
        self.read_only = False


class CowDict(dict[str, RecordT]):
    """A dict of records that deep-copies a shared record the first time it is handed out.

    The underlying dict storage always holds the current value of every key (shared base
    record or private copy), so C-level readers such as pydantic serialisation see the right
    content. ``dirty`` holds every key whose value may differ from the base.
    """

    def __init__(
        self,
        base: dict[str, RecordT],
        context: CowContext,
        origin: object,
        blobs: dict[str, bytes] | None = None,
    ) -> None:
        super().__init__(base)
        self.context = context
        self.origin = origin
        self.dirty: set[str] = set()
        # Pickled base records, shared by all views of one base: unpickling is ~2x faster
        # than deep-copying a pydantic record.
        self._blobs = {} if blobs is None else blobs

    def _own(self, key: str) -> RecordT:
        value = dict.__getitem__(self, key)
        if key in self.dirty or self.context.read_only:
            return value
        value = self._copy_of_base(key, value)
        dict.__setitem__(self, key, value)
        self.dirty.add(key)
        return value

    def _copy_of_base(self, key: str, value: RecordT) -> RecordT:
        blob = self._blobs.get(key)
        if blob is None:
            try:
                blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # not picklable: copy it the slow way
                return copy.deepcopy(value)
            self._blobs[key] = blob
        copied: RecordT = pickle.loads(blob)
        return copied

    def _own_all(self) -> None:
        if not self.context.read_only:
            for key in list(dict.keys(self)):
                self._own(key)

    def __getitem__(self, key: str) -> RecordT:
        return self._own(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The record at ``key`` (copied on first write-mode access) or ``default``."""
        if dict.__contains__(self, key):
            return self._own(key)
        return default

    def __setitem__(self, key: str, value: RecordT) -> None:
        self.dirty.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self.dirty.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its (private) record."""
        if dict.__contains__(self, key):
            value = self._own(key)
            self.dirty.add(key)
            dict.__delitem__(self, key)
            return value
        if default is _MISSING:
            raise KeyError(key)
        return default

    def popitem(self) -> tuple[str, RecordT]:
        """Remove and return the last item (its record private)."""
        key = next(reversed(list(dict.keys(self))))
        return key, self.pop(key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The record at ``key``, inserting ``default`` first when it is absent."""
        if dict.__contains__(self, key):
            return self._own(key)
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Set every given key (each becomes dirty)."""
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        """Remove every key."""
        self.dirty.update(dict.keys(self))
        dict.clear(self)

    def values(self) -> dict_values[str, RecordT]:
        """All records; in write mode every record becomes private first."""
        self._own_all()
        return dict.values(self)

    def items(self) -> dict_items[str, RecordT]:
        """All items; in write mode every record becomes private first."""
        self._own_all()
        return dict.items(self)

    def copy(self) -> dict[str, RecordT]:
        """A plain dict of the current records (all private in write mode)."""
        self._own_all()
        return dict(dict.items(self))

    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def __reduce__(self) -> tuple[type[dict[str, RecordT]], tuple[dict[str, RecordT]]]:
        # Pickling or deep-copying a view yields a plain dict of its current records.
        return (dict, (dict(dict.items(self)),))

    def __deepcopy__(self, memo: dict[int, object]) -> dict[str, RecordT]:
        return {k: copy.deepcopy(v, memo) for k, v in dict.items(self)}


class CowBase:
    """A database parsed once, from which cheap copy-on-write views are made."""

    def __init__(self, db: BaseModel) -> None:
        self.db = db
        self._keyed: dict[str, TypeAdapter[object]] = {}
        self._blobs: dict[str, dict[str, bytes]] = {}
        self._plain: dict[str, TypeAdapter[object]] = {}
        for name, field in type(db).model_fields.items():
            annotation = field.annotation
            value = getattr(db, name)
            if get_origin(annotation) is dict and type(value) is dict:
                self._keyed[name] = TypeAdapter(get_args(annotation)[1])
                self._blobs[name] = {}
            else:
                self._plain[name] = TypeAdapter(Any if annotation is None else annotation)

    def view(self) -> BaseModel:
        """A fresh copy-on-write view of the base database."""
        context = CowContext()
        db = self.db.model_copy()
        for name in self._keyed:
            db.__dict__[name] = CowDict(self.db.__dict__[name], context, self, self._blobs[name])
        for name in self._plain:
            db.__dict__[name] = copy.deepcopy(self.db.__dict__[name])
        return db

    def owns(self, db: object) -> bool:
        """True iff ``db`` is a view made by this base (all its collections still views)."""
        if type(db) is not type(self.db) or not self._keyed:
            return False
        fields = db.__dict__
        return all(
            isinstance(fields[name], CowDict) and fields[name].origin is self
            for name in self._keyed
        )

    def equal(self, left: BaseModel, right: BaseModel) -> bool:
        """Whether two views of this base would have the same τ²-bench database hash."""
        for name, adapter in self._keyed.items():
            a, b = left.__dict__[name], right.__dict__[name]
            for key in a.dirty | b.dirty:
                va = dict.get(a, key, _MISSING)
                vb = dict.get(b, key, _MISSING)
                if va is vb:
                    continue
                if va is _MISSING or vb is _MISSING:
                    return False
                if _dump(adapter, va) != _dump(adapter, vb):
                    return False
        for name, adapter in self._plain.items():
            if _dump(adapter, left.__dict__[name]) != _dump(adapter, right.__dict__[name]):
                return False
        return True


def _dump(adapter: TypeAdapter[object], value: object) -> str:
    # The same serialisation τ²-bench hashes: python-mode dump, sorted keys, str fallback.
    return json.dumps(adapter.dump_python(value), sort_keys=True, default=str)


def _full_hash(db: BaseModel) -> str:
    return str(get_dict_hash(db.model_dump()))


def views_equal(bases: Iterable[CowBase], left: BaseModel | None, right: BaseModel | None) -> bool:
    """Whether two databases have equal τ²-bench hashes, cheaply when both are views of a base.

    Args:
        bases: The copy-on-write bases the databases may be views of.
        left: One database (``None`` when the toolkit has none).
        right: The other database.

    Returns:
        True iff τ²-bench's ``get_dict_hash(db.model_dump())`` would agree for both.
    """
    if left is None or right is None:
        return left is right
    for base in bases:
        if base.owns(left) and base.owns(right):
            return base.equal(left, right)
    return _full_hash(left) == _full_hash(right)


def detached(db: DBT) -> DBT:
    """A copy of ``db`` whose copy-on-write collections are plain dicts of its current records.

    For a reader that would otherwise pay a view's bookkeeping on every access. The records are
    not copied (``dict(view)`` would copy each one through ``__getitem__``): a record no tool
    touched is the base's own, shared with every view of it, so the reader must never change one.
    """
    return db.model_copy(
        update={
            name: dict(dict.items(value))
            for name, value in db.__dict__.items()
            if isinstance(value, CowDict)
        }
    )


def set_read_only(db: object, read_only: bool) -> bool:
    """Switch a view's copy mode; returns the previous mode (False for non-views)."""
    fields = getattr(db, "__dict__", {})
    for value in fields.values():
        if isinstance(value, CowDict):
            previous = value.context.read_only
            value.context.read_only = read_only
            return previous
    return False
