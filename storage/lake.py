"""The lake: write and read records by table, campaign and round; a DuckDB catalog over it.

Layout under the root (local folder or ``s3://bucket/prefix``)::

    TABLE/CAMPAIGN/ROUND/BATCH.parquet     one file per (table, campaign, round, batch)
    TABLE/_schema/0/_schema.parquet        zero rows: the table's typed schema

Every file carries ``campaign_id`` and ``round`` as columns. The folders are deliberately not
Hive-style (``campaign_id=ID``): a reader that infers partition columns from such names (pandas,
``pyarrow.dataset``) would then find each of them twice. Nothing stored holds an absolute path:
the catalog's views name files relative to the lake root, so a copied lake reads itself.

Writing a batch publishes one whole file atomically under a deterministic name, so a retried
batch replaces itself and a killed writer leaves the old file. Writers never share a lock: the
catalog's views glob the files at query time and need no refresh when data is added.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import re
import threading
import uuid
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from evosyn.names import SAFE_ID
from evosyn.storage.backends import Backend, BackendError, LocalBackend, S3Backend

if TYPE_CHECKING:
    import pyarrow as pa

    from evosyn.records import LakeRecord

# The record models (and τ²-bench, which they import) and pyarrow load on first use: a query
# through the catalog (`evosyn sql`) needs neither, and pays for neither.

R = TypeVar("R", bound="LakeRecord")

CATALOG_NAME = "catalog.duckdb"
SCHEMA_PARTITION = "_schema/0/_schema.parquet"
# Files of the Hive-style layout this lake had before (TABLE/campaign_id=ID/round=R/...).
_LEGACY_KEY = re.compile(r"^([^/]+)/campaign_id=([^/]+)/round=([0-9]+)/([^/]+\.parquet)$")


# One in-memory DuckDB database per process for reading parquet files: opening a database
# costs 20-40 ms, a cursor on an open one microseconds, and a campaign reads the lake
# thousands of times. Each read takes its own cursor (DuckDB's rule for threads); a forked
# child opens its own database rather than use its parent's.
_SCRATCH: tuple[int, duckdb.DuckDBPyConnection] | None = None
_SCRATCH_LOCK = threading.Lock()


def _scratch_cursor() -> duckdb.DuckDBPyConnection:
    """A fresh cursor on this process's in-memory DuckDB database."""
    global _SCRATCH
    with _SCRATCH_LOCK:
        if _SCRATCH is None or _SCRATCH[0] != os.getpid():
            _SCRATCH = (os.getpid(), duckdb.connect())
        return _SCRATCH[1].cursor()


class LakeError(RuntimeError):
    """A lake operation that cannot be done; the message says what and where."""


class NoLakeError(LakeError):
    """No lake where a reader looked (``Lake(..., create=False)``); the message names where."""


KNOWN_SHOWN = 3
"""How many of a lake's campaign ids an unknown-campaign error names."""


class UnknownCampaignError(LakeError):
    """A campaign id the lake does not hold; the message lists the ones it does."""


