"""MEM.PRUNE, MEM.ADD … DEDUP and MEM.COMPACT (docs/PROTOCOL.md, "Maintenance")."""

from __future__ import annotations

import pytest

import memrl


def test_add_dedup_returns_the_near_copy(client, coll):
    client.create(coll, 2)  # COSINE
    first = client.add(coll, [1, 0], q=0.2)
    assert client.add(coll, [1, 0.001], q=0.6, dedup=0.99, merge="AVG") == first
    assert abs(client.get(coll, first).q - 0.4) < 1e-12
    assert client.add(coll, [0, 1], dedup=0.99) != first  # not similar: added
    assert client.count(coll) == 2
    with pytest.raises(ValueError):
        client.add(coll, [1, 0], merge="MAX")


def test_prune(client, coll):
    client.create(coll, 2)
    ids = client.madd(coll, [memrl.NewMemory([1, i], attrs={"user": "u%d" % (i % 2)}) for i in range(6)])
    client.reward(coll, 1.0, [ids[0], ids[1]])
    assert client.prune(coll, q_below=0.01, filter={"user": "u0"}, dry_run=True) == 2
    assert client.count(coll) == 6  # a dry run deletes nothing
    assert client.prune(coll, max_count=2) == 4
    assert client.count(coll) == 2
    with pytest.raises(memrl.MemrlError):
        client.prune(coll, filter={"user": "u0"})  # no criterion: refused
    assert client.count(coll) == 2


def test_compact(client, coll):
    client.create(coll, 2, metric="L2")
    ids = client.madd(coll, [memrl.NewMemory([1, i], payload=b"x" * 50) for i in range(10)])
    client.delete(coll, *ids[::2])
    st = client.compact(coll, wait=True)
    assert st["rows_before"] == 10 and st["rows_after"] == 5
    assert st["bytes_after"] < st["bytes_before"] and st["seconds"] >= 0
    assert client.count(coll) == 5
    assert client.mget(coll, ids[:2])[0] is None
    assert client.get(coll, ids[1]).payload == b"x" * 50
    info = client.info(coll)
    assert info.extra["deleted_rows"] == 0 and info.rows == 5
    assert client.compact(coll) is None  # started in the background
    with pytest.raises(memrl.MemrlError):
        client.compact(coll + "-missing")
