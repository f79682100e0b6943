"""The gateway's response cache: one JSON file per request digest, written atomically.

A campaign's roles cache under a folder of their own (``campaign_scope``), so that a resumed
campaign gets its own answers back and a new campaign draws new ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evosyn.records import SAFE_ID

M = TypeVar("M", bound=BaseModel)


def request_digest(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
) -> str:
    """The sha256 (hex) of a request's model, messages, tools and sampling parameters."""
    payload = {"model": model, "messages": messages, "tools": tools, "params": params}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def campaign_scope(campaign_id: str, lake_root: str | Path | None = None) -> str:
    """The cache subfolder of one campaign: its id, and a digest of its lake when given.

    The lake is part of the scope because an id names a campaign only within its lake: two
    lakes (a test's, a colleague's) may hold campaigns of the same id that must not share
    answers. A local lake root is made absolute first, so ``lake`` and ``./lake`` agree.
    """
    if not SAFE_ID.match(campaign_id):
        raise ValueError(
            f"campaign id {campaign_id!r} cannot name a cache folder: use letters, digits, "
            "'_', '.' or '-', starting with a letter or digit"
        )
    if lake_root is None:
        return campaign_id
    root = str(lake_root)
    if "://" not in root:
        root = Path(root).expanduser().resolve().as_posix()
    return f"{campaign_id}-{hashlib.sha256(root.encode('utf-8')).hexdigest()[:8]}"


class ResponseCache:
    """Stored responses under ``root/AB/ABCDEF....json``, keyed by request digest.

    Args:
        root: folder of the cache; created on the first write.

    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        """The file that holds the response of ``digest``."""
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, digest: str, cls: type[M]) -> M | None:
        """The stored response of ``digest`` as ``cls``, or None if absent or unreadable."""
        try:
            text = self.path(digest).read_text("utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return cls.model_validate_json(text)
        except ValidationError:
            # A file from an older record layout is a miss, not an error: it is rewritten.
            return None

    def put(self, digest: str, value: BaseModel) -> Path:
        """Store ``value`` for ``digest``; readers see the old file or the new, never half."""
        target = self.path(digest)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{digest[:8]}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(value.model_dump_json())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target
