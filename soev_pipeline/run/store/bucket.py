"""One S3-compatible bucket and prefix, with the conditional writes the archive relies on.

Through boto3, the AWS SDK: the endpoint, region and credentials come from its standard
configuration (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`,
a profile, an instance or pod role), never from options of our own. The secret values of
that configuration are redacted like every other secret of the command.

Every write is conditional: `create` sends `If-None-Match: *` (the object is created only if
absent) and `swap` sends `If-Match: <etag>` (a compare-and-swap). A store that ignores
these headers would silently overwrite, so `probe` refuses it before anything is archived.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.secrets import redact, register_secret

SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")
"""The variables of the AWS configuration whose values are secrets."""
LIST_PAGE = 1000
"""Keys a listing request asks for at most (S3's own limit)."""
CONFLICT_TRIES = 5
"""How often a conditional write is sent again when the store answers 409 (another
conditional write to the key is in progress): S3 asks the client to retry."""


class Bucket:
    """The objects under `s3://bucket/prefix/`, keyed by their path below the prefix."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if not parts.netloc or parts.query or parts.fragment:
            raise ProjectError(f"{url}: an object-store runs folder is s3://bucket/prefix")
        self.url = url
        self.name = parts.netloc
        self.prefix = parts.path.strip("/")
        for variable in SECRET_VARIABLES:
            value = os.environ.get(variable)
            if value:
                register_secret(value)
        self._client: Any = None
        self._guard = threading.Lock()
        self.probed = False

    @property
    def client(self) -> Any:
        """The boto3 S3 client, made on first use (importing boto3 takes a while)."""
        with self._guard:
            if self._client is None:
                import boto3
                from botocore.config import Config

                with self.failing(""):
                    self._client = boto3.session.Session().client(
                        "s3",
                        config=Config(
                            retries={"mode": "standard", "max_attempts": 5},
                            max_pool_connections=64,
                            # no CRC32 computed over every small attempt object: the bodies
                            # travel over TCP (TLS to S3), as before botocore 1.36
                            request_checksum_calculation="when_required",
                            response_checksum_validation="when_required",
                        ),
                    )
            return self._client

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def where(self, name: str) -> str:
        return f"s3://{self.name}/{self.key(name)}"

    @contextmanager
    def failing(self, name: str) -> Iterator[None]:
        """Turn the client's errors into one line naming the object (or the bucket)."""
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        where = self.where(name) if name else f"s3://{self.name}/{self.prefix}"
        try:
            yield
        except NoCredentialsError:
            raise ProjectError(
                f"{where}: no credentials for the object store: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or give the machine a role"
            ) from None
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "?")
            if code == "NoSuchBucket":
                raise ProjectError(
                    f"{where}: no bucket {self.name!r} at the object store"
                ) from None
            message = redact(str(error.get("Message") or code))
            raise ProjectError(f"{where}: the object store refused: {code}: {message}") from None
        except BotoCoreError as exc:
            raise ProjectError(f"{where}: the object store: {redact(str(exc))}") from None

    @staticmethod
    def _status(exc: Exception) -> int:
        response = getattr(exc, "response", None) or {}
        return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))

    def get(self, name: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag, or None when it does not exist."""
        from botocore.exceptions import ClientError

        with self.failing(name):
            try:
                found = self.client.get_object(Bucket=self.name, Key=self.key(name))
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    return None
                raise
            return found["Body"].read(), str(found["ETag"])

    def head(self, name: str) -> tuple[str, dict[str, str]] | None:
        """The object's ETag and user metadata, or None when it does not exist."""
        from botocore.exceptions import ClientError

        with self.failing(name):
            try:
                found = self.client.head_object(Bucket=self.name, Key=self.key(name))
            except ClientError as exc:
                if self._status(exc) == 404:
                    return None
                raise
            return str(found["ETag"]), dict(found.get("Metadata") or {})

    def create(
        self, name: str, data: bytes, *, metadata: dict[str, str] | None = None
    ) -> str | None:
        """Create the object only if it is absent (`If-None-Match: *`): its ETag, or None
        when it exists."""
        return self._put(name, data, {"IfNoneMatch": "*"}, metadata)

    def swap(
        self, name: str, data: bytes, etag: str, *, metadata: dict[str, str] | None = None
    ) -> str | None:
        """Replace the object only if its ETag is still `etag` (`If-Match`); its new ETag,
        or None when another writer changed or deleted it first."""
        return self._put(name, data, {"IfMatch": etag}, metadata)

    def _put(
        self,
        name: str,
        data: bytes,
        condition: dict[str, str],
        metadata: dict[str, str] | None = None,
    ) -> str | None:
        from botocore.exceptions import ClientError

        extra: dict[str, Any] = {**condition}
        if metadata:
            extra["Metadata"] = metadata
        with self.failing(name):
            for _ in range(CONFLICT_TRIES):
                try:
                    done = self.client.put_object(
                        Bucket=self.name, Key=self.key(name), Body=data, **extra
                    )
                except ClientError as exc:
                    status = self._status(exc)
                    if status in (412, 404):
                        return None
                    if status == 409:
                        continue
                    raise
                return str(done["ETag"])
            return None

    def list(self, prefix: str, *, delimiter: bool = False) -> list[str]:
        """The names under `prefix` (below the bucket's prefix); with `delimiter`, the
        first level of folders (each ending in `/`) instead of the objects."""
        names: list[str] = []
        base = self.key("")
        asked: dict[str, Any] = {"Bucket": self.name, "Prefix": self.key(prefix)}
        asked["MaxKeys"] = LIST_PAGE
        if delimiter:
            asked["Delimiter"] = "/"
        with self.failing(prefix):
            # page by page by hand: botocore's paginator loads its models on first use, which
            # took 16 ms, more than the request, on a fresh viewer's first page
            while True:
                page = self.client.list_objects_v2(**asked)
                if delimiter:
                    names += [
                        item["Prefix"][len(base) :] for item in page.get("CommonPrefixes", [])
                    ]
                else:
                    names += [item["Key"][len(base) :] for item in page.get("Contents", [])]
                if not page.get("IsTruncated"):
                    return names
                asked["ContinuationToken"] = page["NextContinuationToken"]

    def delete(self, names: Sequence[str]) -> None:
        """Delete the objects (a thousand a request)."""
        with self.failing(names[0] if names else ""):
            for start in range(0, len(names), 1000):
                objects = [{"Key": self.key(name)} for name in names[start : start + 1000]]
                self.client.delete_objects(
                    Bucket=self.name, Delete={"Objects": objects, "Quiet": True}
                )

    def delete_if(self, name: str, etag: str) -> None:
        """Delete the object if its ETag is still `etag`; else leave it."""
        from botocore.exceptions import ClientError

        with self.failing(name):
            try:
                self.client.delete_object(Bucket=self.name, Key=self.key(name), IfMatch=etag)
            except ClientError as exc:
                if self._status(exc) not in (412, 404):
                    raise

    def probe(self) -> None:
        """Refuse a store that does not honour conditional writes, with one line.

        Creates a probe object twice with `If-None-Match: *` (the second must fail with
        412), replaces it with a wrong `If-Match` (must fail too), then deletes it. Done
        once per bucket and process, before the first write.

        Raises:
            ProjectError: the store overwrote the object, or cannot be reached.
        """
        if self.probed:
            return
        name = f".soev-probe/{uuid.uuid4().hex}"
        try:
            if self.create(name, b"1") is None:
                raise ProjectError(f"{self.where(name)}: a new object exists already")
            if self.create(name, b"2") is not None:
                raise ProjectError(
                    f"s3://{self.name}/{self.prefix}: the object store does not honour "
                    "If-None-Match (it overwrote an object): the run archive needs conditional "
                    "writes (S3, or MinIO, Ceph or moto of 2024 or later)"
                )
            if self.swap(name, b"3", '"0"') is not None:
                raise ProjectError(
                    f"s3://{self.name}/{self.prefix}: the object store does not honour "
                    "If-Match (it replaced an object whose ETag differed): the run archive "
                    "needs conditional writes"
                )
        finally:
            with self.failing(name):
                self.client.delete_object(Bucket=self.name, Key=self.key(name))
        self.probed = True
