"""The lake: one Parquet table per record type, partitioned by campaign and round.

Public names: :class:`Lake` (write, read, catalog, SQL), its errors :class:`LakeError`,
:class:`NoLakeError` and :class:`UnknownCampaignError`, and :class:`ReadOnlyQueryError`.
"""

from evosyn.storage.lake import Lake, LakeError, NoLakeError, UnknownCampaignError
from evosyn.storage.sql import ReadOnlyQueryError

__all__ = ["Lake", "LakeError", "NoLakeError", "ReadOnlyQueryError", "UnknownCampaignError"]
