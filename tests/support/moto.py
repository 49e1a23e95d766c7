"""An S3 server on 127.0.0.1 for the object-store archive: moto's, in a thread of the test
process, at a free port. Its absence fails under `CI=true` (`parts.need`)."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.parts import need

BUCKET = "soev-tests"
ENV = {
    "AWS_ACCESS_KEY_ID": "testing-key-id",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-key-value",
    "AWS_REGION": "us-east-1",
}
"""The client's standard configuration, as a deployment sets it (the endpoint is added)."""


@dataclass(frozen=True)
class S3:
    """A running S3 server: its endpoint, and the environment that points a client at it."""

    endpoint: str
    server: Any

    @property
    def env(self) -> dict[str, str]:
        return {**ENV, "AWS_ENDPOINT_URL": self.endpoint}

    def url(self) -> str:
        """A fresh `s3://` runs folder of its own (a prefix nobody used)."""
        return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=ENV["AWS_REGION"],
            aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"],
        )

    def keys(self, url: str) -> list[str]:
        """The keys under a runs URL, below its prefix."""
        prefix = url.split("/", 3)[3] + "/"
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        )
        return [item["Key"][len(prefix) :] for page in pages for item in page.get("Contents", [])]


@contextmanager
def moto_s3() -> Iterator[S3]:
    """Start moto's S3 server on a free port of 127.0.0.1 with the test bucket."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        need(False, "moto[server] is not installed")
        raise
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        s3 = S3(f"http://{host}:{port}", server)
        s3.client().create_bucket(Bucket=BUCKET)
        yield s3
    finally:
        server.stop()


@contextmanager
def pointed_at(s3: S3) -> Iterator[None]:
    """Set the client's environment for the block (the store reads it when it opens)."""
    saved = {name: os.environ.get(name) for name in s3.env}
    os.environ.update(s3.env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
