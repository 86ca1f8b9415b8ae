"""What the Confluent API tests share: schemas, raw HTTP calls, Protobuf classes built from text."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from registry.formats.protobuf import _RUN_PROTOC, protoc_include_dir

#: What Confluent clients send and accept.
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def avro(name: str, *fields: tuple[str, Any] | dict[str, Any], namespace: str = "acme") -> str:
    """An Avro record schema; a field is (name, type) or a full field object."""
    listed = [f if isinstance(f, dict) else {"name": f[0], "type": f[1]} for f in fields]
    return json.dumps({"type": "record", "name": name, "namespace": namespace, "fields": listed})


def enc(subject: str) -> str:
    """A subject name as clients put it in a path."""
    return quote(subject, safe="")


class Raw:
    """Plain HTTP calls to the Confluent API, for what the stock client does not expose."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.session = requests.Session()

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> requests.Response:
        """One request; ``body`` is sent as JSON with Confluent's content type."""
        headers = {"Accept": CONTENT_TYPE}
        data = None
        if body is not None:
            headers["Content-Type"] = CONTENT_TYPE
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return self.session.request(method, self.base + path, data=data, params=params, headers=headers, timeout=60)

    def ok(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """The JSON answer of a request that must succeed."""
        response = self.call(method, path, body, **params)
        assert response.status_code < 300, (response.status_code, response.text)
        return response.json()

    def error(self, method: str, path: str, body: Any = None, **params: Any) -> tuple[int, int, str]:
        """(status, error_code, message) of a request that must fail, with a Confluent error body."""
        response = self.call(method, path, body, **params)
        assert response.status_code >= 400, (response.status_code, response.text)
        assert response.status_code < 500, (response.status_code, response.text)
        found = response.json()
        assert set(found) == {"error_code", "message"}, found
        return response.status_code, found["error_code"], found["message"]


def proto_classes(files: dict[str, str], *names: str) -> list[type[Message]]:
    """Message classes of ``names``, from ``.proto`` files compiled by protoc into a pool of
    their own (as generated code would define them, without generating any)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        out = Path(tmp, "out.desc")
        subprocess.run(
            [sys.executable, "-c", _RUN_PROTOC, "protoc", f"-I{tmp}", f"-I{protoc_include_dir()}",
             "--include_imports", f"--descriptor_set_out={out}", *files],
            check=True, capture_output=True,
        )
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.Add(file)
    return [message_factory.GetMessageClass(pool.FindMessageTypeByName(n)) for n in names]
