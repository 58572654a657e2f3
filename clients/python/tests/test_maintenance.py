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


def test_history(client, coll):
    client.create(coll, 2, alpha=0.5)
    first = client.add(coll, [1, 0], key="k")
    other = client.add(coll, [0, 1])
    qs = [client.reward(coll, r, [first])[0] for r in (1.0, -1.0, 0.25)]
    h = client.history(coll, first)
    assert [e.reward for e in h] == [0.25, -1.0, 1.0]
    assert [e.q for e in h] == qs[::-1]
    assert [e.visits for e in h] == [3, 2, 1]
    assert h[0].time >= h[-1].time > 0
    assert h[0].q == client.get(coll, first).q
    assert client.history(coll, "k", count=1) == h[:1]
    assert client.history(coll, other) == []
    with pytest.raises(memrl.NoSuchMemory):
        client.history(coll, 999)
    with pytest.raises(memrl.MemrlError):
        client.history(coll, first, count=0)
    client.delete(coll, first)
    with pytest.raises(memrl.NoSuchMemory):
        client.history(coll, first)


def test_prune_policy(client, coll):
    client.create(coll, 2)
    assert client.prune_policy(coll) is None
    client.set_prune_policy(coll, q_below=0.5, min_visits=2, older=3600, max_count=100, filter={"user": "u0"}, every=30)
    p = client.prune_policy(coll)
    assert p == {"q_below": 0.5, "min_visits": 2, "older": 3600, "max_count": 100, "filter": p["filter"], "every": 30}
    assert "user" in p["filter"]
    info = client.info(coll)
    assert isinstance(info.extra["prune_policy"], str)  # text, decoded (it came back as bytes)
    assert info.extra["prune_policy"].startswith("QBELOW 0.5 MINVISITS 2 OLDER 3600 MAXCOUNT 100 FILTER ")
    assert info.extra["last_prune"] == [0, 0]  # never ran yet
    client.set_prune_policy(coll, idle=60)
    assert client.prune_policy(coll) == {"idle": 60, "every": 60}  # EVERY defaults to 60 s
    for bad in ({}, {"max_count": -1}, {"max_count": 1, "every": 0}, {"min_visits": 1, "older": 5}):
        with pytest.raises(memrl.MemrlError):
            client.set_prune_policy(coll, **bad)
    assert client.prune_policy(coll) == {"idle": 60, "every": 60}  # refused: unchanged
    client.prune_policy_off(coll)
    assert client.prune_policy(coll) is None
    assert client.info(coll).extra["prune_policy"] == ""  # none: an empty str
    client.prune_policy_off(coll)  # none: still OK


def test_snapshot_and_rollback(client, coll):
    client.create(coll, 2)
    ids = client.madd(coll, [memrl.NewMemory([1, i], attrs={"n": i}) for i in range(4)])
    client.snapshot(coll, "base")
    with pytest.raises(memrl.SnapshotExists):
        client.snapshot(coll, "base")
    with pytest.raises(memrl.InvalidSnapshotName):
        client.snapshot(coll, "")
    (s,) = client.snapshots(coll)
    assert s.name == "base" and s.memories == 4 and s.created_ms > 1_600_000_000_000
    client.reward(coll, 1.0, [ids[0]])
    client.delete(coll, ids[1])
    new = client.add(coll, [5, 5])
    assert client.rollback(coll, "base") == 3  # restored, revived, removed
    assert client.get(coll, ids[0]).q == 0 and client.get(coll, ids[0]).visits == 0
    assert client.get(coll, ids[1]).attrs == {"n": 1}
    assert client.count(coll) == 4
    with pytest.raises(memrl.NoSuchMemory):
        client.get(coll, new)
    with pytest.raises(memrl.NoSuchSnapshot):
        client.rollback(coll, "nope")
    assert client.delete_snapshot(coll, "base") is True
    assert client.delete_snapshot(coll, "base") is False
    assert client.snapshots(coll) == []


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
