"""The Python README's example, run as a user would after the top-level README's session,
and PROTOCOL.md's warning about ``decode_responses=True`` (docs that must stay true)."""

from __future__ import annotations

import os
import re

import pytest
import redis

import memrl

from conftest import REPO

PY_README = os.path.join(REPO, "clients", "python", "README.md")


def _python_block(text: str, marker: str) -> str:
    """The first ```python block of text that contains marker."""
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if marker in block:
            return block
    raise AssertionError(f"no python block with {marker!r}")


def test_python_readme_example_runs(server, client):
    # The top-level README's redis-cli session made a 4-d "plans": the Python example
    # must not collide with it (it re-created "plans" once).
    for name in ("plans", "trips"):
        if name in client.list():
            client.drop(name)
    client.create("plans", dim=4, alpha=0.3)
    code = _python_block(open(PY_README, encoding="utf-8").read(), "memrl.Client(")
    connect = 'memrl.Client("127.0.0.1", 6390)'
    assert connect in code
    ns: dict = {}
    try:
        exec(compile(code.replace(connect, f'memrl.Client("127.0.0.1", {server.port})'), PY_README, "exec"), ns)
        assert ns["hits"] and ns["hits"][0].key == "task-9"
        assert ns["deleted"] == 1 and isinstance(ns["new_id"], int)
        assert client.get("trips", "task-9").id == ns["new_id"]
        assert client.info("plans").count == 0  # untouched
    finally:
        if "m" in ns:
            ns["m"].close()
        for name in ("plans", "trips"):
            if name in client.list():
                client.drop(name)


def test_decode_responses_warning_holds(server, client, coll):
    protocol = open(os.path.join(REPO, "docs", "PROTOCOL.md"), encoding="utf-8").read()
    assert "decode_responses=True" in protocol
    client.create(coll, dim=2)
    i = client.add(coll, [1.0, 0.0], payload=b"\xff\xfe not text")
    r = redis.Redis(port=server.port, decode_responses=True)
    try:
        with pytest.raises(UnicodeDecodeError):
            r.execute_command("MEM.GET", coll, i)
        with pytest.raises(UnicodeDecodeError):
            r.execute_command("MEM.RETRIEVE", coll, "VALUES", 2, 1, 0, "WITHPAYLOAD")
    finally:
        r.close()
    assert client.get(coll, i).payload == b"\xff\xfe not text"  # the client's bytes are intact
