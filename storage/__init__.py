"""The lake: one Parquet table per record type, partitioned by campaign and round.

Public names: :class:`Lake` (write, read, catalog, SQL) and :class:`ReadOnlyQueryError`.
"""

from evosyn.storage.lake import Lake, LakeError
from evosyn.storage.sql import ReadOnlyQueryError

__all__ = ["Lake", "LakeError", "ReadOnlyQueryError"]
