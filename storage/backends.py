"""Object stores under the lake: a local folder or an S3 bucket, both with atomic publish."""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Protocol
from urllib.parse import urlparse


class BackendError(RuntimeError):
    """The object store refused or failed an operation; the message says which."""


def check_key(key: str) -> str:
    """``key`` if it is a relative '/'-path that stays under the lake root; else BackendError.

    Keys are built from table names, campaign ids, rounds and batch names; this is the last
    guard that none of them walks out of the root (``..``, an absolute path, a backslash or a
    NUL byte), whatever a caller validated before.
    """
    path = key.removesuffix("/")  # prefixes end in '/'
    if (
        not path
        or "\\" in path
        or "\x00" in path
        or path.startswith("/")
        or any(p in ("..", ".") for p in PurePosixPath(path).parts)
        or posixpath.normpath(path) != path
    ):
        raise BackendError(f"lake key {key!r} is not a plain relative path under the lake root")
    return key


class Backend(Protocol):
    """Where lake files live. Keys are '/'-separated paths relative to the lake root."""

    def put(self, key: str, data: bytes) -> None:
        """Publish ``data`` at ``key`` atomically: readers see the old object or the new one."""

    def keys(self, prefix: str) -> Iterator[str]:
        """Every key under ``prefix``."""

    def move(self, src: str, dst: str) -> None:
        """Move the object at ``src`` to ``dst`` (replacing it); nothing if ``src`` is gone."""

    def local_root(self) -> Path:
        """A local folder that mirrors the lake, for DuckDB to read (synced on demand)."""

    def sync(self, prefix: str = "") -> None:
        """Bring ``local_root()`` up to date for keys under ``prefix``."""


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a hidden temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary name never ends in .parquet, so no lake glob can match a half-written file.
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class LocalBackend:
    """A lake on a local folder (the embedded default)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def put(self, key: str, data: bytes) -> None:
        """Write through a temporary file and an atomic rename."""
        atomic_write(self.root / check_key(key), data)

    def keys(self, prefix: str) -> Iterator[str]:
        """Parquet files under ``prefix``, sorted."""
        base = self.root / check_key(prefix) if prefix else self.root
        if not base.exists():
            return
        for path in sorted(base.rglob("*.parquet")):
            yield path.relative_to(self.root).as_posix()

    def move(self, src: str, dst: str) -> None:
        """Rename within the folder (atomic on one file system)."""
        target = self.root / check_key(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            os.replace(self.root / check_key(src), target)

    def local_root(self) -> Path:
        """The lake folder itself."""
        return self.root

    def sync(self, prefix: str = "") -> None:
        """Nothing to do: the folder is the lake."""


class S3Backend:
    """A lake under ``s3://bucket/prefix``, read through a local cache of its partitions.

    SQL reads the cache rather than S3 itself so that queries work offline with any DuckDB
    build (no httpfs extension download) and repeated queries cost no requests.
    """

    def __init__(self, url: str, endpoint: str | None, cache_dir: Path) -> None:
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise BackendError(f"lake root {url!r} is not of the form s3://bucket/prefix")
        # boto3 costs half a second to import: only S3 lakes pay it (not every `evosyn sql`).
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        self._errors: tuple[type[Exception], ...] = (ClientError, BotoCoreError)
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        if self.prefix:
            check_key(self.prefix)
        self.client: Any = boto3.client(
            "s3",
            endpoint_url=endpoint,
            config=Config(retries={"max_attempts": 8, "mode": "standard"}, connect_timeout=5),
        )
        self.cache = (cache_dir / self.bucket / self.prefix).resolve()
        self.cache.mkdir(parents=True, exist_ok=True)
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            raise BackendError(f"S3 bucket {self.bucket!r} is not reachable: {exc}") from None
        except BotoCoreError as exc:
            raise BackendError(f"S3 endpoint for {url!r} is not reachable: {exc}") from None

    def _full(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, key: str, data: bytes) -> None:
        """Upload in one PUT."""
        # A PUT becomes visible whole or not at all; boto3 retries transient failures.
        check_key(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._full(key), Body=data)
        except self._errors as exc:
            raise BackendError(f"S3 write of {key} failed: {exc}") from exc

    def _objects(self, prefix: str) -> Iterator[tuple[str, str]]:
        paginator = self.client.get_paginator("list_objects_v2")
        full = self._full(prefix)
        strip = len(self.prefix) + 1 if self.prefix else 0
        for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
            for obj in page.get("Contents", []):
                if obj["Key"].endswith(".parquet"):
                    yield obj["Key"][strip:], obj["ETag"]

    def keys(self, prefix: str) -> Iterator[str]:
        """Parquet objects under ``prefix``, relative to the lake root."""
        try:
            for key, _ in self._objects(prefix):
                yield key
        except self._errors as exc:
            raise BackendError(f"S3 listing of {prefix!r} failed: {exc}") from exc

    def move(self, src: str, dst: str) -> None:
        """Copy server-side, then delete the source (S3 has no rename)."""
        check_key(src)
        check_key(dst)
        source = {"Bucket": self.bucket, "Key": self._full(src)}
        try:
            self.client.copy_object(Bucket=self.bucket, Key=self._full(dst), CopySource=source)
            self.client.delete_object(Bucket=self.bucket, Key=self._full(src))
        except self._errors as exc:
            raise BackendError(f"S3 move of {src} to {dst} failed: {exc}") from exc

    def local_root(self) -> Path:
        """The cache folder mirroring this lake."""
        return self.cache

    def sync(self, prefix: str = "") -> None:
        """Download new or changed objects and drop deleted ones, by ETag."""
        manifest_path = self.cache / ".manifest.json"
        manifest: dict[str, str] = {}
        if prefix:
            check_key(prefix)
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text("utf-8"))
        try:
            remote = dict(self._objects(prefix))
            for key, etag in remote.items():
                # An object named with '..' must not land outside the cache folder.
                target = self.cache / check_key(key)
                if manifest.get(key) == etag and target.exists():
                    continue
                body = self.client.get_object(Bucket=self.bucket, Key=self._full(key))["Body"]
                atomic_write(target, body.read())
                manifest[key] = etag
        except self._errors as exc:
            raise BackendError(f"S3 sync of {prefix!r} failed: {exc}") from exc
        for key in [k for k in manifest if k.startswith(prefix) and k not in remote]:
            (self.cache / key).unlink(missing_ok=True)
            del manifest[key]
        atomic_write(manifest_path, json.dumps(manifest, sort_keys=True).encode())
