"""memrl.AsyncClient against a real server.

The main test runs one scenario that calls every command method twice, once
through Client (in one collection) and once through AsyncClient (in
another), and requires the same results, errors included: the two share
argument building and reply decoding, and this holds them to it. Other tests
cover what only the asyncio client has (concurrency, cancellation, async
iteration and pipelines) and check that no public Client method lacks an
AsyncClient counterpart. Each test runs its coroutine with asyncio.run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import uuid
from typing import Any, Awaitable, Callable

import numpy as np
import pytest
import redis
import redis.asyncio as aioredis

import memrl
from memrl.client import _Commands

# The fields that say when something happened: they differ between the two runs.
_CLOCK_FIELDS = {"created", "updated", "expires", "time", "created_ms", "seconds"}


def _plain(x: Any, coll: str) -> Any:
    """A result with the run's collection name and clock readings taken out, comparable by ==."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        d = {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
        return (type(x).__name__, _plain(d, coll))
    if isinstance(x, dict):
        return {k: ("<clock>" if k in _CLOCK_FIELDS else _plain(v, coll)) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, coll) for v in x]
    if isinstance(x, np.ndarray):
        return ("ndarray", str(x.dtype), x.tolist())
    if isinstance(x, str):
        return x.replace(coll, "<coll>")
    if isinstance(x, BaseException):
        return ("raised", type(x).__name__, _plain(str(x), coll))
    return (type(x).__name__, x)


Call = Callable[..., Awaitable[Any]]


async def _scenario(call: Call, coll: str) -> None:
    """Every _Commands method at least once, with errors; ``call(name, *args, **kwargs)``
    runs one and records its result (or exception)."""
    await call("ping")
    await call("create", coll, 3, metric="cosine", alpha=0.5, gamma=0.5, qinit=0.0, index="flat", indexed=["user"])
    await call("create", coll, 3)  # CollectionExists
    await call("list", view=lambda names: coll in names)
    await call("info", coll)
    a = await call("add", coll, np.array([1, 0, 0], dtype=np.float64), payload=bytes(range(256)),
                   attrs={"user": "u7", "step": 3, "tags": ["plan"]}, key="task-9", q=0.5)
    await call("add", coll, [0.9, 0.1, 0], id=50, payload="text ✓", key="b", ttl=100)
    await call("add", coll, [1, 0.001, 0], dedup=0.99, merge="MAX", q=0.75)  # the near-copy of a
    await call("add", coll, [1, 0, 0], key="task-9")  # MemoryExists
    await call("add", coll, [1, 0], merge="MAX")  # ValueError before sending
    ids = await call("madd", coll, [memrl.NewMemory([0, 1, i], attrs={"user": "u%d" % (i % 2), "i": i}) for i in range(6)]
                     + [{"vector": [0, 0, 1], "key": "dict-form"}])
    await call("madd", coll, [])  # ValueError
    await call("retrieve", coll, [1, 0, 0], k1=5, k2=3, lam=0.5, with_payload=True, with_attrs=True, with_keys=True)
    await call("retrieve", coll, [0, 1, 0], k1=10, k2=10, lam=0, delta=0.1, raw_q=True, stop=1, filter={"user": "u1"})
    await call("retrieve", coll, [0, 1, 0], filter='.i >= 2 and .user == "u0"')
    await call("retrieve", coll, [1, 0, 0], k1=0)  # OutOfRange
    await call("retrieve_many", coll, np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32), k1=5, k2=3, lam=0.5, with_keys=True)
    await call("retrieve_many", coll, [[1, 0, 0], [1, 0]])  # the second has the wrong dimension
    await call("reward", coll, 1.0, [a, "b"])
    await call("reward", coll, -1.0, [ids[0]], next_q=0.5)
    await call("reward", coll, 1.0, [a, "missing"])  # NoSuchMemory, nothing changes
    await call("get", coll, a, with_vector=True)
    await call("get", coll, "task-9")
    await call("get", coll, 999)  # NoSuchMemory
    await call("mget", coll, [a, "b", 999, "dict-form"], with_vector=True)
    await call("history", coll, a)
    await call("history", coll, "b", count=1)
    await call("set_attrs", coll, "b", {"user": "u9", "nested": {"x": [1, 2]}})
    await call("get_attrs", coll, "b")
    await call("set_attrs", coll, "b", None)
    await call("get_attrs", coll, "b")
    await call("set_payload", coll, "b", b"\x00\xff")
    await call("set_vector", coll, "b", [0.8, 0.2, 0])
    await call("set_vector", coll, "b", [1, 0])  # wrong dimension
    await call("add", coll, [0.7, 0.3, 0], key="b", replace=True, payload="replaced")
    await call("get", coll, "b", with_vector=True)
    await call("ttl", coll, "b", view=lambda t: 95 <= t <= 100)
    await call("persist", coll, "b")
    await call("persist", coll, "b")
    await call("ttl", coll, "b")
    await call("expire", coll, "dict-form", 0)  # ≤ 0 deletes now
    await call("count", coll)
    await call("count", coll, {"user": "u0"})
    await call("scan", coll, 0, count=3, with_payload=True, with_vector=True)
    await call("scan", coll, 0, count=100, filter={"user": "u1"})
    await call("index_add", coll, "i")
    await call("index_list", coll)
    await call("index_drop", coll, "i")
    await call("index_list", coll)
    await call("snapshot", coll, "base")
    await call("snapshot", coll, "base")  # SnapshotExists
    await call("snapshots", coll)
    await call("delete", coll, ids[0], "task-9", "nope", 999)
    await call("delete_where", coll, {"user": "u1"})
    await call("delete_where", coll, None)  # ValueError
    await call("rollback", coll, "base")
    await call("rollback", coll, "nope")  # NoSuchSnapshot
    await call("count", coll)
    await call("delete_snapshot", coll, "base")
    await call("delete_snapshot", coll, "base")
    await call("prune", coll, q_below=0.01, filter={"user": "u0"}, dry_run=True)
    await call("prune", coll, max_count=5)
    await call("prune", coll)  # no criterion: refused
    await call("set_prune_policy", coll, q_below=0.5, min_visits=2, older=3600, idle=60, max_count=100, filter={"user": "u0"}, every=3600)
    await call("prune_policy", coll)
    await call("set_prune_policy", coll, every=3600)  # no criterion: refused, unchanged
    await call("prune_policy", coll)
    await call("prune_policy_off", coll)
    await call("prune_policy", coll)
    await call("checkpoint")
    await call("checkpoint", full=True)
    await call("verify", coll)
    await call("compact", coll, wait=True)
    await call("compact", coll)  # started in the background
    await call("compact", coll + "-missing")
    await call("drop", coll)
    await call("info", coll)  # NoSuchCollection


