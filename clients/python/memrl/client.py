"""The typed client: one method per MEM.* command, over redis-py.

:class:`Client` runs each command at once; :class:`Pipeline` (from
:meth:`Client.pipeline`) queues the same methods and runs them in one round
trip, inside MULTI/EXEC when ``transaction=True``. Both take their method
set from :class:`_Commands`, which only builds each command's arguments and
names the function that decodes its reply, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import redis

from . import _codec as c
from .errors import ResponseError, TransactionError, from_redis
from .filters import to_filter
from .types import Memory, NewMemory, ScanPage



def _memory_args(m: NewMemory | dict) -> list[Any]:
    """What MEM.ADD takes after the collection name, for one memory."""
    if isinstance(m, dict):
        m = NewMemory(**m)
    args: list[Any] = [b"FP32", c.pack_vector(m.vector)]
    if m.id is not None:
        args += [b"ID", int(m.id)]
    if m.q is not None:
        args += [b"Q", c.fmt_float(m.q)]
    if m.payload is not None:
        args += [b"PAYLOAD", m.payload.encode("utf-8") if isinstance(m.payload, str) else bytes(m.payload)]
    if m.attrs is not None:
        args += [b"ATTRS", c.encode_attrs(m.attrs)]
    if m.key is not None:
        args += [b"KEY", c.encode_key(m.key)]
    if m.ttl is not None:
        args += [b"TTL", int(m.ttl)]
    return args


def _refuse_decoding(kwargs: dict[str, Any], redis_client: Any) -> None:
    """Raise ValueError if the connection would decode replies to str (``decode_responses``):
    payloads are binary, so the clients decode each field themselves."""
    if kwargs.get("decode_responses"):
        raise ValueError("decode_responses=True would corrupt binary payloads; the memrl client decodes replies itself")
    if redis_client is not None and redis_client.connection_pool.connection_kwargs.get("decode_responses"):
        raise ValueError("the redis client given has decode_responses=True; the memrl client needs it off")


def _identity(x: Any) -> Any:
    return x


def _prune_args(q_below: Any, min_visits: Any, older: Any, idle: Any, max_count: Any, filter: Any) -> list[Any]:
    """MEM.PRUNE's criteria as arguments (MEM.CONFIG … SET PRUNE takes the same)."""
    args: list[Any] = []
    if q_below is not None:
        args += [b"QBELOW", c.fmt_float(q_below)]
    if min_visits is not None:
        args += [b"MINVISITS", int(min_visits)]
    if older is not None:
        args += [b"OLDER", int(older)]
    if idle is not None:
        args += [b"IDLE", int(idle)]
    if max_count is not None:
        args += [b"MAXCOUNT", int(max_count)]
    expr = to_filter(filter)
    if expr is not None:
        args += [b"FILTER", expr]
    return args


def _retrieve_opts(
    k1: Any, k2: Any, lam: Any, delta: Any, nprobe: Any, refine: Any, stop: Any,
    raw_q: bool, filter: Any, with_payload: bool, with_attrs: bool, with_keys: bool,
) -> list[Any]:
    """MEM.RETRIEVE's options as arguments (MEM.MRETRIEVE takes the same)."""
    args: list[Any] = []
    for name, v in (("K1", k1), ("K2", k2), ("NPROBE", nprobe), ("REFINE", refine)):
        if v is not None:
            args += [name, int(v)]
    if stop is not None:
        args += ["STOP", c.fmt_float(stop)]
    if lam is not None:
        args += ["LAMBDA", c.fmt_float(lam)]
    if delta is not None:
        args += ["DELTA", c.fmt_float(delta)]
    if raw_q:
        args.append("RAWQ")
    expr = to_filter(filter)
    if expr is not None:
        args += ["FILTER", expr]
    if with_payload:
        args.append("WITHPAYLOAD")
    if with_attrs:
        args.append("WITHATTRS")
    if with_keys:
        args.append("WITHKEYS")
    return args


