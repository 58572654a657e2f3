"""The typed client against a real server: one test per command group."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import redis

import memrl


def test_create_info_list_drop(client, coll):
    client.create(coll, 4, metric="l2", alpha=0.25, gamma=0.5, qinit=0.125, index="flat")
    info = client.info(coll)
    assert info == memrl.CollectionInfo(
        name=coll, dim=4, metric="L2", count=0, alpha=0.25, gamma=0.5, qinit=0.125,
        rows=0, next_id=1, index="flat", extra=info.extra,
    )
    assert coll in client.list()
    with pytest.raises(memrl.CollectionExists):
        client.create(coll, 4)
    client.drop(coll)
    assert coll not in client.list()
    with pytest.raises(memrl.NoSuchCollection):
        client.info(coll)


def test_add_get_roundtrip_binary_payload_attrs_key(client, coll):
    client.create(coll, 3)
    payload = bytes(range(256)) + b"\r\n\x00"  # not UTF-8: decode_responses would break it
    i = client.add(coll, np.array([1, 2, 3], dtype=np.float64), payload=payload,
                   attrs={"user": "u7", "step": 3, "tags": ["plan", "ok"], "é": "ü"}, key="task-9", q=0.5)
    assert isinstance(i, int) and i >= 1
    m = client.get(coll, i)
    assert m.id == i and m.key == "task-9" and m.payload == payload
    assert m.attrs == {"user": "u7", "step": 3, "tags": ["plan", "ok"], "é": "ü"}
    assert m.q == 0.5 and isinstance(m.q, float) and m.visits == 0 and m.expires is None
    assert m.created > 0 and m.updated >= m.created
    assert client.get(coll, "task-9") == m  # by key
    # A list vector and a str payload; no attrs, no key.
    j = client.add(coll, [0.0, 1.0, 0.0], payload="text ✓", id=100)
    n = client.get(coll, j)
    assert j == 100 and n.payload == "text ✓".encode() and n.attrs is None and n.key is None


def test_add_errors_change_nothing(client, coll):
    client.create(coll, 2)
    client.add(coll, [1, 0], key="k", id=5)
    with pytest.raises(memrl.MemoryExists):
        client.add(coll, [1, 0], key="k")
    with pytest.raises(memrl.MemoryExists):
        client.add(coll, [1, 0], id=5)
    with pytest.raises(memrl.InvalidVector):
        client.add(coll, [1, 0, 0])
    with pytest.raises(memrl.InvalidVector):
        client.add(coll, [0, 0])  # all-zero in a COSINE collection
    with pytest.raises(memrl.InvalidKey):
        client.add(coll, [1, 0], key="x" * 513)
    with pytest.raises(ValueError):  # NaN refused before sending (JSON has none)
        client.add(coll, [1, 0], attrs={"x": math.nan})
    with pytest.raises(ValueError):
        client.add(coll, [1, 0], q=math.inf)
    assert client.info(coll).count == 1


def test_retrieve_hits_parsed_and_options(client, coll):
    client.create(coll, 2)
    a = client.add(coll, [1, 0], payload=b"a", attrs={"n": 1}, key="a")
    b = client.add(coll, [0.9, 0.1], payload=b"b", key="b", q=5)
    client.add(coll, [0, 1])
    hits = client.retrieve(coll, [1, 0], k1=2, k2=2, lam=0)
    assert [h.id for h in hits] == [a, b]
    assert hits[0].sim == pytest.approx(1.0) and isinstance(hits[0].score, float)
    assert hits[0].payload is None and hits[0].attrs is None and hits[0].key is None
    # With λ=1 the high-Q memory comes first.
    hits = client.retrieve(coll, np.array([1, 0], dtype=np.float32), k1=2, k2=1, lam=1,
                           with_payload=True, with_attrs=True, with_keys=True)
    assert len(hits) == 1 and hits[0].id == b and hits[0].q == 5.0
    assert (hits[0].payload, hits[0].attrs, hits[0].key) == (b"b", None, "b")
    full = client.retrieve(coll, [1, 0], k1=3, k2=3, lam=0, with_attrs=True, with_keys=True)
    assert full[0].attrs == {"n": 1} and full[0].key == "a"
    # DELTA drops the orthogonal one.
    assert len(client.retrieve(coll, [1, 0], k1=3, k2=3, delta=0.5)) == 2
    with pytest.raises(memrl.OutOfRange):
        client.retrieve(coll, [1, 0], k1=0)
    # STOP is the IVF-PQ early-stop factor in (0, 1]; exact search accepts and ignores it.
    assert [h.id for h in client.retrieve(coll, [1, 0], k1=2, k2=2, lam=0, stop=0.4)] == [a, b]
    for bad in (0, 1.5):
        with pytest.raises(memrl.OutOfRange):
            client.retrieve(coll, [1, 0], stop=bad)


def test_reward_mixed_refs_and_nextq(client, coll):
    client.create(coll, 2, alpha=0.5, gamma=0.5)
    i = client.add(coll, [1, 0])
    client.add(coll, [0, 1], key="k")
    assert client.reward(coll, 1.0, [i, "k"]) == [0.5, 0.5]
    assert client.reward(coll, 1.0, ["k"], next_q=1.0) == [pytest.approx(0.5 + 0.5 * (1.5 - 0.5))]
    m = client.get(coll, "k")
    assert m.visits == 2 and m.last_reward == 1.0
    with pytest.raises(memrl.NoSuchMemory):
        client.reward(coll, 1.0, [i, "missing"])
    assert client.get(coll, i).q == 0.5  # the failed reward changed nothing
    with pytest.raises(ValueError):
        client.reward(coll, 1.0, [])


def test_delete_by_id_and_key(client, coll):
    client.create(coll, 2)
    i = client.add(coll, [1, 0])
    client.add(coll, [0, 1], key="k")
    assert client.delete(coll, i, "k", "nope", 999) == 2
    assert client.info(coll).count == 0
    with pytest.raises(memrl.NoSuchMemory):
        client.get(coll, "k")


def test_attrs_payload_expiry(client, coll):
    client.create(coll, 2)
    client.add(coll, [1, 0], key="k", ttl=100)
    assert client.get_attrs(coll, "k") is None
    client.set_attrs(coll, "k", {"a": [1, 2], "s": 'quote " and \\'})
    assert client.get_attrs(coll, "k") == {"a": [1, 2], "s": 'quote " and \\'}
    client.set_attrs(coll, "k", None)
    assert client.get_attrs(coll, "k") is None
    client.set_payload(coll, "k", b"\x00\xff")
    assert client.get(coll, "k").payload == b"\x00\xff"
    assert 99 <= client.ttl(coll, "k") <= 100
    assert client.get(coll, "k").expires > time.time() * 1000
    assert client.persist(coll, "k") is True
    assert client.persist(coll, "k") is False
    assert client.ttl(coll, "k") == -1
    assert client.expire(coll, "k", 0) is True  # ≤ 0 deletes now
    with pytest.raises(memrl.NoSuchMemory):
        client.ttl(coll, "k")


def test_invalid_attributes_from_server(client, coll):
    client.create(coll, 2)
    deep: dict = {}
    cur = deep
    for _ in range(20):
        cur["x"] = {}
        cur = cur["x"]
    with pytest.raises(memrl.InvalidAttributes) as e:
        client.add(coll, [1, 0], attrs=deep)
    assert "deeper" in str(e.value)
    assert client.info(coll).count == 0


def test_pipeline_transaction(client, coll):
    client.create(coll, 2)
    client.add(coll, [1, 0], key="k", q=0.75)
    with client.pipeline() as p:
        p.delete(coll, "k").add(coll, [0, 1], key="k").get(coll, "k")
        assert len(p) == 3
        deleted, new_id, m = p.execute()
    assert deleted == 1 and m.id == new_id and m.q == 0.0
    # An error at EXEC is that command's result; the others ran (no rollback).
    with client.pipeline() as p:
        p.add(coll, [1, 1], key="k2").add(coll, [1, 1], key="k2")
        res = p.execute(raise_on_error=False)
    assert isinstance(res[0], int) and isinstance(res[1], memrl.MemoryExists)
    with client.pipeline() as p:
        p.get(coll, "missing")
        with pytest.raises(memrl.NoSuchMemory):
            p.execute()


def test_pipeline_without_transaction(client, coll):
    client.create(coll, 2)
    p = client.pipeline(transaction=False)
    for i in range(10):
        p.add(coll, [1, i])
    ids = p.execute()
    assert len(set(ids)) == 10
    assert client.info(coll).count == 10


def test_transaction_aborted_whole(client, coll):
    client.create(coll, 2)
    p = client.pipeline()
    p.add(coll, [1, 0])
    p._call(["MEM.NOSUCHCOMMAND"], lambda r: r)  # refused while queuing: EXEC runs nothing
    with pytest.raises(memrl.TransactionError) as e:
        p.execute()
    assert isinstance(e.value.command_error, memrl.UnknownCommand)
    assert client.info(coll).count == 0


def test_errors_are_redis_py_errors_too(client, coll):
    with pytest.raises(redis.exceptions.ResponseError):
        client.info(coll)
    with pytest.raises(memrl.MemrlError) as e:
        client.info(coll)
    assert str(e.value).startswith("ERR no such collection")
    assert e.value.kind == "ERR"


def test_unknown_command_and_watch(client):
    with pytest.raises(memrl.UnknownCommand):
        client._call(["MEM.NOPE"], lambda r: r)
    with pytest.raises(memrl.WatchNotSupported):
        client._call(["WATCH", "x"], lambda r: r)


def test_decode_responses_refused(server):
    with pytest.raises(ValueError):
        memrl.Client(port=server.port, decode_responses=True)
    with pytest.raises(ValueError):
        memrl.Client(redis_client=redis.Redis(port=server.port, decode_responses=True))


def test_connection_failed():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        with pytest.raises(memrl.ConnectionFailed):
            memrl.Client(port=port).list()


def test_checkpoint_and_verify(client, coll):
    client.create(coll, 2)
    client.add(coll, [1, 0], payload=b"x")
    client.checkpoint()
    client.checkpoint(full=True)
    v = client.verify(coll)
    assert v["rows"] == 1 and v["payloads"] == 1 and v["damaged"] == 0 and v["checksum_file"] == "checked"


def test_from_url(server, coll):
    c = memrl.Client.from_url(f"redis://127.0.0.1:{server.port}")
    c.create(coll, 2)
    assert coll in c.list()
