"""Encoding arguments and decoding replies (no network here).

The client never uses redis-py's ``decode_responses``: payloads are binary,
so every reply arrives as bytes and is decoded here, field by field.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, Iterable, Optional

try:  # numpy is optional: vectors are lists without it.
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None

from .types import CollectionInfo, HistoryEntry, Hit, Memory, Snapshot

HAVE_NUMPY = _np is not None


def pack_vector(vector: Any) -> bytes:
    """Pack a vector as the little-endian float32 bytes ``FP32`` takes.

    Accepts a numpy array (any float dtype, 1-D), a list or tuple of numbers,
    or bytes already packed (passed through). Raises ValueError for an empty
    vector, a non-1-D array or bytes whose length is not a multiple of 4; the
    server checks the dimension and finiteness.
    """
    if isinstance(vector, (bytes, bytearray, memoryview)):
        b = bytes(vector)
        if len(b) == 0 or len(b) % 4:
            raise ValueError(f"a packed vector is 4·d bytes, got {len(b)}")
        return b
    if _np is not None and isinstance(vector, _np.ndarray):
        if vector.ndim != 1 or vector.size == 0:
            raise ValueError(f"a vector must be 1-D and non-empty, got shape {vector.shape}")
        return _np.ascontiguousarray(vector, dtype="<f4").tobytes()
    values = [float(x) for x in vector]
    if not values:
        raise ValueError("a vector must be non-empty")
    return struct.pack(f"<{len(values)}f", *values)


def pack_vectors(vectors: Any) -> list[bytes]:
    """Pack many vectors (a 2-D numpy array, one per row, or a sequence of
    vectors :func:`pack_vector` takes), each as ``FP32`` takes it."""
    if _np is not None and isinstance(vectors, _np.ndarray):
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ValueError(f"queries must be a 2-D array of one vector per row, got shape {vectors.shape}")
        rows = _np.ascontiguousarray(vectors, dtype="<f4")
        return [r.tobytes() for r in rows]
    return [pack_vector(v) for v in vectors]


def unpack_vector(blob: bytes, as_numpy: bool = True) -> Any:
    """The inverse of :func:`pack_vector`: a float32 numpy array, or a list."""
    if _np is not None and as_numpy:
        return _np.frombuffer(blob, dtype="<f4").copy()
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def encode_key(key: str | bytes) -> bytes:
    """Keys are any 1..512 bytes; strings are sent as UTF-8."""
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    raise TypeError(f"a key is str or bytes, got {type(key).__name__}")


def decode_key(raw: Optional[bytes]) -> Optional[str | bytes]:
    """A key as str when it is UTF-8 (as every key this client writes is), else bytes."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def ref_args(ref: int | str | bytes) -> list[Any]:
    """A memory reference: an int is an id, a str or bytes a key (``KEY k``)."""
    if isinstance(ref, bool):
        raise TypeError("a memory reference is an int id or a str/bytes key, not a bool")
    if isinstance(ref, int):
        if ref < 0:
            raise ValueError(f"memory ids are 0..2**63-1, got {ref}")
        return [ref]
    return [b"KEY", encode_key(ref)]


def encode_attrs(attrs: Optional[dict[str, Any]]) -> bytes:
    """Attributes as compact JSON; None (or {}) as the empty string, which removes them.

    Raises ValueError for NaN or infinite numbers (JSON has none) and TypeError
    for values JSON cannot hold, before anything is sent.
    """
    if attrs is None:
        return b""
    if not isinstance(attrs, dict):
        raise TypeError(f"attributes are a dict, got {type(attrs).__name__}")
    return json.dumps(attrs, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def decode_attrs(raw: Optional[bytes]) -> Optional[dict[str, Any]]:
    if raw is None or raw == b"":
        return None
    return json.loads(raw)


def fnum(x: Any) -> float:
    """A float reply (floats are bulk strings; integers may come as integers)."""
    if isinstance(x, (bytes, bytearray)):
        return float(x.decode("ascii"))
    return float(x)


def fmt_float(x: float) -> str:
    """A float argument in shortest round-trip form; refuses NaN and infinities locally."""
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"numbers must be finite, got {x}")
    return repr(x)


def pairs(reply: Iterable[Any]) -> dict[str, Any]:
    """A field/value array as a dict with str field names."""
    items = list(reply)
    return {items[i].decode("ascii"): items[i + 1] for i in range(0, len(items) - 1, 2)}


