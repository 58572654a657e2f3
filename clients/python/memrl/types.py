"""Result types: what the server's replies mean, with floats parsed and fields named."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Hit:
    """One row of MEM.RETRIEVE, best first.

    ``sim`` is the similarity (cosine, dot product, or minus the squared
    distance), ``q`` the learned utility, ``score`` phase 2's
    ``(1-λ)·z(sim) + λ·clip(z(Q))``. ``payload``, ``attrs`` and ``key`` are
    None unless asked for (``with_payload`` …) or absent on the memory.
    """

    id: int
    sim: float
    q: float
    score: float
    payload: Optional[bytes] = None
    attrs: Optional[dict[str, Any]] = None
    key: Optional[str | bytes] = None


@dataclass
class Memory:
    """A memory as MEM.GET, MEM.MGET and MEM.SCAN return it.

    ``created``, ``updated`` and ``expires`` are Unix milliseconds
    (``expires`` None when it never expires). ``vector`` is set only when
    asked for (``with_vector``): a numpy float32 array when numpy is
    installed, else a list of floats; in a COSINE collection it is the stored,
    normalised vector. ``payload`` is None when a scan did not ask for it.
    ``==`` compares every field but the vector.
    """

    id: int
    q: float = 0.0
    visits: int = 0
    last_reward: float = 0.0
    created: int = 0
    updated: int = 0
    payload: Optional[bytes] = None
    attrs: Optional[dict[str, Any]] = None
    key: Optional[str | bytes] = None
    expires: Optional[int] = None
    # Not compared by ==: numpy arrays have no single truth value.
    vector: Any = field(default=None, compare=False)
    # Fields a newer server sends that this client does not know, raw.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class CollectionInfo:
    """MEM.INFO: a collection's shape and learning parameters."""

    name: str
    dim: int
    metric: str
    count: int
    alpha: float
    gamma: float
    qinit: float
    rows: int
    next_id: int
    index: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class HistoryEntry:
    """One update of a memory's utility, as MEM.HISTORY returns it (newest first).

    ``time`` is Unix milliseconds; ``q`` and ``visits`` are after the update.
    A ``MERGE`` by ``add(..., dedup=...)`` sets Q without a reward: its entry
    keeps the visits (and repeats the last reward).
    """

    time: int
    reward: float
    q: float
    visits: int


@dataclass
class Snapshot:
    """One entry of MEM.SNAPSHOTS."""

    name: str
    created_ms: int  # unix milliseconds
    memories: int


@dataclass
class ScanPage:
    """One page of MEM.SCAN: pass ``cursor`` to the next call; 0 means the scan is done."""

    cursor: int
    memories: list[Memory]


@dataclass
class NewMemory:
    """One memory for :meth:`memrl.Client.madd`: the arguments of :meth:`memrl.Client.add`."""

    vector: Any
    id: Optional[int] = None
    q: Optional[float] = None
    payload: Optional[bytes | str] = None
    attrs: Optional[dict[str, Any]] = None
    key: Optional[str | bytes] = None
    ttl: Optional[int] = None
