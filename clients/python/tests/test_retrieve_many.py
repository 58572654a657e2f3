"""MEM.MRETRIEVE: Client.retrieve_many, its pipeline variant and MemrlVecDB.search_many
(docs/PROTOCOL.md, "MEM.MRETRIEVE")."""

from __future__ import annotations

import numpy as np
import pytest

import memrl
from conftest import Server
from memrl.client import MAX_RETRIEVE_MANY
from memrl.vecdb import MemrlVecDB


def _fill(client, coll, n=80, payload=16):
    rng = np.random.default_rng(7)
    client.create(coll, 6, metric="L2")
    vecs = rng.normal(size=(n, 6)).astype(np.float32)
    client.madd(coll, [
        memrl.NewMemory(v, payload=bytes([i % 251]) * payload, attrs={"g": i % 3}, key=f"k{i}" if i % 2 else None)
        for i, v in enumerate(vecs)
    ])
    for i in range(0, n, 7):
        client.reward(coll, float(rng.random()), [i + 1])
    return vecs + rng.normal(scale=0.05, size=vecs.shape).astype(np.float32)


@pytest.mark.parametrize("opts", [
    {},
    {"k1": 20, "k2": 7, "lam": 0.3},
    {"k2": 3, "with_payload": True, "with_attrs": True, "with_keys": True},
    {"filter": {"g": 1}, "k2": 4, "with_keys": True},
])
def test_retrieve_many_equals_retrieve(client, coll, opts):
    queries = _fill(client, coll)[:33]
    got = client.retrieve_many(coll, queries, **opts)  # a 2-D numpy array
    as_lists = client.retrieve_many(coll, [list(map(float, q)) for q in queries], **opts)
    want = [client.retrieve(coll, q, **opts) for q in queries]
    assert got == want and as_lists == want
    assert all(len(w) > 0 for w in want)
    with client.pipeline() as p:
        p.retrieve_many(coll, queries[:4], **opts).ping()
        many, pong = p.execute()
    assert many == want[:4] and pong is True


def test_retrieve_many_errors(client, coll):
    queries = _fill(client, coll)[:5]
    bad = [queries[0], queries[1], [1.0, 2.0]]
    with pytest.raises(memrl.InvalidVector) as e:
        client.retrieve_many(coll, bad)
    assert e.value.position == 3 and "query 3" in str(e.value)
    nan = queries.copy()
    nan[1, 2] = np.nan
    with pytest.raises(memrl.InvalidVector) as e:
        client.retrieve_many(coll, nan)
    assert e.value.position == 2
    with pytest.raises(ValueError):
        client.retrieve_many(coll, [])
    with pytest.raises(ValueError):
        client.retrieve_many(coll, np.zeros((MAX_RETRIEVE_MANY + 1, 6), dtype=np.float32))
    with pytest.raises(ValueError):
        client.retrieve_many(coll, np.zeros(6, dtype=np.float32))  # one vector, not a batch
    with pytest.raises(memrl.OutOfRange):
        client.retrieve_many(coll, queries, k2=0)
    with pytest.raises(memrl.NoSuchCollection):
        client.retrieve_many(coll + "_none", queries)


@pytest.fixture(scope="module")
def small_budget(binary, tmp_path_factory):
    s = Server(binary, str(tmp_path_factory.mktemp("mretrieve")), extra=["--maxmemory", "8mb"])
    s.start()
    yield s
    s.stop()


def test_retrieve_many_past_maxmemory(small_budget):
    client = memrl.Client(port=small_budget.port)
    queries = _fill(client, "big", n=40, payload=16 << 10)
    many = np.repeat(queries, 5, axis=0)  # 200 queries × 5 payloads of 16 KiB: 16 MiB
    with pytest.raises(memrl.OutOfMemory):
        client.retrieve_many("big", many, with_payload=True)
    assert len(client.retrieve_many("big", many[:10], with_payload=True)) == 10
    client.close()


def test_vecdb_search_many(client, coll):
    db = MemrlVecDB(coll, 3, "cosine", client=client)
    db.create_collection()
    db.add([{"vector": [1, 0, 0], "payload": {"m": "a"}}, {"vector": [0.9, 0.1, 0], "payload": {"m": "b"}},
            {"vector": [0, 1, 0], "payload": {"m": "c"}}])
    qs = np.array([[1, 0, 0], [0, 1, 0], [0.5, 0.5, 0]], dtype=np.float32)
    got = db.search_many(qs, 2)
    want = [db.search(q, 2) for q in qs]
    assert [[r.id for r in rs] for rs in got] == [[r.id for r in rs] for rs in want]
    assert [[r.score for r in rs] for rs in got] == [[r.score for r in rs] for rs in want]
    assert got[1][0].payload == {"m": "c"}
    assert db.search_many(qs, 1, filter={"m": "a"})[1][0].payload == {"m": "a"}
