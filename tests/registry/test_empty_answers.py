"""Answers without a body say what they are: a 201 is application/json like every other answer of the
API (never Flask's default text/html), a 204 has no Content-Type at all."""

from __future__ import annotations

import requests


def test_created_and_deleted_groups_answer_without_text_html(server_url: str, namespace: str) -> None:
    created = requests.post(f"{server_url}/v1/groups", params={"namespace": namespace}, json={
        "groupName": "orders",
        "groupProperties": {"serializationFormat": {"serializationFormat": "Avro"},
                            "compatibility": {"policy": "Backward"}, "allowMultipleTypes": False}})
    assert created.status_code == 201, created.text
    assert created.headers["Content-Type"] == "application/json"
    assert created.content == b""

    deleted = requests.delete(f"{server_url}/v1/groups/orders", params={"namespace": namespace})
    assert deleted.status_code == 204
    assert "Content-Type" not in deleted.headers
    assert deleted.content == b""