class _Commands:
    """The MEM.* method set. Subclasses define ``_call(args, parse)``.

    Vectors are numpy arrays, lists or tuples of numbers (packed as FP32), or
    bytes already packed. A memory reference (``ref``) is an int id or a
    str/bytes key (sent as ``KEY k``). Filters are an expression string in
    the server's filter language or a dict translated by
    :func:`memrl.filters.to_filter`.
    """

    #: Decode vectors to numpy arrays (when numpy is installed) or lists.
    vectors_as_numpy: bool = c.HAVE_NUMPY

    def _call(self, args: list[Any], parse: Callable[[Any], Any]) -> Any:  # pragma: no cover
        raise NotImplementedError

    # --- collections -----------------------------------------------------------

    def create(
        self,
        coll: str,
        dim: int,
        *,
        metric: Optional[str] = None,
        alpha: Optional[float] = None,
        gamma: Optional[float] = None,
        qinit: Optional[float] = None,
        index: Optional[str] = None,
        nlist: Optional[int] = None,
        pqm: Optional[int] = None,
        pqbits: Optional[int] = None,
        train: Optional[int] = None,
        indexed: Optional[Sequence[str]] = None,
    ) -> Any:
        """MEM.CREATE: a collection of ``dim``-dimensional vectors.

        ``metric`` is COSINE (default), L2 or IP; ``alpha`` the learning rate,
        ``gamma`` the discount, ``qinit`` new memories' Q; ``index`` FLAT or
        IVFPQ with its shape; ``indexed`` attribute fields to keep a filter
        index for (``INDEXED f1,f2``). Raises CollectionExists if the name is
        taken.
        """
        args: list[Any] = ["MEM.CREATE", coll, "DIM", int(dim)]
        if metric is not None:
            args += ["METRIC", metric.upper()]
        for name, v in (("ALPHA", alpha), ("GAMMA", gamma), ("QINIT", qinit)):
            if v is not None:
                args += [name, c.fmt_float(v)]
        if index is not None:
            args += ["INDEX", index.upper()]
        for name, v in (("NLIST", nlist), ("PQM", pqm), ("PQBITS", pqbits), ("TRAIN", train)):
            if v is not None:
                args += [name, int(v)]
        if indexed:
            args += ["INDEXED", ",".join(indexed)]
        return self._call(args, c.ok)

    def drop(self, coll: str) -> Any:
        """MEM.DROP: delete a collection and all its memories."""
        return self._call(["MEM.DROP", coll], c.ok)

    def list(self) -> Any:
        """MEM.LIST: the collection names, sorted."""
        return self._call(["MEM.LIST"], lambda r: [x.decode("utf-8") for x in r])

    def info(self, coll: str) -> Any:
        """MEM.INFO as a :class:`CollectionInfo`."""
        return self._call(["MEM.INFO", coll], c.parse_info)

    def index_add(self, coll: str, field: str) -> Any:
        """MEM.INDEX coll ADD field: keep a filter index for one more top-level attribute field
        (at most 32 a collection); built at once from every memory's attributes."""
        return self._call(["MEM.INDEX", coll, "ADD", field], c.ok)

    def index_drop(self, coll: str, field: str) -> Any:
        """MEM.INDEX coll DROP field: stop indexing a field (filters on it still work, unindexed)."""
        return self._call(["MEM.INDEX", coll, "DROP", field], c.ok)

    def index_list(self, coll: str) -> Any:
        """MEM.INDEX coll LIST: the indexed attribute fields, sorted."""
        return self._call(["MEM.INDEX", coll, "LIST"], lambda r: [x.decode("utf-8") for x in r])

    def verify(self, coll: str) -> Any:
        """MEM.VERIFY: checksums of every row and payload, as a dict; raises DataDamaged."""
        return self._call(["MEM.VERIFY", coll], lambda r: {k: (v.decode() if isinstance(v, bytes) else v) for k, v in c.pairs(r).items()})

    def checkpoint(self, full: bool = False) -> Any:
        """MEM.CHECKPOINT [FULL]: write a checkpoint now."""
        return self._call(["MEM.CHECKPOINT"] + (["FULL"] if full else []), c.ok)

    # --- memories --------------------------------------------------------------

    def add(
        self,
        coll: str,
        vector: Any,
        *,
        id: Optional[int] = None,
        q: Optional[float] = None,
        payload: Optional[bytes | str] = None,
        attrs: Optional[dict[str, Any]] = None,
        key: Optional[str | bytes] = None,
        ttl: Optional[int] = None,
        dedup: Optional[float] = None,
        merge: Optional[str] = None,
        replace: bool = False,
    ) -> Any:
        """MEM.ADD: store one memory; returns its id.

        ``payload`` is opaque bytes (a str is sent as UTF-8), ``attrs`` a dict
        stored as JSON, ``key`` a unique external name, ``ttl`` seconds to
        live. Raises MemoryExists if ``id`` or ``key`` is live. With
        ``dedup`` (a similarity, as DELTA), a live memory at least that
        similar is returned instead of adding a near-copy, its Q merged as
        ``merge`` says ("KEEP", the default, "MAX" or "AVG"). With
        ``replace`` (``REPLACE``, needs ``key``) it is an upsert: the memory
        holding ``key`` gets this vector, attrs and payload in place and
        keeps its id, Q, visits and history; the reply is its id.
        """
        m = NewMemory(vector=vector, id=id, q=q, payload=payload, attrs=attrs, key=key, ttl=ttl)
        args = ["MEM.ADD", coll] + _memory_args(m)
        if dedup is not None:
            args += [b"DEDUP", c.fmt_float(dedup)]
            if merge is not None:
                args += [b"MERGE", merge]
        elif merge is not None:
            raise ValueError("merge needs dedup")
        if replace:
            args.append(b"REPLACE")
        return self._call(args, int)

    def madd(self, coll: str, memories: Iterable[NewMemory | dict]) -> Any:
        """MEM.MADD: store many memories, all or nothing, with one fsync; returns their ids in order.

        Each memory is a :class:`NewMemory` or a dict of its fields.
        """
        args: list[Any] = ["MEM.MADD", coll]
        n = 0
        for m in memories:
            args += _memory_args(m)
            n += 1
        if n == 0:
            raise ValueError("madd needs at least one memory")
        return self._call(args, lambda r: [int(x) for x in r])

    def retrieve(
        self,
        coll: str,
        vector: Any,
        *,
        k1: Optional[int] = None,
        k2: Optional[int] = None,
        lam: Optional[float] = None,
        delta: Optional[float] = None,
        nprobe: Optional[int] = None,
        refine: Optional[int] = None,
        stop: Optional[float] = None,
        raw_q: bool = False,
        filter: Any = None,
        with_payload: bool = False,
        with_attrs: bool = False,
        with_keys: bool = False,
    ) -> Any:
        """MEM.RETRIEVE: the K1 most similar memories (similarity ≥ ``delta``), the best K2 by
        ``(1-lam)·z(sim) + lam·z(Q)``, as :class:`Hit` rows best first.

        ``lam=0`` is plain similarity search. ``raw_q`` (``RAWQ``) blends Q as
        learned instead of its z-score (an ablation). ``filter`` searches only
        memories whose attributes match it (an expression string or a dict):
        phase 1 returns the K1 most similar *matching* memories. ``nprobe``,
        ``refine`` and ``stop`` (the early-stop factor in (0, 1]; 1 skips
        only lists that provably cannot help) tune the IVF-PQ index and are
        ignored by exact search.
        """
        args: list[Any] = ["MEM.RETRIEVE", coll, b"FP32", c.pack_vector(vector)]
        args += _retrieve_opts(k1, k2, lam, delta, nprobe, refine, stop, raw_q, filter, with_payload, with_attrs, with_keys)
        return self._call(args, lambda r: c.parse_hits(r, with_payload, with_attrs, with_keys))

    def reward(self, coll: str, reward: float, refs: Iterable[int | str | bytes], *, next_q: Optional[float] = None) -> Any:
        """MEM.REWARD: ``Q ← Q + α(reward + γ·next_q − Q)`` for each memory named; returns the new Qs.

        All memories must exist, or nothing changes (NoSuchMemory).
        """
        args: list[Any] = ["MEM.REWARD", coll, c.fmt_float(reward)]
        n = 0
        for ref in refs:
            args += c.ref_args(ref)
            n += 1
        if n == 0:
            raise ValueError("reward needs at least one memory")
        if next_q is not None:
            args += ["NEXTQ", c.fmt_float(next_q)]
        return self._call(args, lambda r: [c.fnum(x) for x in r])

    def get(self, coll: str, ref: int | str | bytes, *, with_vector: bool = False) -> Any:
        """MEM.GET as a :class:`Memory`; raises NoSuchMemory when none has that id or key."""
        args = ["MEM.GET", coll] + c.ref_args(ref) + (["WITHVECTOR"] if with_vector else [])
        nump = self.vectors_as_numpy
        return self._call(args, lambda r: c.parse_memory(r, nump))

    def mget(self, coll: str, refs: Iterable[int | str | bytes], *, with_vector: bool = False) -> Any:
        """MEM.MGET: a :class:`Memory` (or None where none is found) per reference, in order."""
        args: list[Any] = ["MEM.MGET", coll]
        for ref in refs:
            args += c.ref_args(ref)
        if with_vector:
            args.append("WITHVECTOR")
        nump = self.vectors_as_numpy
        return self._call(args, lambda r: [c.parse_memory(x, nump) for x in r])

    def delete(self, coll: str, *refs: int | str | bytes) -> Any:
        """MEM.DEL: delete the memories named; returns how many were deleted."""
        if not refs:
            raise ValueError("delete needs at least one memory")
        args: list[Any] = ["MEM.DEL", coll]
        for ref in refs:
            args += c.ref_args(ref)
        return self._call(args, int)

    def delete_where(self, coll: str, filter: Any) -> Any:
        """MEM.DEL coll FILTER expr: delete every memory whose attributes match; returns the count."""
        expr = to_filter(filter)
        if expr is None:
            raise ValueError("delete_where needs a filter")
        return self._call(["MEM.DEL", coll, "FILTER", expr], int)

    def prune(
        self,
        coll: str,
        *,
        q_below: Optional[float] = None,
        min_visits: Optional[int] = None,
        older: Optional[int] = None,
        idle: Optional[int] = None,
        max_count: Optional[int] = None,
        filter: Any = None,
        dry_run: bool = False,
    ) -> Any:
        """MEM.PRUNE: delete (``dry_run``: count) the memories the criteria select; returns the count.

        A memory is pruned when it meets every criterion given among
        ``q_below`` (with ``min_visits``), ``older`` and ``idle`` (seconds);
        ``max_count`` then keeps the highest-Q ones. At least one criterion
        is required (the server refuses a prune without one).
        """
        args = ["MEM.PRUNE", coll] + _prune_args(q_below, min_visits, older, idle, max_count, filter)
        if dry_run:
            args.append(b"DRYRUN")
        return self._call(args, int)

    def history(self, coll: str, ref: int | str | bytes, count: Optional[int] = None) -> Any:
        """MEM.HISTORY: the memory's recent updates as :class:`HistoryEntry` values, newest first.

        ``count`` (at least 1) keeps the newest ``count``; without it, all the
        server keeps (32 by default). Empty for a memory never rewarded;
        raises NoSuchMemory when none has that id or key.
        """
        args = ["MEM.HISTORY", coll] + c.ref_args(ref)
        if count is not None:
            args += [b"COUNT", int(count)]
        return self._call(args, c.parse_history)

    def set_prune_policy(
        self,
        coll: str,
        *,
        q_below: Optional[float] = None,
        min_visits: Optional[int] = None,
        older: Optional[int] = None,
        idle: Optional[int] = None,
        max_count: Optional[int] = None,
        filter: Any = None,
        every: Optional[int] = None,
    ) -> Any:
        """MEM.CONFIG coll SET PRUNE: apply these ``prune`` criteria in the background every
        ``every`` seconds (the server's default, 60, when None), first ``every`` seconds from now.

        The criteria are checked as :meth:`prune` checks them; a refused policy changes
        nothing. The policy survives restarts; :meth:`prune_policy_off` removes it.
        """
        args = ["MEM.CONFIG", coll, b"SET", b"PRUNE"] + _prune_args(q_below, min_visits, older, idle, max_count, filter)
        if every is not None:
            args += [b"EVERY", int(every)]
        return self._call(args, c.ok)

    def prune_policy_off(self, coll: str) -> Any:
        """MEM.CONFIG coll SET PRUNE OFF: remove the collection's prune policy (if any)."""
        return self._call(["MEM.CONFIG", coll, b"SET", b"PRUNE", b"OFF"], c.ok)

    def prune_policy(self, coll: str) -> Any:
        """MEM.CONFIG coll GET PRUNE: the policy as a dict (``q_below``, ``min_visits``, ``older``,
        ``idle``, ``max_count``, ``filter``, ``every``: only those set, ``every`` always), or None."""
        return self._call(["MEM.CONFIG", coll, b"GET", b"PRUNE"], c.parse_prune_policy)

    def snapshot(self, coll: str, name: str) -> Any:
        """MEM.SNAPSHOT: record the collection's present state (no vectors copied) as ``name``."""
        return self._call(["MEM.SNAPSHOT", coll, name], c.ok)

    def snapshots(self, coll: str) -> Any:
        """MEM.SNAPSHOTS: the collection's snapshots, oldest first, as :class:`Snapshot`."""
        return self._call(["MEM.SNAPSHOTS", coll], c.parse_snapshots)

    def rollback(self, coll: str, name: str) -> Any:
        """MEM.ROLLBACK: restore the collection to snapshot ``name``; returns the memories changed.

        Memories added since are removed, deleted ones come back, and every
        memory's Q, visits, attributes, key and expiry are restored, durably
        and atomically.
        """
        return self._call(["MEM.ROLLBACK", coll, name], int)

    def delete_snapshot(self, coll: str, name: str) -> Any:
        """MEM.DELSNAPSHOT: free snapshot ``name``; True if it existed."""
        return self._call(["MEM.DELSNAPSHOT", coll, name], lambda r: int(r) == 1)

    def compact(self, coll: str, wait: bool = False) -> Any:
        """MEM.COMPACT [WAIT]: rewrite the collection's files without deleted memories.

        Returns None once the background compaction is started (MEM.INFO's
        ``compacting`` field says when it ends); with ``wait``, returns when
        it is done, with a dict of ``rows_before``, ``rows_after``,
        ``bytes_before``, ``bytes_after`` (ints) and ``seconds`` (float).
        A compaction already running is refused (:class:`MemrlError`).
        """
        if not wait:
            return self._call(["MEM.COMPACT", coll], c.ok)
        return self._call(["MEM.COMPACT", coll, b"WAIT"], _compact_stats)

    def count(self, coll: str, filter: Any = None) -> Any:
        """MEM.COUNT [FILTER expr]: how many memories (match)."""
        expr = to_filter(filter)
        return self._call(["MEM.COUNT", coll] + (["FILTER", expr] if expr is not None else []), int)

    def scan(
        self,
        coll: str,
        cursor: int = 0,
        *,
        count: Optional[int] = None,
        filter: Any = None,
        with_payload: bool = False,
        with_vector: bool = False,
    ) -> Any:
        """MEM.SCAN: one page of memories in id order, as a :class:`ScanPage`.

        Start with cursor 0 and pass each page's cursor on until it is 0 (a
        short or, with ``filter``, empty page is not the end). See
        :meth:`Client.scan_iter`.
        """
        args: list[Any] = ["MEM.SCAN", coll, int(cursor)]
        if count is not None:
            args += ["COUNT", int(count)]
        expr = to_filter(filter)
        if expr is not None:
            args += ["FILTER", expr]
        if with_payload:
            args.append("WITHPAYLOAD")
        if with_vector:
            args.append("WITHVECTOR")
        nump = self.vectors_as_numpy
        return self._call(args, lambda r: ScanPage(int(r[0]), [c.parse_memory(x, nump) for x in r[1]]))

    # --- attributes, payloads, expiry --------------------------------------------

    def set_attrs(self, coll: str, ref: int | str | bytes, attrs: Optional[dict[str, Any]]) -> Any:
        """MEM.SETATTR: replace the memory's attributes (None removes them)."""
        return self._call(["MEM.SETATTR", coll] + c.ref_args(ref) + [c.encode_attrs(attrs)], c.ok)

    def set_vector(self, coll: str, ref: int | str | bytes, vector: Any) -> Any:
        """MEM.SETVECTOR: replace the memory's vector, keeping its id, attributes, payload, Q, visits and history."""
        return self._call(["MEM.SETVECTOR", coll] + c.ref_args(ref) + [b"FP32", c.pack_vector(vector)], c.ok)

    def get_attrs(self, coll: str, ref: int | str | bytes) -> Any:
        """MEM.GETATTR: the attributes as a dict, or None when the memory has none."""
        return self._call(["MEM.GETATTR", coll] + c.ref_args(ref), c.decode_attrs)

    def set_payload(self, coll: str, ref: int | str | bytes, payload: bytes | str) -> Any:
        """MEM.SETPAYLOAD: replace the memory's payload."""
        p = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
        return self._call(["MEM.SETPAYLOAD", coll] + c.ref_args(ref) + [p], c.ok)

    def expire(self, coll: str, ref: int | str | bytes, seconds: int) -> Any:
        """MEM.EXPIRE: time to live from now (≤ 0 deletes now); returns True."""
        return self._call(["MEM.EXPIRE", coll] + c.ref_args(ref) + [int(seconds)], lambda r: int(r) == 1)

    def persist(self, coll: str, ref: int | str | bytes) -> Any:
        """MEM.PERSIST: remove the expiry; True if there was one."""
        return self._call(["MEM.PERSIST", coll] + c.ref_args(ref), lambda r: int(r) == 1)

    def ttl(self, coll: str, ref: int | str | bytes) -> Any:
        """MEM.TTL: seconds left, or -1 when the memory never expires."""
        return self._call(["MEM.TTL", coll] + c.ref_args(ref), int)

    # --- connection ----------------------------------------------------------------

    def ping(self) -> Any:
        return self._call(["PING"], lambda r: r in (True, b"PONG"))

    # --- many retrievals in one command (MEM.MRETRIEVE) ----------------------------

    def retrieve_many(
        self,
        coll: str,
        queries: Any,
        *,
        k1: Optional[int] = None,
        k2: Optional[int] = None,
        lam: Optional[float] = None,
        delta: Optional[float] = None,
        nprobe: Optional[int] = None,
        refine: Optional[int] = None,
        stop: Optional[float] = None,
        raw_q: bool = False,
        filter: Any = None,
        with_payload: bool = False,
        with_attrs: bool = False,
        with_keys: bool = False,
    ) -> Any:
        """MEM.MRETRIEVE: :meth:`retrieve` for each query, with the same options, in one
        round trip; returns one list of :class:`Hit` per query, in order.

        ``queries`` is a 2-D numpy array (one query per row) or a sequence of
        vectors; 1 to :data:`MAX_RETRIEVE_MANY` of them (ValueError otherwise,
        nothing sent). A query the server refuses (wrong dimension, NaN) fails
        the whole call: the exception's ``position`` is that query's, counting
        from 1. A reply larger than the server's ``--maxmemory`` allows raises
        OutOfMemory: ask for fewer queries, or without payloads.
        """
        blobs = c.pack_vectors(queries)
        if not 1 <= len(blobs) <= MAX_RETRIEVE_MANY:
            raise ValueError(f"retrieve_many takes 1 to {MAX_RETRIEVE_MANY} queries, got {len(blobs)}")
        args: list[Any] = ["MEM.MRETRIEVE", coll]
        args += _retrieve_opts(k1, k2, lam, delta, nprobe, refine, stop, raw_q, filter, with_payload, with_attrs, with_keys)
        args += ["QUERIES", len(blobs)]
        for b in blobs:
            args += [b"FP32", b]
        return self._call(args, lambda r: [c.parse_hits(h, with_payload, with_attrs, with_keys) for h in r])


