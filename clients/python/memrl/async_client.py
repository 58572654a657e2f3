"""The asyncio client: :class:`AsyncClient`, :class:`Client`'s methods as coroutines.

It runs on ``redis.asyncio`` (redis-py ≥ 4.3) and takes its method set from
the same :class:`~memrl.client._Commands` as :class:`Client`: each command's
arguments are built, and its reply decoded, by the very code the
synchronous client runs; only sending differs. So the two clients take the
same arguments, return the same types and raise the same
:mod:`memrl.errors` classes.

    async with memrl.AsyncClient("127.0.0.1", 6390) as m:
        i = await m.add("plans", [0.1, 0.2, 0.3, 0.4], key="task-9")
        hits = await m.retrieve("plans", [0.1, 0.2, 0.3, 0.4], k2=3, lam=0.5)
        async for mem in m.scan_iter("plans"):
            ...
        async with m.pipeline() as p:      # MULTI … EXEC
            p.delete("plans", "task-9")    # queueing is synchronous
            p.add("plans", [0.4, 0.3, 0.2, 0.1], key="task-9")
            deleted, new_id = await p.execute()
"""

from __future__ import annotations

import functools
from typing import Any, AsyncIterator, Callable, Optional

import redis
import redis.asyncio as aioredis

from .client import _Commands, _decode_results, _Queue, _refuse_decoding
from .errors import from_redis
from .types import Memory


class AsyncClient(_Commands):
    """An asyncio memrl connection pool (``redis.asyncio``'s), for one event loop.

    ``AsyncClient(host, port, password=…, username=…, ssl=…)`` takes
    ``redis.asyncio.Redis``'s keyword arguments, except ``decode_responses``
    (payloads are binary), or wraps an existing one with
    ``AsyncClient(redis_client=r)``. Every :class:`~memrl.Client` method is
    here as a coroutine with the same arguments and result; ``scan_iter`` is
    an async iterator, ``pipeline`` returns an :class:`AsyncPipeline`. Use
    it as ``async with`` or ``await client.close()`` when done.

    A command cancelled while it waits for its reply (``asyncio.wait_for``,
    a cancelled task) may still have run on the server, as with any
    request already sent; redis-py drops that connection, so no later
    command reads the cancelled one's reply.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 6390, *, redis_client: Optional[aioredis.Redis] = None, **kwargs: Any):
        _refuse_decoding(kwargs, redis_client)
        # INVARIANT: _owns_pool is True when this client made the connection
        # pool, so close() must disconnect it (a wrapped client's pool is its
        # owner's to close).
        self._owns_pool = redis_client is None
        self.redis = redis_client if redis_client is not None else aioredis.Redis(host=host, port=port, **kwargs)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "AsyncClient":
        """``redis://[user:password@]host:port`` (or ``rediss://`` for TLS)."""
        client = cls(redis_client=aioredis.Redis.from_url(url, **kwargs))
        client._owns_pool = True
        return client

    async def _call(self, args: list[Any], parse: Callable[[Any], Any]) -> Any:
        try:
            reply = await self.redis.execute_command(*args)
        except redis.RedisError as e:
            raise from_redis(e) from e
        return parse(reply)

    async def scan_iter(self, coll: str, *, count: Optional[int] = None, filter: Any = None, with_payload: bool = False, with_vector: bool = False) -> AsyncIterator[Memory]:
        """Every memory of the collection, page by page (MEM.SCAN until the cursor is 0),
        as an async iterator: ``async for m in client.scan_iter(coll)``.

        Each memory present for the whole iteration is yielded exactly once.
        """
        cursor = 0
        while True:
            page = await self.scan(coll, cursor, count=count, filter=filter, with_payload=with_payload, with_vector=with_vector)
            for m in page.memories:
                yield m
            cursor = page.cursor
            if cursor == 0:
                return

    def pipeline(self, transaction: bool = True) -> "AsyncPipeline":
        """Queue commands and send them together (see :meth:`Client.pipeline`); queueing is
        synchronous, ``await p.execute()`` sends them::

            async with client.pipeline() as p:
                p.delete("plans", "task-9")
                p.add("plans", vec, key="task-9")
                _, new_id = await p.execute()
        """
        return AsyncPipeline(self.redis.pipeline(transaction=transaction), self.vectors_as_numpy, transaction)

    async def close(self) -> None:
        """Close the connections (and the pool, unless it was given with ``redis_client``)."""
        close = getattr(self.redis, "aclose", None) or self.redis.close  # redis-py ≥ 5.0.1 names it aclose
        await close(close_connection_pool=True if self._owns_pool else None)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _as_coroutine(name: str) -> Callable[..., Any]:
    """``_Commands.<name>`` as a coroutine function: the arguments are checked and built
    when it is awaited (as a coroutine's body runs), and the reply awaited and decoded."""
    build = getattr(_Commands, name)

    @functools.wraps(build)
    async def method(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        return await build(self, *args, **kwargs)

    method.__qualname__ = f"AsyncClient.{name}"
    return method


# Every public command method, so a method added to _Commands is in
# AsyncClient at once (tests/test_async_client.py checks that against Client).
for _name, _value in list(vars(_Commands).items()):
    if callable(_value) and not _name.startswith("_"):
        setattr(AsyncClient, _name, _as_coroutine(_name))
del _name, _value


class AsyncPipeline(_Queue):
    """Queued commands (see :meth:`AsyncClient.pipeline`). Each method queues at once and
    returns the pipeline; ``await execute()`` sends them and returns the decoded results
    in order, as :meth:`memrl.Pipeline.execute` does."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the queued commands; return each one's decoded result, failures raised or
        returned as :meth:`memrl.Pipeline.execute` says."""
        parsers = self._take_parsers()
        try:
            replies = await self._pipe.execute(raise_on_error=False)
        except redis.RedisError as e:
            raise self._failed(e) from e
        return _decode_results(parsers, replies, raise_on_error)

    async def reset(self) -> None:
        """Drop the queued commands."""
        self._parsers = []
        await self._pipe.reset()

    async def __aenter__(self) -> "AsyncPipeline":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.reset()
