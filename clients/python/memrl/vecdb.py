"""A memrl collection behind MemOS's vector-database interface, with Qdrant's semantics.

:class:`MemrlVecDB` has the method set of MemOS's ``BaseVecDB``
(``memos/vec_dbs/base.py``) as its Qdrant backend (``memos/vec_dbs/qdrant.py``)
implements it: ``create_collection``, ``list_collections``,
``delete_collection``, ``collection_exists``, ``search``, ``get_by_id``,
``get_by_ids``, ``get_by_filter(filter, scroll_limit=100)``,
``get_all(scroll_limit=100)``, ``count``, ``add``, ``update``, ``upsert``,
``delete``, ``ensure_payload_indexes``; plus MemRL's two: ``retrieve``
(two-phase, value-aware) and ``reward`` (the Q update), so a MemRL-style
``MemoryService`` can swap its store for memrl and leave ranking by Q and
learning Q to the server. ``MemrlVecDB.from_config`` takes MemOS's
``QdrantVecDBConfig`` (or any object with its attributes, or a dict).

How items are stored (the decisions a caller relies on):

* An item's ``id`` (a string; MemOS uses UUIDs) is the memory's **key**
  (``KEY k``): unique in the collection, 1..512 bytes of UTF-8. The server's
  numeric id is internal. Items added without an id get a new UUID4.
* An item's ``payload`` (a dict) is stored as the memory's **attributes**
  (JSON), so every payload field can be filtered on, when it fits them: at
  most 64 KiB of JSON nested at most 16 deep. A **larger payload** (a
  trajectory, a reflection) is stored whole, as JSON, in the memory's byte
  payload (up to 16 MiB), and its attributes keep the fields that can be
  filtered on: each top-level field whose JSON is at most 4 KiB (ids, tags,
  small metadata), dropping the largest of those if together they still
  pass 64 KiB. Reads give back the whole payload exactly either way;
  filters see only the attribute fields. numpy scalars and arrays in a
  payload are stored as Python's numbers and lists; NaN and infinities
  (which JSON cannot hold) raise ValueError.
* Writes keep what the memory has **learned**. ``add`` and ``upsert`` of an
  existing id overwrite its vector and payload (Qdrant's upsert) in place
  (``MEM.ADD … KEY id REPLACE``): the memory keeps its Q, visits, last
  reward, history and numeric id. ``update`` likewise.
* A memory added to the collection by other means, without a key, is shown
  with ``id`` = ``"#<numeric id>"``.
* ``filter`` is a MemOS dict with Qdrant's meaning (``{"user_id": "u7"}``,
  ``{"tags": "travel"}`` matching a list holding it, ``{"meta.source":
  "web"}`` into nested payloads; see :mod:`memrl.filters`) or a raw memrl
  expression string.

``search`` is plain similarity search (``LAMBDA 0``) returning vectors and
payloads, as Qdrant's does; ``score`` is Qdrant's: the cosine similarity,
the dot product, or for ``euclidean`` the distance (smaller is nearer);
``sim`` is memrl's similarity (minus the squared distance for L2).
``retrieve`` ranks by similarity and Q.

Where memrl deliberately differs from Qdrant (each raises rather than
answering something else):

* There is no embedded mode: a config with only a ``path`` raises
  ValueError (give ``host``/``port`` or ``url``).
* ``create_collection`` on an existing collection of another dimension or
  metric raises :class:`CollectionMismatch` (Qdrant's backend logs a warning
  and keeps the old one).
* A memory that a server snapshot (``MEM.SNAPSHOT``) holds cannot be
  overwritten with a new vector: the write raises
  :class:`memrl.MemrlError` ("held by a snapshot") until the snapshot is
  deleted.
* Ids must be strings (or ``uuid.UUID``); Qdrant also takes integers.
* Writes of several items run in one MULTI/EXEC after every item is checked
  locally (dimension, finite numbers, payload JSON); a refusal the server
  alone can make (a snapshot holding one item) leaves the others written,
  and is raised.

Not thread-safe beyond what the underlying :class:`memrl.Client` is (it
is: one pool, each call its own connection use). A payload-only
``update`` reads the stored payload and writes the merge: two clients
updating the same item at once may lose one's fields.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from .client import Client
from .errors import CollectionExists, MemrlError, NoSuchMemory, ResponseError
from .filters import plain
from .types import Hit, Memory

_METRICS = {
    "cosine": "COSINE",
    "euclidean": "L2",
    "euclid": "L2",
    "l2": "L2",
    "dot": "IP",
    "ip": "IP",
    "inner_product": "IP",
}

# A byte payload written by this module starts with this line; the JSON of
# the whole item payload follows. Byte payloads without it (memories added
# by other means) are not read as item payloads.
_PAYLOAD_MAGIC = b"memrl.vecdb.payload/1\n"
_MAX_ATTRS = 65536  # the server's attribute limit (bytes of JSON)
_MAX_DEPTH = 16  # the server's nesting limit (objects and arrays)
_SMALL_FIELD = 4096  # a large payload's fields kept as attributes are at most this


class CollectionMismatch(ValueError):
    """``create_collection`` found the collection with another dimension or metric."""


@dataclass
class VecDBItem:
    """MemOS's ``VecDBItem``: an id, a vector, a payload dict and a score (search results).

    ``q``, ``sim`` and ``visits`` are memrl's additions, set where the server
    reported them (``search``, ``retrieve``, ``get_*``).
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
        if known.get("id") is None:
            known.pop("id", None)
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (MemOS's ``model_dump(exclude_none=True)``)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if getattr(self, k) is not None}


def _item(data: VecDBItem | dict[str, Any] | Any) -> VecDBItem:
    if isinstance(data, VecDBItem):
        it = data
    elif isinstance(data, dict):
        it = VecDBItem.from_dict(data)
    else:
        # A MemOS VecDBItem (pydantic) or anything with its attributes.
        it = VecDBItem(
            id=getattr(data, "id", None) or str(uuid.uuid4()),
            vector=getattr(data, "vector", None),
            payload=getattr(data, "payload", None),
        )
    it.id = _id(it.id)
    return it


def _id(id: Any) -> str:
    """An item id as the key it is stored under: a non-empty str (a uuid.UUID as its str)."""
    if isinstance(id, uuid.UUID):
        return str(id)
    if not isinstance(id, str) or not id:
        raise ValueError(f"item ids are non-empty strings (or uuid.UUID), got {id!r}")
    return id


def _vec_list(v: Any) -> Optional[list[float]]:
    if v is None:
        return None
    return [float(x) for x in v]


def _item_id(key: Any, mid: int) -> str:
    if key is None:
        return f"#{mid}"
    return key if isinstance(key, str) else key.decode("utf-8", "replace")


def _json(v: Any) -> bytes:
    try:
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as e:
        raise ValueError(f"payloads are JSON: {e} (NaN and infinities cannot be stored)") from None
    except TypeError as e:
        raise ValueError(f"payloads are JSON: {e}") from None


def _depth(v: Any) -> int:
    """JSON nesting depth: 0 for a scalar, 1 + the deepest member for a list or dict."""
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def encode_payload(payload: Optional[dict[str, Any]]) -> tuple[dict[str, Any], bytes]:
    """The attributes and byte payload an item's payload is stored as (see the module doc)."""
    p = plain(payload if payload is not None else {})
    if not isinstance(p, dict):
        raise ValueError(f"a payload is a dict, got {type(p).__name__}")
    for k in p:
        if not isinstance(k, str):
            raise ValueError(f"payload keys are strings, got {k!r}")
    whole = _json(p)
    if len(whole) <= _MAX_ATTRS and _depth(p) <= _MAX_DEPTH:
        return p, b""
    sizes = {}
    for k, v in p.items():
        n = len(_json(v))
        if n <= _SMALL_FIELD and _depth(v) < _MAX_DEPTH:
            sizes[k] = n
    attrs = {k: p[k] for k in sizes}
    # Each kept field costs its key, its value and some punctuation.
    while attrs and len(_json(attrs)) > _MAX_ATTRS:
        del attrs[max(attrs, key=lambda k: sizes[k])]
    return attrs, _PAYLOAD_MAGIC + whole


def decode_payload(attrs: Optional[dict[str, Any]], raw: Optional[bytes]) -> dict[str, Any]:
    """The item payload of a memory stored by :func:`encode_payload`."""
    if raw and raw.startswith(_PAYLOAD_MAGIC):
        return json.loads(raw[len(_PAYLOAD_MAGIC):])
    return attrs if attrs is not None else {}


class MemrlVecDB:
    """One memrl collection with MemOS's vector-db methods and Qdrant's semantics.

    ``MemrlVecDB("memories", 768, "cosine", client=memrl.Client(port=6390))``
    names the collection; :meth:`create_collection` makes it (idempotent).
    ``create_options`` are passed to :meth:`memrl.Client.create` (``alpha``,
    ``gamma``, ``qinit``, ``index``, ``indexed`` …). ``vector_dimension`` may
    be None for a collection that exists (it is then read from the server).
    """

    def __init__(
        self,
        collection_name: str,
        vector_dimension: Optional[int],
        distance_metric: Optional[str] = "cosine",
        *,
        client: Optional[Client] = None,
        host: str = "127.0.0.1",
        port: int = 6390,
        **create_options: Any,
    ):
        metric = _METRICS.get((distance_metric or "cosine").lower())
        if metric is None:
            raise ValueError(f"distance_metric is one of {sorted(_METRICS)}, got {distance_metric!r}")
        self.collection_name = collection_name
        self.vector_dimension = int(vector_dimension) if vector_dimension is not None else None
        self.metric = metric
        self.client = client if client is not None else Client(host, port)
        self.create_options = create_options

    @classmethod
    def from_config(cls, config: Any, client: Optional[Client] = None) -> "MemrlVecDB":
        """From a MemOS vector-db config (``QdrantVecDBConfig``: a pydantic model, read with
        ``model_dump()``), any object with its attributes, or a dict: ``collection_name``,
        ``vector_dimension``, ``distance_metric`` (``cosine``, ``euclidean``, ``dot``), and
        ``host``/``port`` or ``url`` (``redis://…``), ``api_key`` (the server's password).

        Like MemOS's Qdrant backend, it creates the collection (when ``vector_dimension``
        is given) and checks an existing one (:class:`CollectionMismatch`). A config with
        only a ``path`` (Qdrant's embedded mode) raises ValueError: memrl is a server.
        """
        if isinstance(config, dict):
            cfg = dict(config)
        elif hasattr(config, "model_dump"):
            cfg = config.model_dump()
        elif hasattr(config, "dict") and callable(config.dict):
            cfg = config.dict()
        else:
            cfg = {k: getattr(config, k) for k in dir(config) if not k.startswith("_") and not callable(getattr(config, k))}
        name = cfg.get("collection_name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"the config needs a collection_name, got {name!r}")
        host, port, url, path = cfg.get("host"), cfg.get("port"), cfg.get("url"), cfg.get("path")
        password = cfg.get("api_key") or None
        if client is None:
            if url:
                client = Client.from_url(url, **({"password": password} if password else {}))
            elif host is None and port is None:
                if path is not None:
                    raise ValueError(f"memrl has no embedded mode (path={path!r}): give host and port, or url, of a memrl server")
                client = Client(**({"password": password} if password else {}))
            else:
                client = Client(host or "127.0.0.1", int(port or 6390), **({"password": password} if password else {}))
        db = cls(name, cfg.get("vector_dimension"), cfg.get("distance_metric") or "cosine", client=client)
        if db.vector_dimension is not None or db.collection_exists(name):
            db.create_collection()
        return db

    # --- collections -----------------------------------------------------------

    def create_collection(self) -> None:
        """Create this collection if it does not exist. An existing one is kept if it has this
        dimension and metric (a None dimension takes the existing one's); otherwise
        :class:`CollectionMismatch` is raised and nothing changes."""
        if self.vector_dimension is not None:
            try:
                self.client.create(self.collection_name, self.vector_dimension, metric=self.metric, **self.create_options)
                return
            except CollectionExists:
                pass
        try:
            info = self.client.info(self.collection_name)
        except ResponseError:
            if self.vector_dimension is None:
                raise ValueError(f"collection {self.collection_name!r} does not exist and no vector_dimension was given") from None
            raise
        if self.vector_dimension is None:
            self.vector_dimension = info.dim
        if info.dim != self.vector_dimension or info.metric != self.metric:
            raise CollectionMismatch(
                f"collection {self.collection_name!r} exists with dimension {info.dim} and metric {info.metric}, "
                f"not {self.vector_dimension} and {self.metric}: drop it (delete_collection) or use another name"
            )

    def list_collections(self) -> list[str]:
        return self.client.list()

    def delete_collection(self, name: str) -> None:
        """Drop the collection ``name`` and all its memories."""
        self.client.drop(name)

    def collection_exists(self, name: str) -> bool:
        return name in self.client.list()

    def ensure_payload_indexes(self, fields: list[str]) -> None:
        """Index these payload fields on the server (``MEM.INDEX coll ADD field``: bitmaps that
        make filters on them fast); fields already indexed are skipped. Dotted paths
        (``"meta.source"``) index nested fields. Unlike MemOS's Qdrant backend, which logs
        a failure and goes on, an invalid field name raises."""
        have = set(self.client.index_list(self.collection_name))
        for f in fields:
            if f in have:
                continue
            try:
                self.client.index_add(self.collection_name, f)
            except ResponseError as e:
                if "already indexed" not in str(e):
                    raise
            have.add(f)

    # --- reads ------------------------------------------------------------------

    def _score(self, sim: float) -> float:
        """Qdrant's score for memrl's similarity: the distance for L2, else the similarity."""
        if self.metric == "L2":
            return math.sqrt(max(0.0, -sim))
        return sim

    def _from_memory(self, m: Memory) -> VecDBItem:
        return VecDBItem(
            id=_item_id(m.key, m.id),
            vector=_vec_list(m.vector),
            payload=decode_payload(m.attrs, m.payload),
            q=m.q,
            visits=m.visits,
        )

    def _hits_to_items(self, hits: list[Hit], blend: bool) -> list[VecDBItem]:
        """Items for hits, in their order, with vectors and whole payloads (MEM.MGET after)."""
        return self._hit_lists_to_items([hits], blend)[0]

    def _hit_lists_to_items(self, lists: list[list[Hit]], blend: bool) -> list[list[VecDBItem]]:
        """:meth:`_hits_to_items` for several lists of hits, with one MEM.MGET for all."""
        ids = [h.id for hits in lists for h in hits]
        mems = iter(self.client.mget(self.collection_name, ids, with_vector=True) if ids else [])
        out = []
        for hits in lists:
            items = []
            for h in hits:
                m = next(mems)
                if m is None:
                    continue  # deleted since the search
                it = self._from_memory(m)
                it.score = h.score if blend else self._score(h.sim)
                it.sim, it.q = h.sim, h.q
                items.append(it)
            out.append(items)
        return out

    def search(self, query_vector: Any, top_k: int, filter: Any = None) -> list[VecDBItem]:
        """The ``top_k`` most similar items (matching ``filter``), best first, with their
        vectors and payloads; ``score`` as Qdrant's (the module doc), ``sim`` and ``q`` set."""
        hits = self.client.retrieve(self.collection_name, query_vector, k1=top_k, k2=top_k, lam=0.0, filter=filter)
        return self._hits_to_items(hits, blend=False)

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
        ``k2`` of them by ``(1-lam)·z(sim) + lam·z(Q)``. ``score`` is that blend; ``sim`` and ``q``
        are set, and vectors and payloads as in :meth:`search`."""
        hits = self.client.retrieve(self.collection_name, vector, k1=k1, k2=k2, lam=lam, delta=delta, filter=filter)
        return self._hits_to_items(hits, blend=True)

    def get_by_id(self, id: str) -> Optional[VecDBItem]:
        """The item with this id (vector included), or None."""
        try:
            m = self.client.get(self.collection_name, _id(id), with_vector=True)
        except NoSuchMemory:
            return None
        return self._from_memory(m)

    def get_by_ids(self, ids: list[str]) -> list[VecDBItem]:
        """The items found among ``ids``, in that order (missing ones are left out), in one round trip."""
        if not ids:
            return []
        mems = self.client.mget(self.collection_name, [_id(i) for i in ids], with_vector=True)
        return [self._from_memory(m) for m in mems if m is not None]

    def get_by_filter(self, filter: Any, scroll_limit: int = 100) -> list[VecDBItem]:
        """Every item whose payload matches ``filter`` (None or ``{}``: every item), vectors
        included, in id order, read in pages of ``scroll_limit`` (Qdrant's scroll)."""
        if int(scroll_limit) < 1:
            raise ValueError(f"scroll_limit must be at least 1, got {scroll_limit}")
        return [
            self._from_memory(m)
            for m in self.client.scan_iter(self.collection_name, count=int(scroll_limit), filter=filter or None, with_payload=True, with_vector=True)
        ]

    def get_all(self, scroll_limit: int = 100) -> list[VecDBItem]:
        """Every item, vectors included, in id order, read in pages of ``scroll_limit``."""
        return self.get_by_filter(None, scroll_limit=scroll_limit)

    def count(self, filter: Any = None) -> int:
        return self.client.count(self.collection_name, filter or None)

    # --- writes -----------------------------------------------------------------

    def _check_vector(self, it: VecDBItem) -> list[float]:
        if it.vector is None:
            raise ValueError(f"item {it.id!r} has no vector")
        v = [float(x) for x in plain(it.vector)]
        if self.vector_dimension is not None and len(v) != self.vector_dimension:
            raise ValueError(f"item {it.id!r} has a {len(v)}-d vector; collection {self.collection_name!r} is {self.vector_dimension}-d")
        if not all(math.isfinite(x) for x in v):
            raise ValueError(f"item {it.id!r} has a NaN or infinite vector component")
        return v

    def add(self, data: Iterable[VecDBItem | dict[str, Any]]) -> None:
        """Add items, or overwrite those whose id exists (Qdrant's ``add`` is an upsert): vector
        and payload replaced, Q, visits, history and the numeric id kept. Every item needs a
        vector; items without an id get a UUID4; an id given twice takes the last. Every item
        is checked before anything is sent, then all are written in one MULTI/EXEC."""
        items = list({it.id: it for it in (_item(d) for d in data)}.values())
        writes = [(it.id, self._check_vector(it), *encode_payload(it.payload)) for it in items]
        self._write(writes)

    def _write(self, writes: list[tuple[str, list[float], dict[str, Any], bytes]]) -> None:
        if not writes:
            return
        with self.client.pipeline(transaction=True) as p:
            for id, vec, attrs, raw in writes:
                p.add(self.collection_name, vec, key=id, attrs=attrs, payload=raw, replace=True)
            self._execute(p)

    @staticmethod
    def _execute(p: Any) -> list[Any]:
        res = p.execute(raise_on_error=False)
        for r in res:
            if isinstance(r, BaseException):
                raise r
        return res

    def update(self, id: str, data: VecDBItem | dict[str, Any]) -> None:
        """Update item ``id`` as Qdrant's backend does. With a vector: the item's vector and
        payload are replaced (a None payload leaves it empty), or the item is added if ``id``
        does not exist. A payload alone is merged into the stored one (its keys replace those
        present; Qdrant's ``set_payload``); then NoSuchMemory if there is no such item. The
        item keeps its Q, visits and history either way."""
        if isinstance(data, dict):
            d = dict(data)
            d["id"] = id
            it = _item(d)
        else:
            it = _item(data)
            it.id = _id(id)
        if it.vector is not None:
            self._write([(it.id, self._check_vector(it), *encode_payload(it.payload))])
            return
        m = self.client.get(self.collection_name, it.id)
        merged = decode_payload(m.attrs, m.payload)
        merged.update(plain(it.payload or {}))
        self._set_payload(it.id, merged, m.payload)

    def _set_payload(self, id: str, payload: dict[str, Any], old_raw: Optional[bytes]) -> None:
        attrs, raw = encode_payload(payload)
        with self.client.pipeline(transaction=True) as p:
            p.set_attrs(self.collection_name, id, attrs)
            if raw or old_raw:
                p.set_payload(self.collection_name, id, raw)
            self._execute(p)

    def upsert(self, data: Iterable[VecDBItem | dict[str, Any]]) -> None:
        """Add each item, or overwrite it where its id exists, as :meth:`add`. An existing item
        given without a vector keeps its vector and gets the new payload (whole, not merged);
        a new one without a vector raises ValueError before anything is written."""
        items = list({it.id: it for it in (_item(d) for d in data)}.values())
        bare = [it for it in items if it.vector is None]
        olds = self.client.mget(self.collection_name, [it.id for it in bare]) if bare else []
        for it, old in zip(bare, olds):
            if old is None:
                raise ValueError(f"item {it.id!r} has no vector and does not exist")
        writes = [(it.id, self._check_vector(it), *encode_payload(it.payload)) for it in items if it.vector is not None]
        sets = [(it.id, *encode_payload(it.payload), old.payload) for it, old in zip(bare, olds)]
        if not writes and not sets:
            return
        with self.client.pipeline(transaction=True) as p:
            for id, vec, attrs, raw in writes:
                p.add(self.collection_name, vec, key=id, attrs=attrs, payload=raw, replace=True)
            for id, attrs, raw, old_raw in sets:
                p.set_attrs(self.collection_name, id, attrs)
                if raw or old_raw:
                    p.set_payload(self.collection_name, id, raw)
            self._execute(p)

    def delete(self, ids: list[str]) -> None:
        """Delete the items named; ids not present are ignored."""
        if ids:
            self.client.delete(self.collection_name, *[_id(i) for i in ids])

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
                self.collection_name, blobs[i:i + MAX_RETRIEVE_MANY], k1=top_k, k2=top_k, lam=0.0, filter=filter,
            )
            out += self._hit_lists_to_items(hits, blend=False)
        return out


__all__ = ["MemrlVecDB", "VecDBItem", "CollectionMismatch", "MemrlError", "encode_payload", "decode_payload"]