async def _run(client: Any, coll: str) -> tuple[list[Any], set[str]]:
    """The scenario through ``client`` (sync or async): its log and the methods it called."""
    log: list[Any] = []
    called: set[str] = set()

    async def call(name: str, *args: Any, view: Callable[[Any], Any] = lambda r: r, **kwargs: Any) -> Any:
        called.add(name)
        try:
            r = getattr(client, name)(*args, **kwargs)
            if inspect.isawaitable(r):
                r = await r
        except (memrl.MemrlError, ValueError) as e:
            log.append((name, _plain(e, coll)))
            return None
        log.append((name, _plain(view(r), coll)))
        return r

    await _scenario(call, coll)
    return log, called


def test_every_method_matches_client(server):
    colls = ["t_" + uuid.uuid4().hex[:12] for _ in range(2)]
    sync = memrl.Client(port=server.port)
    try:
        want, _ = asyncio.run(_run(sync, colls[0]))
    finally:
        sync.close()

    async def main() -> tuple[list[Any], set[str]]:
        async with memrl.AsyncClient(port=server.port) as ac:
            return await _run(ac, colls[1])

    got, called = asyncio.run(main())
    commands = {n for n, v in vars(_Commands).items() if callable(v) and not n.startswith("_")}
    assert commands - called == set(), "the scenario must call every command method"
    assert len(got) == len(want)
    for w, g in zip(want, got):
        assert g == w
    # The scenario is not vacuous: it saw results and each kind of failure.
    raised = {r[1][1] for r in got if isinstance(r[1], tuple) and r[1][0] == "raised"}
    assert {"CollectionExists", "MemoryExists", "ValueError", "OutOfRange", "NoSuchMemory", "SnapshotExists",
            "NoSuchSnapshot", "NoSuchCollection"} <= raised
    assert dict(got)["verify"]["damaged"] == ("int", 0)