#: The most queries one MEM.MRETRIEVE (:meth:`Client.retrieve_many`) takes.
MAX_RETRIEVE_MANY = 1024


class Client(_Commands):
    """A memrl connection pool (redis-py's), safe to share between threads.

    ``Client(host, port, password=…, username=…, ssl=…)`` takes redis-py's
    ``Redis`` keyword arguments, except ``decode_responses``, which must stay
    off (payloads are binary; this client decodes each field itself). Or wrap
    an existing ``redis.Redis`` with ``Client(redis_client=r)``.

    Every method raises this package's exceptions (:mod:`memrl.errors`),
    never redis-py's.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 6390, *, redis_client: Optional[redis.Redis] = None, **kwargs: Any):
        _refuse_decoding(kwargs, redis_client)
        self.redis = redis_client if redis_client is not None else redis.Redis(host=host, port=port, **kwargs)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "Client":
        """``redis://[user:password@]host:port`` (or ``rediss://`` for TLS)."""
        return cls(redis_client=redis.Redis.from_url(url, **kwargs))

    def _call(self, args: list[Any], parse: Callable[[Any], Any]) -> Any:
        try:
            reply = self.redis.execute_command(*args)
        except redis.RedisError as e:
            raise from_redis(e) from e
        return parse(reply)

    def scan_iter(self, coll: str, *, count: Optional[int] = None, filter: Any = None, with_payload: bool = False, with_vector: bool = False) -> Iterator[Memory]:
        """Every memory of the collection, page by page (MEM.SCAN until the cursor is 0).

        Each memory present for the whole iteration is yielded exactly once.
        """
        cursor = 0
        while True:
            page = self.scan(coll, cursor, count=count, filter=filter, with_payload=with_payload, with_vector=with_vector)
            yield from page.memories
            cursor = page.cursor
            if cursor == 0:
                return

    def pipeline(self, transaction: bool = True) -> "Pipeline":
        """Queue commands and send them together; with ``transaction=True`` inside MULTI/EXEC,
        so no other client's command runs between them (there is no rollback: a command
        that fails at EXEC is that command's result, the others run).

        Use as a context manager::

            with client.pipeline() as p:
                p.delete("plans", "task-9")
                p.add("plans", vec, key="task-9")
                _, new_id = p.execute()
        """
        return Pipeline(self.redis.pipeline(transaction=transaction), self.vectors_as_numpy, transaction)

    def close(self) -> None:
        self.redis.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Queue(_Commands):
    """What :class:`Pipeline` and the asyncio pipeline share: queueing a command is
    synchronous in redis-py's pipelines (sync and asyncio alike), only sending is not."""

    def __init__(self, pipe: Any, vectors_as_numpy: bool, transaction: bool):
        self._pipe = pipe
        self._transaction = transaction
        self._parsers: list[Callable[[Any], Any]] = []
        self.vectors_as_numpy = vectors_as_numpy

    def _call(self, args: list[Any], parse: Callable[[Any], Any]) -> Any:
        self._pipe.execute_command(*args)
        self._parsers.append(parse)
        return self

    def _take_parsers(self) -> list[Callable[[Any], Any]]:
        """The queued commands' decoders, leaving the queue empty for the next batch."""
        parsers, self._parsers = self._parsers, []
        return parsers

    def _failed(self, e: Exception) -> BaseException:
        """The exception to raise when redis-py's execute raised ``e`` (so no reply came back)."""
        err = from_redis(e)
        if self._transaction and isinstance(err, ResponseError) and not isinstance(err, TransactionError):
            # redis-py raises the error of the command refused while queuing
            # (EXEC then answered EXECABORT): the whole transaction ran nothing.
            t = TransactionError(f"transaction discarded, nothing ran: {err}", "EXECABORT")
            t.command_error = err
            return t
        return err

    def __len__(self) -> int:
        return len(self._parsers)


