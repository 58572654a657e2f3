"""MemOS conformance: MemrlVecDB against a real server, with the semantics of MemOS's Qdrant
backend (memos/vec_dbs/qdrant.py) for each point of issue 27.

Each test names the Qdrant behaviour it checks. Where memrl deliberately differs, the test
checks that the method raises (the module docstring of memrl.vecdb lists those cases).
"""

from __future__ import annotations

import inspect
import json
import types
import uuid

import numpy as np
import pytest

import memrl
from memrl.vecdb import CollectionMismatch, MemrlVecDB, VecDBItem

# MemOS's BaseVecDB method set, with the parameters its Qdrant backend takes.
MEMOS_METHODS = {
    "create_collection": [],
    "list_collections": [],
    "delete_collection": ["name"],
    "collection_exists": ["name"],
    "search": ["query_vector", "top_k", "filter"],
    "get_by_id": ["id"],
    "get_by_ids": ["ids"],
    "get_by_filter": ["filter", "scroll_limit"],
    "get_all": ["scroll_limit"],
    "count": ["filter"],
    "add": ["data"],
    "update": ["id", "data"],
    "ensure_payload_indexes": ["fields"],
    "upsert": ["data"],
    "delete": ["ids"],
}


def U(i: int) -> str:
    return str(uuid.UUID(int=i, version=4))


@pytest.fixture
def db(client, coll):
    d = MemrlVecDB(coll, 4, "cosine", client=client)
    d.create_collection()
    return d


class PydanticLike:
    """A stand-in for MemOS's QdrantVecDBConfig (a pydantic model): read via model_dump()."""

    def __init__(self, **kw):
        self._kw = kw

    def model_dump(self):
        return dict(self._kw)


# --- 1. signatures and configuration -------------------------------------------------------


def test_method_set_and_signatures():
    for name, params in MEMOS_METHODS.items():
        sig = inspect.signature(getattr(MemrlVecDB, name))
        assert list(sig.parameters)[1:] == params, name
    assert inspect.signature(MemrlVecDB.get_by_filter).parameters["scroll_limit"].default == 100
    assert inspect.signature(MemrlVecDB.get_all).parameters["scroll_limit"].default == 100
    assert inspect.signature(MemrlVecDB.search).parameters["filter"].default is None


def test_from_config_object_attributes_and_dict(client, coll, server):
    # A pydantic-like config creates the collection, as QdrantVecDB.__init__ does.
    d = MemrlVecDB.from_config(PydanticLike(collection_name=coll, vector_dimension=4, distance_metric="euclidean",
                                            host="127.0.0.1", port=server.port, path=None, url=None, api_key=None))
    assert d.collection_exists(coll) and client.info(coll).metric == "L2" and client.info(coll).dim == 4
    # Plain attributes (no model_dump), and a dict; the dimension may be left to the server.
    cfg = types.SimpleNamespace(collection_name=coll, vector_dimension=None, distance_metric="euclidean",
                                host=None, port=server.port, path=None, url=None, api_key=None)
    assert MemrlVecDB.from_config(cfg).vector_dimension == 4
    d = MemrlVecDB.from_config({"collection_name": coll, "distance_metric": "euclidean", "url": f"redis://127.0.0.1:{server.port}"})
    assert d.count() == 0
    # Qdrant's embedded mode does not exist here: said, not ignored.
    with pytest.raises(ValueError, match="embedded"):
        MemrlVecDB.from_config({"collection_name": coll, "vector_dimension": 4, "path": "/tmp/qdrant"})


def test_dimension_or_metric_mismatch_raises(client, coll):
    MemrlVecDB(coll, 384, "cosine", client=client).create_collection()
    with pytest.raises(CollectionMismatch, match="384"):
        MemrlVecDB(coll, 768, "cosine", client=client).create_collection()
    with pytest.raises(CollectionMismatch):
        MemrlVecDB(coll, 384, "dot", client=client).create_collection()
    MemrlVecDB(coll, 384, "cosine", client=client).create_collection()  # the same: kept
    assert client.info(coll).dim == 384 and client.info(coll).metric == "COSINE"


# --- 2. filters with Qdrant's meaning --------------------------------------------------------


def _filled(db):
    db.add([
        {"id": U(1), "vector": [1, 0, 0, 0], "payload": {"user_id": "u1", "tags": ["travel", "food"], "meta": {"source": "web"}, "n": 1}},
        {"id": U(2), "vector": [0, 1, 0, 0], "payload": {"user_id": "u1", "tags": "travel", "meta": {"source": "api"}, "n": 2}},
        {"id": U(3), "vector": [0, 0, 1, 0], "payload": {"user_id": "u2", "tags": ["food"], "meta": {"source": "web"}, "n": 3}},
        {"id": U(4), "vector": [0, 0, 0, 1], "payload": {"user_id": "u1", "tags": [], "meta": "web", "n": 4}},
    ])


