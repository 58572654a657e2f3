"""FILTER on MEM.RETRIEVE, MEM.COUNT, MEM.SCAN and MEM.DEL; indexed fields; RAWQ."""

from __future__ import annotations

import pytest

import memrl


@pytest.fixture
def filled(client, coll):
    client.create(coll, 2, indexed=["user"])
    client.madd(coll, [
        memrl.NewMemory([1, 0], attrs={"user": "u7", "step": 1, "tags": ["plan"]}, key="a"),
        memrl.NewMemory([0.9, 0.1], attrs={"user": "u8", "step": 2}, key="b"),
        memrl.NewMemory([0, 1], attrs={"user": "u7", "step": 3, "tags": ["exec"]}, key="c"),
        memrl.NewMemory([0.5, 0.5], key="d"),  # no attributes: matches no field test
    ])
    return coll


def test_retrieve_filter_dict_and_expr(client, filled):
    hits = client.retrieve(filled, [1, 0], k1=4, k2=4, lam=0, filter={"user": "u7"}, with_keys=True)
    assert [h.key for h in hits] == ["a", "c"]
    hits = client.retrieve(filled, [1, 0], k1=4, k2=4, lam=0, filter='.step >= 2 or .user == "u7"', with_keys=True)
    assert [h.key for h in hits] == ["a", "b", "c"]
    # A field missing from a memory fails the whole expression for it, even beside an or.
    hits = client.retrieve(filled, [1, 0], k1=4, k2=4, lam=0, filter='.step >= 2 or "plan" in .tags', with_keys=True)
    assert [h.key for h in hits] == ["a", "c"]


def test_count_scan_delete_where(client, filled):
    assert client.count(filled) == 4
    assert client.count(filled, {"user": "u7"}) == 2
    assert client.count(filled, {"step": {"gt": 1, "lt": 3}}) == 1
    assert [m.key for m in client.scan_iter(filled, filter={"tags": {"contains": "exec"}})] == ["c"]
    page = client.scan(filled, 0, count=1000, filter={"user": "nobody"})
    assert page.memories == [] and page.cursor == 0
    assert client.delete_where(filled, {"user": ["u8", "u9"]}) == 1
    assert client.count(filled) == 3 and client.mget(filled, ["b"]) == [None]
    with pytest.raises(ValueError):
        client.delete_where(filled, None)


def test_filter_errors(client, filled):
    with pytest.raises(memrl.FilterError) as e:
        client.count(filled, ".step > ")
    assert "column" in str(e.value)
    with pytest.raises(memrl.FilterError):
        client.retrieve(filled, [1, 0], filter='.step > "a"')  # strings are not ordered
    assert client.count(filled) == 4


def test_indexes(client, filled):
    assert client.index_list(filled) == ["user"]
    client.index_add(filled, "step")
    assert client.index_list(filled) == ["step", "user"]
    assert client.count(filled, {"step": {"gte": 2}}) == 2
    client.index_drop(filled, "user")
    assert client.index_list(filled) == ["step"]
    assert client.count(filled, {"user": "u7"}) == 2  # unindexed still filters


def test_raw_q(client, coll):
    client.create(coll, 2)
    a = client.add(coll, [1, 0])
    b = client.add(coll, [0.8, 0.6], q=0.2)
    c = client.add(coll, [0.6, 0.8], q=0.1)
    # z(Q) over {0, 0.2, 0.1} makes b's Q count fully; raw Q (≤ 0.2) barely moves the similarity order.
    assert client.retrieve(coll, [1, 0], k1=3, k2=1, lam=0.5)[0].id == b
    assert [h.id for h in client.retrieve(coll, [1, 0], k1=3, k2=3, lam=0.5, raw_q=True)] == [a, b, c]
