"""MEM.MADD, MEM.MGET, MEM.GET … WITHVECTOR, MEM.SCAN and MEM.COUNT (docs/PROTOCOL.md, "Batches and scans")."""

from __future__ import annotations

import numpy as np
import pytest

import memrl


def test_madd_ids_in_order_and_all_or_nothing(client, coll):
    client.create(coll, 2)
    ids = client.madd(coll, [
        memrl.NewMemory([1, 0], payload=b"a"),
        {"vector": np.array([0, 1]), "id": 42, "q": 0.5},
        memrl.NewMemory([1, 1]),
    ])
    assert ids[1] == 42 and ids[2] == 43 and len(set(ids)) == 3
    assert client.get(coll, 42).q == 0.5
    with pytest.raises(memrl.InvalidVector) as e:
        client.madd(coll, [memrl.NewMemory([1, 0]), memrl.NewMemory([1, 0, 0])])
    assert "memory 2" in str(e.value) and e.value.position == 2
    with pytest.raises(memrl.MemoryExists):
        client.madd(coll, [memrl.NewMemory([1, 0], id=7), memrl.NewMemory([1, 0], id=7)])
    assert client.count(coll) == 3  # the failed batches added nothing
    with pytest.raises(ValueError):
        client.madd(coll, [])


def test_get_with_vector_and_mget(client, coll):
    client.create(coll, 3, metric="L2")
    v = np.array([0.1, -2.0, 3.5], dtype=np.float32)
    i = client.add(coll, v, payload=b"p")
    m = client.get(coll, i, with_vector=True)
    assert m.vector.dtype == np.float32 and np.array_equal(m.vector, v)  # L2: bit for bit
    assert client.get(coll, i).vector is None
    got = client.mget(coll, [i, 999, i], with_vector=True)
    assert got[1] is None and got[0] == got[2] and np.array_equal(got[0].vector, v)
    assert got[0].payload == b"p"


def test_vectors_as_lists(server, coll):
    c = memrl.Client(port=server.port)
    c.vectors_as_numpy = False
    c.create(coll, 2, metric="IP")
    i = c.add(coll, [0.5, 0.25])
    assert c.get(coll, i, with_vector=True).vector == [0.5, 0.25]
    c.drop(coll)


def test_scan_every_memory_once(client, coll):
    client.create(coll, 2)
    ids = client.madd(coll, [memrl.NewMemory([1, i], payload=bytes([i])) for i in range(25)])
    page = client.scan(coll, 0, count=10)
    assert isinstance(page, memrl.ScanPage) and page.cursor != 0 and len(page.memories) <= 10
    assert page.memories[0].payload is None and page.memories[0].vector is None
    seen = [m.id for m in client.scan_iter(coll, count=7, with_payload=True)]
    assert seen == sorted(ids)
    full = list(client.scan_iter(coll, count=1000, with_payload=True, with_vector=True))
    assert [m.payload for m in full] == [bytes([i]) for i in range(25)]
    assert all(m.vector is not None and m.vector.shape == (2,) for m in full)
    assert client.count(coll) == 25


def test_madd_attrs_keys_ttl_and_mget_by_key(client, coll):
    client.create(coll, 2)
    ids = client.madd(coll, [
        memrl.NewMemory([1, 0], attrs={"user": "u7"}, key="a", ttl=100),
        memrl.NewMemory([0, 1], key=b"\xffb", payload="p"),
    ])
    got = client.mget(coll, ["a", b"\xffb", "missing", ids[0]])
    assert got[0].attrs == {"user": "u7"} and got[0].key == "a" and got[0].expires is not None
    assert got[1].key == b"\xffb" and got[1].payload == b"p"  # a non-UTF-8 key stays bytes
    assert got[2] is None and got[3] == got[0]
    with pytest.raises(memrl.MemoryExists) as e:  # a key named twice: nothing added
        client.madd(coll, [memrl.NewMemory([1, 1], key="c"), memrl.NewMemory([1, 1], key="c")])
    assert e.value.position == 2
    with pytest.raises(memrl.MemoryExists):  # a live key
        client.madd(coll, [memrl.NewMemory([1, 1], key="d"), memrl.NewMemory([1, 1], key="a")])
    assert client.count(coll) == 2