FILTERS = [
    ({"tags": "travel"}, {U(1), U(2)}),  # MatchValue on a list: any element equals
    ({"user_id": "u1", "tags": "travel"}, {U(1), U(2)}),
    ({"tags": "food", "user_id": "u1"}, {U(1)}),
    ({"meta.source": "web"}, {U(1), U(3)}),  # dotted keys into nested payloads
    ({"meta.source": "web", "tags": "food"}, {U(1), U(3)}),
    ({"tags": ["food", "nope"]}, {U(1), U(3)}),  # MatchAny
    ({"n": np.int64(3)}, {U(3)}),  # numpy scalars
    ({"n": {"gte": np.float32(2), "lt": np.int32(4)}}, {U(2), U(3)}),
    ({"n": np.array([1, 4])}, {U(1), U(4)}),
    ({}, {U(1), U(2), U(3), U(4)}),
]


@pytest.mark.parametrize("indexed", [False, True])
def test_filters_have_qdrants_meaning(db, indexed):
    _filled(db)
    if indexed:
        db.ensure_payload_indexes(["tags", "user_id", "meta.source", "n"])
        db.ensure_payload_indexes(["tags"])  # idempotent
        assert set(db.client.index_list(db.collection_name)) == {"tags", "user_id", "meta.source", "n"}
    for f, want in FILTERS:
        assert db.count(f) == len(want), f
        assert {i.id for i in db.get_by_filter(f)} == want, f
        assert {i.id for i in db.search([1, 1, 1, 1], 10, f)} == want, f


def test_numpy_in_payloads(db):
    db.add([{"id": U(1), "vector": np.array([1, 2, 3, 4], dtype=np.float32),
             "payload": {"score": np.float32(0.5), "n": np.int64(7), "ok": np.bool_(True), "emb": np.arange(3), "t": (1, 2)}}])
    it = db.get_by_id(U(1))
    assert it.payload == {"score": 0.5, "n": 7, "ok": True, "emb": [0, 1, 2], "t": [1, 2]}
    assert json.dumps(it.payload) and type(it.payload["n"]) is int
    assert db.count({"ok": np.bool_(True), "n": np.int64(7)}) == 1
    with pytest.raises(ValueError):
        db.add([{"id": U(2), "vector": [1, 0, 0, 0], "payload": {"x": np.float64("nan")}}])


# --- 3. writes keep the learning state -----------------------------------------------------


def _state(db, id):
    m = db.client.get(db.collection_name, id)
    return m.id, m.q, m.visits, m.last_reward, len(db.client.history(db.collection_name, id))


def test_add_of_existing_id_overwrites_keeping_learning_state(db):
    _filled(db)
    db.reward([U(1)], 1.0)
    db.reward([U(1)], 0.5)
    before = _state(db, U(1))
    db.add([{"id": U(1), "vector": [0, 0, 1, 1], "payload": {"user_id": "u9"}}])  # Qdrant's add is an upsert
    it = db.get_by_id(U(1))
    assert it.vector == pytest.approx([0, 0, 2**-0.5, 2**-0.5], rel=1e-6) and it.payload == {"user_id": "u9"}
    assert _state(db, U(1)) == before and before[2] == 2 and before[4] == 2
    assert db.count() == 4 and db.count({"user_id": "u9"}) == 1 and db.count({"tags": "food"}) == 1
    # The old vector is gone from search; the new one is found.
    assert db.search([0, 0, 1, 1], 1)[0].id == U(1)
    assert U(1) not in {i.id for i in db.search([1, 0, 0, 0], 1)}


def test_upsert_and_update_keep_learning_state(db):
    _filled(db)
    db.reward([U(2)], 1.0)
    before = _state(db, U(2))
    db.upsert([{"id": U(2), "payload": {"memory": "payload only"}}])  # keeps its vector
    it = db.get_by_id(U(2))
    assert it.payload == {"memory": "payload only"} and it.vector == pytest.approx([0, 1, 0, 0])
    assert _state(db, U(2)) == before
    db.update(U(2), {"vector": [1, 1, 0, 0], "payload": {"memory": "new vector"}})
    assert db.get_by_id(U(2)).payload == {"memory": "new vector"} and _state(db, U(2)) == before
    db.update(U(2), {"payload": {"extra": 1}})  # Qdrant's set_payload: merged
    assert db.get_by_id(U(2)).payload == {"memory": "new vector", "extra": 1} and _state(db, U(2)) == before
    db.upsert([VecDBItem(id=U(9), vector=[0, 0, 0, 1], payload={"new": True})])
    assert db.get_by_id(U(9)).q == 0.0 and db.count() == 5
    with pytest.raises(ValueError):
        db.upsert([{"id": U(10), "payload": {"no": "vector"}}])  # a new item needs a vector
    with pytest.raises(memrl.NoSuchMemory):
        db.update(U(10), {"payload": {"a": 1}})