def _parity_problems(sync_cls: type, async_cls: type) -> list[str]:
    """What ``async_cls`` lacks of ``sync_cls``'s public methods: a missing method, a
    different signature, or a method that is not a coroutine (or async iterator)."""
    problems: list[str] = []
    for name, member in inspect.getmembers(sync_cls):
        if name.startswith("_") or not callable(member):
            continue
        amember = getattr(async_cls, name, None)
        if amember is None:
            problems.append(f"{name}: missing")
            continue
        sp = list(inspect.signature(member).parameters.values())
        ap = list(inspect.signature(amember).parameters.values())
        if sp != ap:
            problems.append(f"{name}: signature {ap} != {sp}")
        if isinstance(inspect.getattr_static(sync_cls, name), classmethod):
            ok = isinstance(inspect.getattr_static(async_cls, name), classmethod)
        elif inspect.isgeneratorfunction(member):
            ok = inspect.isasyncgenfunction(amember)
        elif name == "pipeline":  # queueing is synchronous; execute is the coroutine
            ok = not inspect.iscoroutinefunction(amember)
        else:
            ok = inspect.iscoroutinefunction(amember)
        if not ok:
            problems.append(f"{name}: not the asyncio counterpart")
    if hasattr(sync_cls, "__enter__") and not (hasattr(async_cls, "__aenter__") and hasattr(async_cls, "__aexit__")):
        problems.append("no async context manager")
    return problems


def test_every_client_method_has_an_async_counterpart():
    assert _parity_problems(memrl.Client, memrl.AsyncClient) == []
    assert inspect.isasyncgenfunction(memrl.AsyncClient.scan_iter)
    # A pipeline queues synchronously (the same methods as Pipeline's); sending is the coroutine.
    for name, member in inspect.getmembers(memrl.Pipeline):
        if not name.startswith("_") and callable(member):
            amember = getattr(memrl.AsyncPipeline, name)
            assert inspect.signature(amember).parameters == inspect.signature(member).parameters, name
            assert inspect.iscoroutinefunction(amember) == (name in ("execute", "reset")), name
    assert hasattr(memrl.AsyncPipeline, "__aenter__") and hasattr(memrl.AsyncPipeline, "__aexit__")


def test_parity_check_finds_what_is_missing():
    # The check above would fail on a Client method with no asyncio counterpart.
    class Grown(memrl.Client):
        def new_command(self, coll: str) -> None:
            pass

        def get(self, coll: str, ref: Any, *, with_vector: bool = False, extra: int = 0) -> Any:
            pass

    problems = _parity_problems(Grown, memrl.AsyncClient)
    assert [p.split(":")[0] for p in problems] == ["get", "new_command"]


def test_scan_iter_pipeline_and_errors(server, coll):
    async def main() -> None:
        async with memrl.AsyncClient(port=server.port) as ac:
            await ac.create(coll, 2, metric="L2")
            ids = await ac.madd(coll, [memrl.NewMemory([1, i], attrs={"n": i}) for i in range(25)])
            seen = [m.id async for m in ac.scan_iter(coll, count=4)]
            assert seen == ids
            odd = [m.attrs["n"] async for m in ac.scan_iter(coll, count=3, filter=".n % 2 == 1")]
            assert odd == list(range(1, 25, 2))
            vecs = [m.vector async for m in ac.scan_iter(coll, with_vector=True, with_payload=True)]
            assert vecs[3].dtype == np.float32 and vecs[3].tolist() == [1, 3]

            await ac.add(coll, [1, 0], key="k", q=0.75)
            async with ac.pipeline() as p:
                assert p.delete(coll, "k").add(coll, [0, 1], key="k").get(coll, "k") is p
                assert len(p) == 3
                deleted, new_id, m = await p.execute()
            assert deleted == 1 and m.id == new_id and m.q == 0.0
            # An error at EXEC is that command's result; the others ran.
            p = ac.pipeline()
            p.add(coll, [1, 1], key="k2").add(coll, [1, 1], key="k2")
            res = await p.execute(raise_on_error=False)
            assert isinstance(res[0], int) and isinstance(res[1], memrl.MemoryExists)
            p.get(coll, "missing")
            with pytest.raises(memrl.NoSuchMemory):
                await p.execute()
            # A command refused while queuing: EXEC runs nothing.
            p.add(coll, [2, 2], key="never")
            p._call(["MEM.NOSUCHCOMMAND"], lambda r: r)
            with pytest.raises(memrl.TransactionError) as e:
                await p.execute()
            assert isinstance(e.value.command_error, memrl.UnknownCommand)
            assert await ac.mget(coll, ["never"]) == [None]
            # Without a transaction.
            p = ac.pipeline(transaction=False)
            for i in range(10):
                p.add(coll, [3, i])
            await p.reset()
            assert len(p) == 0 and await p.execute() == []
            for i in range(10):
                p.add(coll, [3, i])
            assert len(set(await p.execute())) == 10

            # Arguments are checked when the coroutine runs, as a coroutine's body would be.
            pending = ac.madd(coll, [])
            with pytest.raises(ValueError):
                await pending
            with pytest.raises(redis.exceptions.ResponseError):  # memrl errors are redis-py's too
                await ac.info(coll + "-missing")
            with pytest.raises(memrl.WatchNotSupported):
                await ac._call(["WATCH", "x"], lambda r: r)
            assert await ac.count(coll) == 25 + 2 + 10

    asyncio.run(main())


