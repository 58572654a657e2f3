"""memrl: a Python client for the memrl server (episodic memory with learned utility Q).

    import memrl
    m = memrl.Client("127.0.0.1", 6390)
    m.create("plans", dim=4)
    i = m.add("plans", [0.1, 0.2, 0.3, 0.4], payload=b"book first", attrs={"user": "u7"}, key="task-9")
    hits = m.retrieve("plans", [0.1, 0.2, 0.3, 0.4], k1=10, k2=3, lam=0.5, with_keys=True)
    m.reward("plans", 1.0, [h.id for h in hits])

Vectors are numpy arrays (when numpy is installed) or lists, sent packed as
FP32; results are dataclasses (:class:`Hit`, :class:`Memory`, …) with floats
parsed; errors are :mod:`memrl.errors` classes. :class:`AsyncClient` has the
same methods as coroutines (on ``redis.asyncio``). :mod:`memrl.vecdb` adapts a
collection to MemOS's vector-database interface. The commands' full
meaning is in the server's docs/PROTOCOL.md.
"""

from .async_client import AsyncClient, AsyncPipeline
from .client import Client, Pipeline
from .errors import (
    AuthError,
    CollectionExists,
    CommandSyntaxError,
    ConnectionFailed,
    DataDamaged,
    FilterError,
    InvalidAttributes,
    InvalidKey,
    InvalidSnapshotName,
    InvalidVector,
    LogFailed,
    MemoryExists,
    MemrlError,
    NoPermission,
    NoSuchCollection,
    NoSuchMemory,
    NoSuchSnapshot,
    OutOfMemory,
    OutOfRange,
    ResponseError,
    ServerLimit,
    SnapshotExists,
    TransactionError,
    UnknownCommand,
    WatchNotSupported,
    WrongArity,
)
from .filters import to_filter
from .types import CollectionInfo, HistoryEntry, Hit, Memory, NewMemory, ScanPage, Snapshot

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Pipeline",
    "AsyncClient",
    "AsyncPipeline",
    "Hit",
    "Memory",
    "NewMemory",
    "CollectionInfo",
    "ScanPage",
    "HistoryEntry",
    "Snapshot",
    "to_filter",
    "MemrlError",
    "ConnectionFailed",
    "ResponseError",
    "NoSuchCollection",
    "CollectionExists",
    "NoSuchMemory",
    "MemoryExists",
    "InvalidVector",
    "InvalidAttributes",
    "InvalidKey",
    "FilterError",
    "CommandSyntaxError",
    "WrongArity",
    "UnknownCommand",
    "OutOfRange",
    "LogFailed",
    "DataDamaged",
    "ServerLimit",
    "TransactionError",
    "WatchNotSupported",
    "AuthError",
    "NoPermission",
    "OutOfMemory",
    "NoSuchSnapshot",
    "SnapshotExists",
    "InvalidSnapshotName",
]