def test_held_by_snapshot_raises_rather_than_losing_state(db):
    _filled(db)
    db.client.snapshot(db.collection_name, "before")
    with pytest.raises(memrl.MemrlError, match="held by a snapshot"):
        db.add([{"id": U(1), "vector": [0, 1, 1, 0], "payload": {}}])
    assert db.get_by_id(U(1)).vector == pytest.approx([1, 0, 0, 0])
    db.client.delete_snapshot(db.collection_name, "before")
    db.add([{"id": U(1), "vector": [0, 1, 1, 0], "payload": {}}])
    assert db.get_by_id(U(1)).payload == {}


def test_ids_are_strings(db):
    with pytest.raises(ValueError):
        db.add([{"id": 5, "vector": [1, 0, 0, 0]}])
    db.add([{"id": uuid.UUID(int=5, version=4), "vector": [1, 0, 0, 0]}])
    assert db.get_by_id(U(5)) is not None


# --- 4. results: vectors and scores, scroll, large payloads ----------------------------------


@pytest.mark.parametrize("metric,score", [
    ("cosine", lambda q, v: float(np.dot(q, v) / np.linalg.norm(q) / np.linalg.norm(v))),
    ("dot", lambda q, v: float(np.dot(q, v))),
    ("euclidean", lambda q, v: float(np.linalg.norm(np.subtract(q, v)))),  # Qdrant's Euclid score is the distance
])
def test_search_returns_vectors_payloads_and_qdrant_scores(client, coll, metric, score):
    d = MemrlVecDB(coll, 4, metric, client=client)
    d.create_collection()
    vecs = {U(i): [float(i), 1.0, 0.5, -1.0] for i in range(1, 6)}
    d.add([{"id": k, "vector": v, "payload": {"k": k}} for k, v in vecs.items()])
    q = [2.0, 1.0, 0.0, 0.0]
    res = d.search(q, 3)
    assert len(res) == 3
    for r in res:
        stored = np.array(vecs[r.id]) / (np.linalg.norm(vecs[r.id]) if metric == "cosine" else 1)
        assert r.vector == pytest.approx(list(stored), rel=1e-5) and r.payload == {"k": r.id}
        assert r.score == pytest.approx(score(q, vecs[r.id]), rel=1e-4)
    scores = [r.score for r in res]
    assert scores == (sorted(scores) if metric == "euclidean" else sorted(scores, reverse=True))


def test_get_by_filter_and_get_all_scroll_in_pages(db, monkeypatch):
    db.add([{"id": U(i), "vector": [1, i, 0, 0], "payload": {"even": i % 2 == 0}} for i in range(1, 26)])
    pages = []
    real = db.client.scan

    def scan(*a, **kw):
        pages.append(kw.get("count"))
        return real(*a, **kw)

    monkeypatch.setattr(db.client, "scan", scan)
    got = db.get_all(scroll_limit=7)
    assert sorted(i.id for i in got) == sorted(U(i) for i in range(1, 26)) and all(i.vector is not None for i in got)
    assert pages == [7] * len(pages) and len(pages) >= 4
    assert len(db.get_by_filter({"even": True}, scroll_limit=5)) == 12
    assert len(db.get_by_filter({"even": True})) == 12  # the default, 100
    with pytest.raises(ValueError):
        db.get_all(scroll_limit=0)


def test_large_payloads_round_trip_and_stay_filterable(db):
    big = {
        "user_id": "u1", "tags": ["reflection"], "meta": {"source": "web"},
        "trajectory": [{"step": i, "obs": "x" * 1000, "score": i / 7} for i in range(200)],  # ~220 KB
        "reflection": "é" * 70_000,
    }
    deep: dict = {"leaf": 1}
    for _ in range(20):
        deep = {"d": deep}
    db.add([{"id": U(1), "vector": [1, 0, 0, 0], "payload": big},
            {"id": U(2), "vector": [0, 1, 0, 0], "payload": {"user_id": "u2", "deep": deep}}])
    assert db.get_by_id(U(1)).payload == big and db.get_by_id(U(2)).payload["deep"] == deep
    assert [i.payload for i in db.search([1, 0, 0, 0], 1)] == [big]
    assert db.count({"user_id": "u1", "tags": "reflection", "meta.source": "web"}) == 1
    assert db.count({"user_id": "u2"}) == 1
    # A merge that shrinks it below the attribute limit still round-trips exactly.
    db.update(U(1), {"payload": {"trajectory": [], "reflection": "short"}})
    small = dict(big, trajectory=[], reflection="short")
    assert db.get_by_id(U(1)).payload == small
    assert db.client.get_attrs(db.collection_name, U(1)) == small  # all of it filterable again