def _parquet_bytes(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def _is_local_lake(root: Path) -> bool:
    """Whether ``root`` holds a lake: its catalog, or a table's schema or partition folders."""
    return (
        (root / CATALOG_NAME).is_file()
        or any(root.glob("*/_schema"))
        or any(root.glob("*/campaign_id=*"))
    )


@cache
def _schema_sources() -> tuple[Path, ...]:
    """The modules the tables' schemas are made from, found without importing them."""
    spec = importlib.util.find_spec("evosyn.records")
    assert spec is not None and spec.origin is not None, "evosyn.records is not installed"
    here = Path(__file__)
    return (Path(spec.origin), here.with_name("schema.py"), here)


def _code_digest() -> str:
    """A cheap stand-in for the schema digest: same sources, same schemas."""
    h = hashlib.sha256()
    for path in _schema_sources():
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _view_glob(table: str) -> str:
    """The files of ``table``, relative to the lake root, as the catalog's view names them."""
    return f"{table}/*/*/*.parquet"


def _sql_text(value: object) -> str:
    """``value`` as an SQL string literal (a quote in a lake folder's name cannot end it)."""
    return "'" + str(value).replace("'", "''") + "'"


def _remove_empty(folder: Path) -> None:
    # Not empty (a file another writer just added) or already gone: leave it.
    with contextlib.suppress(OSError):
        folder.rmdir()


def _check_key(kind: str, value: str) -> None:
    if not SAFE_ID.match(value):
        raise LakeError(f"{kind} {value!r} is not a safe file name (letters, digits, _ . -)")


class Lake:
    """The synthesis history: one Parquet table per record type.

    Args:
        root: local folder or ``s3://bucket/prefix``.
        s3_endpoint: endpoint URL for S3-compatible servers; ``None`` means AWS (or the
            ``AWS_ENDPOINT_URL`` variable boto3 reads).
        cache_dir: where S3 partitions are mirrored for SQL; default ``.evosyn-cache``.
        create: make the lake when there is none at ``root``. Readers pass ``False``: a query
            in the wrong folder then fails with LakeError naming the place it looked, instead
            of answering from a new, empty lake.

    """

    def __init__(
        self,
        root: str | Path,
        s3_endpoint: str | None = None,
        cache_dir: str | Path | None = None,
        *,
        create: bool = True,
    ) -> None:
        self.root = str(root)
        self.backend: Backend
        is_s3 = self.root.startswith("s3://")
        if not create and not is_s3 and not _is_local_lake(Path(self.root)):
            raise NoLakeError(f"no lake at {Path(self.root).resolve()}")
        try:
            if is_s3:
                cache = Path(cache_dir) if cache_dir else Path(".evosyn-cache")
                self.backend = S3Backend(self.root, s3_endpoint, cache)
                if not create and next(iter(self.backend.keys("")), None) is None:
                    raise NoLakeError(f"no lake at {self.root}")
            else:
                self.backend = LocalBackend(Path(self.root))
        except (BackendError, OSError) as exc:
            raise LakeError(f"cannot open lake at {self.location}: {exc}") from None
        self._ensure_schemas()

    @property
    def location(self) -> str:
        """Where the lake is, for people: its absolute folder, or its ``s3://`` URL."""
        if self.root.startswith("s3://"):
            return self.root
        return str(Path(self.root).resolve())

    def campaign_ids(self) -> list[str]:
        """The ids of the campaigns in the lake, sorted."""
        from evosyn.records import Campaign

        return sorted({c.campaign_id for c in self.read(Campaign)})

    def check_campaign(self, campaign_id: str) -> None:
        """UnknownCampaignError naming the lake's campaigns, unless ``campaign_id`` is one."""
        known = self.campaign_ids()
        if campaign_id not in known:
            # A few names, not every one: a lake of an experiment holds dozens.
            shown = ", ".join(known[:KNOWN_SHOWN]) if known else "none"
            more = f" and {len(known) - KNOWN_SHOWN} more: evosyn campaign list"
            raise UnknownCampaignError(
                f"unknown campaign {campaign_id!r} in {self.location} "
                f"(known: {shown}{more if len(known) > KNOWN_SHOWN else ''})"
            )

    # ------------------------------------------------------------------ writing

    @staticmethod
    def batch_path(table: str, campaign_id: str, round: int, batch: str) -> str:
        """The key of one batch file, relative to the lake root."""
        return f"{table}/{campaign_id}/{round}/{batch}.parquet"

    def write(self, records: Sequence[LakeRecord], batch: str) -> str:
        """Publish ``records`` as one batch; writing the same batch again replaces it.

        All records must be of one type and share ``campaign_id`` and ``round``. Returns the
        key of the published file.
        """
        from evosyn.storage.schema import to_table

        if not records:
            raise LakeError(f"batch {batch!r} is empty: nothing to write")
        _check_key("batch key", batch)
        cls = type(records[0])
        partitions = {(r.campaign_id, r.round) for r in records}
        if len(partitions) != 1:
            raise LakeError(
                f"batch {batch!r} of {cls.TABLE} spans several partitions {sorted(partitions)}"
            )
        self._check_unique(records, cls)
        campaign_id, round_ = partitions.pop()
        # Records validate their ids, but model_construct skips validation: check the path.
        _check_key("campaign_id", str(campaign_id))
        key = self.batch_path(cls.TABLE, campaign_id, round_, batch)
        try:
            self.backend.put(key, _parquet_bytes(to_table(records, cls)))
        except (BackendError, OSError) as exc:
            raise LakeError(f"writing {key} failed: {exc}") from exc
        return key

    @staticmethod
    def _check_unique(records: Sequence[LakeRecord], cls: type[LakeRecord]) -> None:
        if not cls.KEY:
            if len(records) > 1:
                raise LakeError(f"table {cls.TABLE} holds one row per round, got {len(records)}")
            return
        seen: set[tuple[Any, ...]] = set()
        for record in records:
            ident = tuple(getattr(record, k) for k in cls.KEY)
            if ident in seen:
                named = dict(zip(cls.KEY, ident, strict=True))
                raise LakeError(f"batch repeats {cls.TABLE} key {named}")
            seen.add(ident)

    # ------------------------------------------------------------------ reading

    def _glob(self, table: str, campaign_id: str | None, round: int | None) -> str:
        cid = campaign_id if campaign_id is not None else "*"
        rnd = str(round) if round is not None else "*"
        return (self.backend.local_root() / table / cid / rnd).as_posix()

    def read(
        self, cls: type[R], campaign_id: str | None = None, round: int | None = None
    ) -> list[R]:
        """Records of type ``cls``, optionally of one campaign and one round.

        Rows come in the order they were written: by campaign and round, then by batch key,
        then as the batch listed them. A batch therefore reads back exactly as it was written,
        so a resumed task that returns its stored output hands on the same list, in the same
        order, as the run that computed it (order-sensitive consumers, such as seeded
        permutation tests over evaluations, then decide alike).
        """
        from evosyn.storage.schema import from_rows

        prefix = f"{cls.TABLE}/"
        if campaign_id is not None:
            _check_key("campaign_id", campaign_id)
            prefix += f"{campaign_id}/"
            if round is not None:
                prefix += f"{round}/"
        self.sync(prefix)
        pattern = self._glob(cls.TABLE, campaign_id, round) + "/*.parquet"
        con = _scratch_cursor()
        try:
            rel = con.sql(
                "SELECT * EXCLUDE (filename, file_row_number) FROM read_parquet(?, "
                "union_by_name=true, filename=true, file_row_number=true) "
                "ORDER BY campaign_id, round, filename, file_row_number",
                params=[pattern],
            )
            rows = rel.fetch_arrow_table().to_pylist()
        except duckdb.IOException as exc:
            if "No files found" in str(exc):
                return []
            raise LakeError(f"reading {cls.TABLE} failed: {exc}") from exc
        finally:
            con.close()
        return [r for r in from_rows(rows, cls) if isinstance(r, cls)]

    def sync(self, prefix: str = "") -> None:
        """Bring the local mirror of an S3 lake up to date (nothing to do for a local lake)."""
        try:
            self.backend.sync(prefix)
        except (BackendError, OSError) as exc:
            raise LakeError(f"syncing the lake failed: {exc}") from exc

    # ------------------------------------------------------------------ catalog

    @property
    def catalog_path(self) -> Path:
        """The DuckDB database with one view per table (beside the local mirror)."""
        return self.backend.local_root() / CATALOG_NAME

    def _schema_digest(self) -> str:
        from evosyn.records import TABLES
        from evosyn.storage.schema import arrow_schema

        text = json.dumps(
            {t: str(arrow_schema(c)) for t, c in sorted(TABLES.items())}, sort_keys=True
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _ensure_schemas(self) -> None:
        """Write each table's zero-row schema file and build the catalog if either is stale.

        The marker holds the schema digest after a digest of the code that makes the schemas:
        while that code is unchanged, the models need not be imported to know the catalog is
        current.
        """
        root = self.backend.local_root()
        marker = root / ".catalog-digest"
        code = _code_digest()
        stored = marker.read_text("utf-8").split(":") if marker.exists() else []
        if stored[:1] == [code] and self.catalog_path.exists():
            return
        self._migrate_legacy_layout()
        digest = self._schema_digest()
        if stored[-1:] != [digest] or not self.catalog_path.exists():
            import pyarrow as pa

            from evosyn.records import TABLES
            from evosyn.storage.schema import arrow_schema

            for table, cls in TABLES.items():
                empty = pa.Table.from_pylist([], schema=arrow_schema(cls))
                self.backend.put(f"{table}/{SCHEMA_PARTITION}", _parquet_bytes(empty))
            self.sync()
            self._retype_old_files()
            self._build_catalog()
        tmp = marker.with_name(f".catalog-digest.{uuid.uuid4().hex}")
        tmp.write_text(f"{code}:{digest}", "utf-8")
        os.replace(tmp, marker)

    def _retype_old_files(self) -> None:
        """Rewrite batch files whose nested columns an older EvoSyn stored as JSON text.

        DuckDB cannot read a column that is text in one file and a MAP or STRUCT in another,
        so a table's files must agree with its schema file. A file is rewritten (atomically,
        under its own name) only when a typed column of the current schema is text in it.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from evosyn.records import TABLES
        from evosyn.storage.schema import JSON, arrow_schema, from_rows, to_table

        root = self.backend.local_root()
        for table, cls in TABLES.items():
            typed = {f.name for f in arrow_schema(cls) if f.type not in (JSON, pa.string())}
            for path in sorted((root / table).glob("*/*/*.parquet")):
                if path.parent.parent.name == "_schema":
                    continue
                old = pq.read_schema(path)
                if not any(n in old.names and old.field(n).type == pa.string() for n in typed):
                    continue
                records = from_rows(pq.read_table(path).to_pylist(), cls)
                key = path.relative_to(root).as_posix()
                try:
                    self.backend.put(key, _parquet_bytes(to_table(records, cls)))
                except (BackendError, OSError) as exc:
                    raise LakeError(f"retyping {key} failed: {exc}") from exc
        self.sync()

    def _migrate_legacy_layout(self) -> None:
        """Move files of the old Hive-style layout to ``TABLE/CAMPAIGN/ROUND/``.

        Runs when the catalog is (re)built, so a lake written by an older EvoSyn reads whole.
        Moving is idempotent: a move another process already made is skipped.
        """
        root = self.backend.local_root()
        if isinstance(self.backend, LocalBackend) and not any(root.glob("*/campaign_id=*")):
            return
        try:
            for key in list(self.backend.keys("")):
                match = _LEGACY_KEY.match(key)
                if match:
                    self.backend.move(key, "/".join(match.groups()))
        except (BackendError, OSError) as exc:
            raise LakeError(f"moving {self.location} to the current layout failed: {exc}") from exc
        if isinstance(self.backend, LocalBackend):
            for folder in sorted(root.glob("*/campaign_id=*/round=*"), reverse=True):
                _remove_empty(folder)
                _remove_empty(folder.parent)

    def _build_catalog(self) -> None:
        # Build beside the final name and rename: concurrent builders never share a lock, and
        # a reader with the old catalog open keeps a consistent file.
        tmp = self.catalog_path.with_name(f".{CATALOG_NAME}.{uuid.uuid4().hex}.tmp")
        from evosyn.records import TABLES

        con = duckdb.connect(str(tmp))
        try:
            # The views name their files relative to the lake root (a copied lake reads
            # itself); DuckDB resolves such names through file_search_path, here and in
            # connect().
            con.execute(f"SET file_search_path = {_sql_text(self.backend.local_root())}")
            for table in TABLES:
                con.execute(
                    f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{_view_glob(table)}', "
                    "union_by_name=true, hive_partitioning=false)"
                )
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, self.catalog_path)
        Path(f"{tmp}.wal").unlink(missing_ok=True)

    def connect(self, campaign: str | None = None) -> duckdb.DuckDBPyConnection:
        """A read-only DuckDB connection to the catalog, with the mirror synced first.

        The connection is sandboxed to the lake: files outside its local folder cannot be read
        or written (``read_csv('/etc/passwd')``, ``COPY ... TO``), no extension is installed or
        loaded from disk or network, and the settings are locked so a query cannot undo this.

        With ``campaign``, each table's view reads only that campaign's files (and the table's
        schema): the rows a query of that campaign sees are the same, but it opens its own files
        instead of every file of the lake (a sweep's lake holds thousands).
        """
        self.sync()
        con = duckdb.connect(
            str(self.catalog_path),
            read_only=True,
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
        )
        try:
            # The order matters: allowed directories can only be set while access is open.
            # A literal, not a bound list: binding a Python list makes DuckDB import pandas
            # (half a second of every `evosyn sql`).
            root = self.backend.local_root()
            views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal")
            # The views' relative globs, exactly: allowing a relative folder instead would let
            # DuckDB fall back to the working directory for a file the lake lacks.
            globs = ", ".join(_sql_text(_view_glob(v)) for (v,) in views.fetchall())
            con.execute(f"SET allowed_directories = [{_sql_text(f'{root}/')}]")
            con.execute(f"SET allowed_paths = [{globs}]")
            con.execute(f"SET file_search_path = {_sql_text(root)}")
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            if campaign is not None:
                self._scope(con, campaign)
        except duckdb.Error:
            con.close()
            raise
        return con

    def _scope(self, con: duckdb.DuckDBPyConnection, campaign: str) -> None:
        """Shadow each table's view in ``con`` by one over ``campaign``'s files only."""
        from evosyn.records import TABLES

        root = self.backend.local_root()
        for table in TABLES:
            files = [_sql_text(root / table / SCHEMA_PARTITION)]
            # Not a safe name: no folder of the lake can be the campaign's (nor a glob).
            if SAFE_ID.match(campaign) and (root / table / campaign).is_dir():
                files.append(_sql_text(f"{root / table / campaign}/*/*.parquet"))
            # A temporary view comes first in DuckDB's search path, before the catalog's.
            con.execute(
                f"CREATE TEMP VIEW {table} AS SELECT * FROM read_parquet([{', '.join(files)}], "
                "union_by_name=true, hive_partitioning=false)"
            )