def _decode_results(parsers: list[Callable[[Any], Any]], replies: list[Any], raise_on_error: bool) -> list[Any]:
    """Each queued command's decoded reply, or its failure as a memrl exception (raised
    first with ``raise_on_error``, after all were decoded)."""
    out: list[Any] = []
    for parse, r in zip(parsers, replies):
        if isinstance(r, BaseException):
            out.append(from_redis(r))
        else:
            out.append(parse(r))
    if raise_on_error:
        for r in out:
            if isinstance(r, BaseException):
                raise r
    return out


class Pipeline(_Queue):
    """Queued commands (see :meth:`Client.pipeline`). Each method returns the pipeline;
    :meth:`execute` returns the decoded results in order."""

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the queued commands; return each one's decoded result.

        With ``raise_on_error`` the first failed command's exception is raised
        (the others still ran); without it each failure is returned in its
        place as an exception object. A transaction the server refused whole
        (EXECABORT) raises TransactionError: nothing in it ran.
        """
        parsers = self._take_parsers()
        try:
            replies = self._pipe.execute(raise_on_error=False)
        except redis.RedisError as e:
            raise self._failed(e) from e
        return _decode_results(parsers, replies, raise_on_error)

    def reset(self) -> None:
        """Drop the queued commands."""
        self._parsers = []
        self._pipe.reset()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.reset()


def _compact_stats(reply: Any) -> dict[str, Any]:
    """MEM.COMPACT … WAIT's field/value array: integers, and seconds as a float."""
    return {k: (c.fnum(v) if k == "seconds" else int(v)) for k, v in c.pairs(reply).items()}
