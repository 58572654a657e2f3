"""A memrl collection behind MemOS's vector-database interface.

:class:`MemrlVecDB` has the method set of MemOS's ``BaseVecDB``
(``memos/vec_dbs/base.py``): ``create_collection``, ``list_collections``,
``delete_collection``, ``collection_exists``, ``search``, ``get_by_id``,
``get_by_ids``, ``get_by_filter``, ``get_all``, ``count``, ``add``,
``update``, ``upsert``, ``delete``; plus MemRL's two: ``retrieve`` (two-phase,
value-aware) and ``reward`` (the Q update), so a MemRL-style ``MemoryService``
can swap its store for memrl and leave ranking by Q and learning Q to the
server.

How items are stored (the decisions a caller relies on):

* An item's ``id`` (a string, MemOS uses UUIDs) is the memory's **key**
  (``KEY k``): unique in the collection, 1..512 bytes of UTF-8. The server's
  numeric id is internal. Items added without an id get a new UUID4.
* An item's ``payload`` (a dict) is stored as the memory's **attributes**
  (JSON), so every payload field can be filtered on. It must be a JSON
  object the server accepts: at most 64 KiB, nested at most 16 deep, finite
  numbers (``InvalidAttributes`` otherwise; the memory's byte payload is
  left empty). Keep large text elsewhere, or under 64 KiB.
* Q, visits and the last reward are the server's, per memory; ``update`` and
  ``upsert`` keep them (a vector change re-adds the memory with its Q).
* A memory added to the collection by other means, without a key, is shown
  with ``id`` = ``"#<numeric id>"``.
* ``filter`` is a MemOS dict (``{"user_id": "u7"}``, see
  :mod:`memrl.filters`) or a raw memrl expression string.

``search`` is plain similarity search (``LAMBDA 0``, ``score`` the
similarity: cosine, dot product, or minus the squared L2 distance);
``retrieve`` ranks by similarity and Q. Not thread-safe beyond what the
underlying :class:`memrl.Client` is (it is: one pool, each call its own
connection use).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from .client import Client
from .errors import CollectionExists, NoSuchMemory
from .types import Hit, Memory, NewMemory

_METRICS = {
    "cosine": "COSINE",
    "euclidean": "L2",
    "l2": "L2",
    "dot": "IP",
    "ip": "IP",
    "inner_product": "IP",
}


@dataclass
class VecDBItem:
    """MemOS's ``VecDBItem``: an id, a vector, a payload dict and a score (search results).

    ``q``, ``sim`` and ``visits`` are memrl's additions, set where the server
    reported them (``retrieve``, ``get_*``).
    """

    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    vector: Optional[list[float]] = None
    payload: Optional[dict[str, Any]] = None
    score: Optional[float] = None
    q: Optional[float] = None
    sim: Optional[float] = None
    visits: Optional[int] = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VecDBItem":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        extra = set(data) - set(known)
        if extra:
            raise ValueError(f"unknown VecDBItem fields: {sorted(extra)}")
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (MemOS's ``model_dump(exclude_none=True)``)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if getattr(self, k) is not None}


def _item(data: VecDBItem | dict[str, Any] | Any) -> VecDBItem:
    if isinstance(data, VecDBItem):
        return data
    if isinstance(data, dict):
        return VecDBItem.from_dict(data)
    # A MemOS VecDBItem (pydantic) or anything with its attributes.
    return VecDBItem(
        id=getattr(data, "id"),
        vector=getattr(data, "vector", None),
        payload=getattr(data, "payload", None),
    )


def _vec_list(v: Any) -> Optional[list[float]]:
    if v is None:
        return None
    return [float(x) for x in v]


def _item_id(key: Any, mid: int) -> str:
    if key is None:
        return f"#{mid}"
    return key if isinstance(key, str) else key.decode("utf-8", "replace")


class MemrlVecDB:
    """One memrl collection with MemOS's vector-db methods.

    ``MemrlVecDB("memories", 768, "cosine", client=memrl.Client(port=6390))``
    names the collection; :meth:`create_collection` makes it (idempotent).
    ``create_options`` are passed to :meth:`memrl.Client.create` (``alpha``,
    ``gamma``, ``qinit``, ``index``, ``indexed`` …).
    """

    def __init__(
        self,
        collection_name: str,
        vector_dimension: int,
        distance_metric: str = "cosine",
        *,
        client: Optional[Client] = None,
        host: str = "127.0.0.1",
        port: int = 6390,
        **create_options: Any,
    ):
        metric = _METRICS.get(distance_metric.lower())
        if metric is None:
            raise ValueError(f"distance_metric is one of {sorted(_METRICS)}, got {distance_metric!r}")
        self.collection_name = collection_name
        self.vector_dimension = int(vector_dimension)
        self.metric = metric
        self.client = client if client is not None else Client(host, port)
        self.create_options = create_options

    @classmethod
    def from_config(cls, config: Any, client: Optional[Client] = None) -> "MemrlVecDB":
        """From a MemOS-style config: ``collection_name``, ``vector_dimension``, ``distance_metric``
        (attributes or dict keys), and optional ``host``/``port``."""
        get = (lambda k, d=None: config.get(k, d)) if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
        return cls(
            get("collection_name"),
            get("vector_dimension"),
            get("distance_metric") or "cosine",
            client=client,
            host=get("host") or "127.0.0.1",
            port=int(get("port") or 6390),
        )

    # --- collections -----------------------------------------------------------

    def create_collection(self) -> None:
        """Create this collection if it does not exist (an existing one is kept as it is)."""
        try:
            self.client.create(self.collection_name, self.vector_dimension, metric=self.metric, **self.create_options)
        except CollectionExists:
            pass

    def list_collections(self) -> list[str]:
        return self.client.list()

    def delete_collection(self, name: str) -> None:
        """Drop the collection ``name`` and all its memories."""
        self.client.drop(name)

    def collection_exists(self, name: str) -> bool:
        return name in self.client.list()

    # --- reads ------------------------------------------------------------------

    def _from_memory(self, m: Memory) -> VecDBItem:
        return VecDBItem(
            id=_item_id(m.key, m.id),
            vector=_vec_list(m.vector),
            payload=m.attrs if m.attrs is not None else {},
            q=m.q,
            visits=m.visits,
        )

    def _from_hit(self, h: Hit, score: float) -> VecDBItem:
        return VecDBItem(
            id=_item_id(h.key, h.id),
            payload=h.attrs if h.attrs is not None else {},
            score=score,
            q=h.q,
            sim=h.sim,
        )

    def search(self, query_vector: Any, top_k: int, filter: Any = None) -> list[VecDBItem]:
        """The ``top_k`` most similar items (matching ``filter``), best first; ``score`` is the similarity."""
        hits = self.client.retrieve(
            self.collection_name, query_vector, k1=top_k, k2=top_k, lam=0.0,
            filter=filter, with_attrs=True, with_keys=True,
        )
        return [self._from_hit(h, h.sim) for h in hits]

    def retrieve(
        self,
        vector: Any,
        k1: int = 10,
        k2: int = 5,
        lam: float = 0.5,
        delta: Optional[float] = None,
        filter: Any = None,
    ) -> list[VecDBItem]:
        """MemRL's two-phase retrieval: the ``k1`` most similar (similarity ≥ ``delta``), the best
        ``k2`` of them by ``(1-lam)·z(sim) + lam·z(Q)``. ``score`` is that blend; ``sim`` and ``q`` are set."""
        hits = self.client.retrieve(
            self.collection_name, vector, k1=k1, k2=k2, lam=lam, delta=delta,
            filter=filter, with_attrs=True, with_keys=True,
        )
        return [self._from_hit(h, h.score) for h in hits]

    def get_by_id(self, id: str) -> Optional[VecDBItem]:
        """The item with this id (vector included), or None."""
        try:
            m = self.client.get(self.collection_name, id, with_vector=True)
        except NoSuchMemory:
            return None
        return self._from_memory(m)

    def get_by_ids(self, ids: list[str]) -> list[VecDBItem]:
        """The items found among ``ids``, in that order (missing ones are left out), in one round trip."""
        if not ids:
            return []
        p = self.client.pipeline(transaction=False)
        for i in ids:
            p.get(self.collection_name, i, with_vector=True)
        out = []
        for r in p.execute(raise_on_error=False):
            if isinstance(r, NoSuchMemory):
                continue
            if isinstance(r, BaseException):
                raise r
            out.append(self._from_memory(r))
        return out

    def get_by_filter(self, filter: Any) -> list[VecDBItem]:
        """Every item whose payload matches ``filter``, vectors included, in id order."""
        return [self._from_memory(m) for m in self.client.scan_iter(self.collection_name, count=1000, filter=filter, with_vector=True)]

    def get_all(self) -> list[VecDBItem]:
        """Every item, vectors included, in id order."""
        return self.get_by_filter(None)

    def count(self, filter: Any = None) -> int:
        return self.client.count(self.collection_name, filter)

    # --- writes -----------------------------------------------------------------

    def _new(self, it: VecDBItem, q: Optional[float] = None) -> NewMemory:
        if it.vector is None:
            raise ValueError(f"item {it.id!r} has no vector")
        if not isinstance(it.id, str) or not it.id:
            raise ValueError(f"item ids are non-empty strings, got {it.id!r}")
        return NewMemory(vector=it.vector, q=q, attrs=dict(it.payload or {}), key=it.id)

    def add(self, data: Iterable[VecDBItem | dict[str, Any]]) -> None:
        """Add items, all or nothing (one MEM.MADD): an id already present fails the whole call
        (``MemoryExists``) and adds none. Items without an id get a UUID4."""
        items = [self._new(_item(d)) for d in data]
        if items:
            self.client.madd(self.collection_name, items)

    def update(self, id: str, data: VecDBItem | dict[str, Any]) -> None:
        """Update item ``id``: a payload alone is merged into the stored one (its keys replace
        those present; MemOS's ``set_payload``), in place; a vector replaces the item (vector
        and payload, the payload merged likewise) keeping its Q and key, by a delete and an add
        in one MULTI/EXEC. Raises NoSuchMemory if there is no such item.

        Not atomic against another client updating the same item between the read of its
        payload and the write.
        """
        if isinstance(data, dict):
            d = dict(data)
            d.setdefault("id", id)
            it = VecDBItem.from_dict(d)
        else:
            it = _item(data)
        m = self.client.get(self.collection_name, id)
        payload = dict(m.attrs or {})
        payload.update(it.payload or {})
        if it.vector is None:
            self.client.set_attrs(self.collection_name, id, payload)
            return
        self._replace(id, it.vector, payload, m.q)

    def _replace(self, id: str, vector: Any, payload: dict[str, Any], q: float) -> None:
        with self.client.pipeline(transaction=True) as p:
            p.delete(self.collection_name, id)
            p.add(self.collection_name, vector, q=q, attrs=payload, key=id)
            p.execute()

    def upsert(self, data: Iterable[VecDBItem | dict[str, Any]]) -> None:
        """Add each item, or replace it where its id exists (vector and payload replaced, Q kept),
        all in one MULTI/EXEC. An existing item given without a vector keeps its vector; an id
        given twice takes the last."""
        # An id given twice: the last one wins (as two upserts in a row would).
        items = list({it.id: it for it in (_item(d) for d in data)}.values())
        if not items:
            return
        p = self.client.pipeline(transaction=False)
        for it in items:
            p.get(self.collection_name, it.id, with_vector=True)
        olds = p.execute(raise_on_error=False)
        with self.client.pipeline(transaction=True) as t:
            for it, old in zip(items, olds):
                if isinstance(old, NoSuchMemory):
                    t.add(self.collection_name, **_add_kwargs(self._new(it)))
                    continue
                if isinstance(old, BaseException):
                    raise old
                vec = it.vector if it.vector is not None else old.vector
                t.delete(self.collection_name, it.id)
                t.add(self.collection_name, **_add_kwargs(self._new(VecDBItem(id=it.id, vector=vec, payload=it.payload), q=old.q)))
            t.execute()

    def delete(self, ids: list[str]) -> None:
        """Delete the items named; ids not present are ignored."""
        if ids:
            self.client.delete(self.collection_name, *ids)

    # --- MemRL ------------------------------------------------------------------

    def reward(self, ids: list[str], r: float, next_q: Optional[float] = None) -> dict[str, float]:
        """Reward the items named: ``Q ← Q + α(r + γ·next_q − Q)`` each; returns their new Q by id.

        Every id must exist, or nothing changes (NoSuchMemory)."""
        ids = list(ids)
        qs = self.client.reward(self.collection_name, r, ids, next_q=next_q)
        return dict(zip(ids, qs))

    # --- many queries at once (MEM.MRETRIEVE) ------------------------------------

    def search_many(self, query_vectors: Any, top_k: int, filter: Any = None) -> list[list[VecDBItem]]:
        """:meth:`search` for each of ``query_vectors`` (a 2-D numpy array, one query per row, or
        a sequence of vectors): one list of items per query, in order, from one MEM.MRETRIEVE per
        :data:`memrl.client.MAX_RETRIEVE_MANY` queries."""
        from ._codec import pack_vectors
        from .client import MAX_RETRIEVE_MANY

        blobs = pack_vectors(query_vectors)
        out: list[list[VecDBItem]] = []
        for i in range(0, len(blobs), MAX_RETRIEVE_MANY):
            hits = self.client.retrieve_many(
                self.collection_name, blobs[i:i + MAX_RETRIEVE_MANY], k1=top_k, k2=top_k, lam=0.0,
                filter=filter, with_attrs=True, with_keys=True,
            )
            out += [[self._from_hit(h, h.sim) for h in hs] for hs in hits]
        return out


def _add_kwargs(m: NewMemory) -> dict[str, Any]:
    return {"vector": m.vector, "q": m.q, "attrs": m.attrs, "key": m.key}
