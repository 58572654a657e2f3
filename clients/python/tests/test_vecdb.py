"""MemrlVecDB: MemOS's vector-db method set over string ids and payload dicts."""

from __future__ import annotations

import uuid

import pytest

import memrl
from memrl.vecdb import MemrlVecDB, VecDBItem

U = [str(uuid.UUID(int=i, version=4)) for i in range(1, 6)]


@pytest.fixture
def db(client, coll):
    d = MemrlVecDB(coll, 3, "cosine", client=client)
    d.create_collection()
    return d


def _items():
    return [
        VecDBItem(id=U[0], vector=[1, 0, 0], payload={"user_id": "u7", "memory": "book first", "step": 1}),
        {"id": U[1], "vector": [0.9, 0.1, 0], "payload": {"user_id": "u8", "memory": "pay later", "step": 2}},
        VecDBItem(id=U[2], vector=[0, 1, 0], payload={"user_id": "u7", "memory": "ask", "step": 3, "tags": ["plan"]}),
    ]


def test_collections(client, coll):
    d = MemrlVecDB(coll, 3, "euclidean", client=client)
    assert not d.collection_exists(coll)
    d.create_collection()
    d.create_collection()  # idempotent
    assert d.collection_exists(coll) and coll in d.list_collections()
    assert client.info(coll).metric == "L2"
    d.delete_collection(coll)
    assert not d.collection_exists(coll)
    with pytest.raises(ValueError):
        MemrlVecDB(coll, 3, "manhattan", client=client)


def test_from_config(client, coll, server):
    d = MemrlVecDB.from_config({"collection_name": coll, "vector_dimension": 3, "distance_metric": "dot", "port": server.port})
    d.create_collection()
    assert client.info(coll).metric == "IP" and client.info(coll).dim == 3


def test_add_get_by_id_and_ids(db):
    db.add(_items())
    it = db.get_by_id(U[0])
    assert it.id == U[0] and it.payload == {"user_id": "u7", "memory": "book first", "step": 1}
    assert it.vector == pytest.approx([1, 0, 0]) and it.q == 0.0 and it.visits == 0
    assert db.get_by_id(U[4]) is None
    got = db.get_by_ids([U[2], U[4], U[0]])
    assert [g.id for g in got] == [U[2], U[0]]
    assert db.get_by_ids([]) == []
    assert db.count() == 3


def test_add_without_id_gets_uuid(db):
    db.add([{"vector": [1, 1, 0], "payload": {"a": 1}}])
    (it,) = db.get_all()
    assert uuid.UUID(it.id).version == 4 and it.payload == {"a": 1}


def test_add_checks_every_item_before_writing(db):
    db.add(_items()[:1])
    for bad in ([1, 0], [1, float("nan"), 0], None):  # wrong dimension, NaN, no vector
        with pytest.raises(ValueError):
            db.add([VecDBItem(id=U[3], vector=[1, 0, 0]), VecDBItem(id=U[0], vector=bad)])
    assert db.count() == 1 and db.get_by_id(U[3]) is None
    assert db.get_by_id(U[0]).vector == pytest.approx([1, 0, 0])


def test_search(db):
    db.add(_items())
    res = db.search([1, 0, 0], 2)
    assert [r.id for r in res] == [U[0], U[1]]
    assert res[0].score == pytest.approx(1.0) and res[0].payload["memory"] == "book first"
    assert res[0].vector == pytest.approx([1, 0, 0]) and res[1].vector == pytest.approx([0.9 / 0.82**0.5, 0.1 / 0.82**0.5, 0], rel=1e-5)


def test_update_payload_merges_and_vector_replaces_keeping_learning_state(db):
    db.add(_items())
    db.reward([U[0]], 1.0)
    q = db.get_by_id(U[0]).q
    db.update(U[0], {"payload": {"memory": "book early", "extra": True}})
    it = db.get_by_id(U[0])
    assert it.payload == {"user_id": "u7", "memory": "book early", "step": 1, "extra": True}
    assert it.q == q and it.visits == 1  # in place
    # With a vector, as Qdrant's backend (an upsert of the point): vector and payload replaced.
    db.update(U[0], VecDBItem(id=U[0], vector=[0, 0, 1], payload={"step": 9}))
    it = db.get_by_id(U[0])
    assert it.vector == pytest.approx([0, 0, 1]) and it.q == q and it.visits == 1
    assert it.payload == {"step": 9}
    assert db.count() == 3
    with pytest.raises(memrl.NoSuchMemory):
        db.update(U[4], {"payload": {"a": 1}})


def test_upsert(db):
    db.add(_items()[:1])
    db.reward([U[0]], 1.0)
    q = db.get_by_id(U[0]).q
    db.upsert([
        {"id": U[0], "payload": {"memory": "replaced"}},  # existing, no vector: keeps its vector
        {"id": U[3], "vector": [0, 0, 1], "payload": {"memory": "new"}},
    ])
    a, b = db.get_by_id(U[0]), db.get_by_id(U[3])
    assert a.payload == {"memory": "replaced"} and a.vector == pytest.approx([1, 0, 0]) and a.q == q
    assert b.payload == {"memory": "new"} and b.q == 0.0
    assert db.count() == 2
    db.upsert([{"id": U[4], "vector": [1, 1, 0], "payload": {"v": 1}}, {"id": U[4], "vector": [1, 1, 0], "payload": {"v": 2}}])
    assert db.get_by_id(U[4]).payload == {"v": 2} and db.count() == 3


def test_delete(db):
    db.add(_items())
    db.delete([U[0], U[4]])  # unknown ids ignored
    db.delete([])
    assert db.count() == 2 and db.get_by_id(U[0]) is None


def test_retrieve_and_reward(db):
    db.add(_items())
    qs = db.reward([U[1], U[2]], 1.0)
    assert set(qs) == {U[1], U[2]} and all(q > 0 for q in qs.values())
    # Similarity alone ranks U[0] first; with λ=1 the rewarded U[1] wins among the 2 nearest.
    assert db.retrieve([1, 0, 0], k1=2, k2=1, lam=0)[0].id == U[0]
    top = db.retrieve([1, 0, 0], k1=2, k2=1, lam=1)[0]
    assert top.id == U[1] and top.q == qs[U[1]] and top.sim == pytest.approx(0.9 / (0.81 + 0.01) ** 0.5, rel=1e-5)
    assert len(db.retrieve([1, 0, 0], k1=3, k2=3, delta=0.5)) == 2
    with pytest.raises(memrl.NoSuchMemory):
        db.reward([U[0], U[4]], 1.0)
    assert db.get_by_id(U[0]).q == 0.0


def test_get_all_order_and_foreign_memories(db, client):
    db.add(_items())
    i = client.add(db.collection_name, [1, 1, 1])  # added without a key
    ids = [it.id for it in db.get_all()]
    assert ids == [U[0], U[1], U[2], f"#{i}"]
