"""MemrlVecDB's filters: MemOS dicts and raw expressions (needs the server's FILTER)."""

from __future__ import annotations

import pytest

import memrl
from memrl.vecdb import MemrlVecDB, VecDBItem


@pytest.fixture
def db(client, coll):
    d = MemrlVecDB(coll, 3, client=client)
    d.create_collection()
    d.add([
        VecDBItem(id="a", vector=[1, 0, 0], payload={"user_id": "u7", "step": 1, "tags": ["plan"]}),
        VecDBItem(id="b", vector=[0.9, 0.1, 0], payload={"user_id": "u8", "step": 2}),
        VecDBItem(id="c", vector=[0, 1, 0], payload={"user_id": "u7", "step": 3, "tags": ["exec"]}),
        VecDBItem(id="d", vector=[0, 0, 1], payload={"user_id": 'u7" or "1" == "1', "step": 4}),
    ])
    return d


def test_search_with_dict_filter(db):
    assert [r.id for r in db.search([1, 0, 0], 3, {"user_id": "u7"})] == ["a", "c"]
    assert [r.id for r in db.search([1, 0, 0], 3, {"step": {"gte": 2}, "user_id": ["u8", "u7"]})] == ["b", "c"]


def test_filter_values_cannot_inject(db):
    # The hostile value is one literal: it matches only the memory holding exactly it.
    assert [r.id for r in db.search([1, 0, 0], 4, {"user_id": 'u7" or "1" == "1'})] == ["d"]


def test_raw_expression_and_count_and_get_by_filter(db):
    assert db.count({"user_id": "u7"}) == 2
    assert db.count('.user_id == "u8" or .step == 1') == 2
    assert [i.id for i in db.get_by_filter({"tags": {"contains": "exec"}})] == ["c"]
    assert [i.id for i in db.retrieve([1, 0, 0], k1=4, k2=4, filter='.step > 1 and .step < 4')] == ["b", "c"]
    with pytest.raises(memrl.FilterError):
        db.count(".step > ")
