"""A local S3-compatible server for tests: moto's S3 server on a free loopback port."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from moto.server import ThreadedMotoServer

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextmanager
def moto_endpoint(address: str = "127.0.0.1") -> Iterator[str]:
    """Start moto's S3 server on `address` (free port), with test credentials in the environment."""
    server = ThreadedMotoServer(ip_address=address, port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in CREDENTIALS.items():
                patch.setenv(name, value)
            yield f"http://{host}:{port}"
    finally:
        server.stop()


def new_bucket(endpoint: str) -> str:
    """A fresh, uniquely named bucket on the server."""
    bucket = f"mi-{uuid.uuid4().hex[:16]}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return bucket