def parse_history(reply: Any) -> list[HistoryEntry]:
    """MEM.HISTORY's array of [time, reward, q, visits] as HistoryEntry values."""
    return [HistoryEntry(int(t), fnum(r), fnum(q), int(v)) for t, r, q, v in reply]


def parse_memory(reply: Any, as_numpy: bool = True) -> Optional[Memory]:
    """MEM.GET's field/value array as a Memory (None for a null, as MEM.MGET gives)."""
    if reply is None:
        return None
    f = pairs(reply)
    m = Memory(id=int(f.pop("id")))
    if "q" in f:
        m.q = fnum(f.pop("q"))
    if "visits" in f:
        m.visits = int(f.pop("visits"))
    if "last_reward" in f:
        m.last_reward = fnum(f.pop("last_reward"))
    if "created" in f:
        m.created = int(f.pop("created"))
    if "updated" in f:
        m.updated = int(f.pop("updated"))
    if "payload" in f:
        m.payload = f.pop("payload")
    if "attrs" in f:
        m.attrs = decode_attrs(f.pop("attrs"))
    if "key" in f:
        m.key = decode_key(f.pop("key"))
    if "expires" in f:
        e = f.pop("expires")
        m.expires = None if e is None else int(e)
    if "vector" in f:
        v = f.pop("vector")
        m.vector = None if v is None else unpack_vector(v, as_numpy)
    m.extra = f
    return m


def parse_hits(reply: Any, with_payload: bool, with_attrs: bool, with_keys: bool) -> list[Hit]:
    """MEM.RETRIEVE's rows: ``[id, sim, q, score (, payload) (, attrs) (, key)]``."""
    out = []
    for row in reply:
        h = Hit(id=int(row[0]), sim=fnum(row[1]), q=fnum(row[2]), score=fnum(row[3]))
        i = 4
        if with_payload:
            h.payload = row[i]
            i += 1
        if with_attrs:
            h.attrs = decode_attrs(row[i])
            i += 1
        if with_keys:
            h.key = decode_key(row[i])
        out.append(h)
    return out


def parse_snapshots(reply: Any) -> list[Snapshot]:
    return [Snapshot(name=bytes(e[0]).decode("utf-8"), created_ms=int(e[1]), memories=int(e[2])) for e in reply]


def parse_info(reply: Any) -> CollectionInfo:
    """MEM.INFO's field/value array. Fields without an attribute stay in ``extra``; of
    those, ``prune_policy`` (the policy as MEM.CONFIG takes it, "" for none) is text
    and comes back as ``str``; the rest are numbers or arrays of numbers."""
    f = pairs(reply)
    s = lambda k: f.pop(k).decode("utf-8")  # noqa: E731
    if isinstance(f.get("prune_policy"), (bytes, bytearray)):
        f["prune_policy"] = bytes(f["prune_policy"]).decode("utf-8")
    return CollectionInfo(
        name=s("name"),
        dim=int(f.pop("dim")),
        metric=s("metric"),
        count=int(f.pop("count")),
        alpha=fnum(f.pop("alpha")),
        gamma=fnum(f.pop("gamma")),
        qinit=fnum(f.pop("qinit")),
        rows=int(f.pop("rows")),
        next_id=int(f.pop("next_id")),
        index=s("index"),
        extra=f,
    )


def parse_prune_policy(reply: Any) -> Optional[dict[str, Any]]:
    """MEM.CONFIG … GET PRUNE's flat map as a dict with the client's argument names (None when empty)."""
    f = pairs(reply)
    if not f:
        return None
    names = {"qbelow": "q_below", "minvisits": "min_visits", "older": "older", "idle": "idle",
             "maxcount": "max_count", "filter": "filter", "every": "every"}
    out: dict[str, Any] = {}
    for k, v in f.items():
        if k == "qbelow":
            out["q_below"] = fnum(v)
        elif k == "filter":
            out["filter"] = v.decode("utf-8")
        elif k in names:
            out[names[k]] = int(v)
    return out


def ok(reply: Any) -> None:
    """A ``+OK`` reply (anything else is a protocol surprise)."""
    if reply not in (b"OK", "OK", True):
        raise ValueError(f"expected OK, got {reply!r}")
