"""memrl.Client's in-place replacement: set_vector (MEM.SETVECTOR) and add(..., replace=True)
(MEM.ADD … KEY k REPLACE) keep a memory's id, Q, visits and history."""

from __future__ import annotations

import pytest

import memrl


def test_set_vector_and_add_replace_keep_learning_state(client, coll):
    client.create(coll, dim=3, metric="L2", alpha=0.5)
    i = client.add(coll, [1, 0, 0], key="k", attrs={"a": 1}, payload=b"p")
    client.reward(coll, 1.0, ["k"])
    client.set_vector(coll, "k", [0, 2, 0])
    m = client.get(coll, "k", with_vector=True)
    assert (m.id, m.q, m.visits, m.attrs, m.payload) == (i, 0.5, 1, {"a": 1}, b"p")
    assert list(m.vector) == [0, 2, 0]
    assert client.add(coll, [0, 0, 3], key="k", attrs={"b": 2}, replace=True) == i
    m = client.get(coll, "k", with_vector=True)
    assert (m.id, m.q, m.visits, m.attrs, m.payload) == (i, 0.5, 1, {"b": 2}, b"")
    assert list(m.vector) == [0, 0, 3] and len(client.history(coll, "k")) == 1
    with client.pipeline() as p:  # in MULTI/EXEC, with an add of a new key
        p.add(coll, [1, 1, 1], key="k", replace=True)
        p.add(coll, [2, 2, 2], key="new", replace=True)
        same, new = p.execute()
    assert same == i and new != i and client.count(coll) == 2
    with pytest.raises(memrl.NoSuchMemory):
        client.set_vector(coll, "nope", [1, 1, 1])
    with pytest.raises(memrl.InvalidVector):
        client.set_vector(coll, "k", [1, 1])
    with pytest.raises(memrl.OutOfRange):
        client.add(coll, [1, 1, 1], replace=True)  # REPLACE needs a KEY