def test_concurrent_commands_share_the_pool(server, coll):
    async def main() -> None:
        async with memrl.AsyncClient(port=server.port) as ac:
            await ac.create(coll, 2, metric="L2", alpha=0.25)
            ids = await asyncio.gather(*(ac.add(coll, [i, 1], key=f"k{i}", payload=str(i)) for i in range(200)))
            assert len(set(ids)) == 200
            mems = await asyncio.gather(*(ac.get(coll, f"k{i}") for i in range(200)))
            assert [m.payload for m in mems] == [str(i).encode() for i in range(200)]
            assert [m.id for m in mems] == ids
            qs = await asyncio.gather(*(ac.reward(coll, 1.0, [i]) for i in ids))
            assert qs == [[0.25]] * 200
            assert await ac.count(coll) == 200

    asyncio.run(main())


def test_cancelled_command_leaves_no_reply_behind(server, coll):
    """A command cancelled mid-flight must not leave its reply for the next command on
    the same connection (redis-py drops such a connection): every later reply is its own."""

    async def main() -> tuple[int, int]:
        async with memrl.AsyncClient(port=server.port) as ac:
            await ac.create(coll, 2, metric="L2")
            await ac.add(coll, [1, 0], key="a", payload=b"A" * 4096)
            await ac.add(coll, [0, 1], key="b", payload=b"B")
            cancelled = done = 0
            for i in range(300):
                t = asyncio.ensure_future(ac.get(coll, "a"))
                for _ in range(i % 7):  # cancel at varying points: before send, between, in the read
                    await asyncio.sleep(0)
                t.cancel()
                try:
                    m = await t
                    assert m.key == "a" and m.payload == b"A" * 4096
                    done += 1
                except asyncio.CancelledError:
                    cancelled += 1
                m = await ac.get(coll, "b")
                assert m.key == "b" and m.payload == b"B"
            return cancelled, done

    cancelled, _ = asyncio.run(main())
    assert cancelled > 0


def test_construction_close_and_from_url(server, coll):
    with pytest.raises(ValueError):
        memrl.AsyncClient(port=server.port, decode_responses=True)
    with pytest.raises(ValueError):
        memrl.AsyncClient(redis_client=aioredis.Redis(port=server.port, decode_responses=True))

    async def main() -> None:
        ac = memrl.AsyncClient.from_url(f"redis://127.0.0.1:{server.port}")
        assert await ac.ping() is True
        await ac.create(coll, 2)
        assert coll in await ac.list()
        await ac.close()
        assert ac.redis.connection_pool._in_use_connections == set()
        assert all(not c.is_connected for c in ac.redis.connection_pool._available_connections)
        # A wrapped redis.asyncio client stays usable: its pool is its owner's.
        r = aioredis.Redis(port=server.port)
        wrapped = memrl.AsyncClient(redis_client=r)
        assert (await wrapped.info(coll)).dim == 2
        await wrapped.close()
        assert await r.execute_command("MEM.COUNT", coll) == 0
        await r.close(close_connection_pool=True)

    asyncio.run(main())


def test_connection_failed():
    import socket

    async def main(port: int) -> None:
        async with memrl.AsyncClient(port=port) as ac:
            with pytest.raises(memrl.ConnectionFailed):
                await ac.list()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening: connection refused
        asyncio.run(main(s.getsockname()[1]))
