"""Exceptions: one class per rule the server enforces.

The server answers bad input with an error line whose first word is its
kind (``ERR``, ``NOAUTH``, ``WRONGPASS``, ``NOPERM``, ``OOM``,
``EXECABORT``, ``NOPROTO``) and whose text says which rule was broken
(docs/PROTOCOL.md, "Errors"). :func:`from_redis` turns redis-py's exception
for such a line into the most specific class below, so callers can write
``except NoSuchMemory`` instead of matching message text.

Every class derives from :class:`MemrlError`; those for error replies also
derive from redis-py's ``ResponseError`` (and the connection ones from its
``ConnectionError``), so code written against redis-py keeps working.
"""

from __future__ import annotations

import ast
import re

import redis.exceptions as _rx


class MemrlError(Exception):
    """Base of every exception this package raises on purpose."""


class ConnectionFailed(MemrlError, _rx.ConnectionError):
    """The connection failed or timed out; the command may or may not have run."""


class ResponseError(MemrlError, _rx.ResponseError):
    """The server refused the command with an error reply.

    ``kind`` is the reply's first word (``ERR``, ``NOPERM``, …) and
    ``message`` the rest. A refused command changed nothing. For MEM.MADD,
    ``position`` is the memory at fault, counting from 1 (else None); for
    MEM.MRETRIEVE (``retrieve_many``), the query at fault.
    """

    position: "int | None" = None

    def __init__(self, message: str, kind: str = "ERR"):
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __str__(self) -> str:
        return f"{self.kind} {self.message}"


# --- ERR replies, by the rule they enforce ---------------------------------


class NoSuchCollection(ResponseError):
    """The collection named does not exist (``ERR no such collection``)."""


class CollectionExists(ResponseError):
    """MEM.CREATE of a name already in use (``ERR collection already exists``)."""


class NoSuchMemory(ResponseError):
    """No live memory has that id or key (``ERR no such memory``); expired ones count as gone."""


class MemoryExists(ResponseError):
    """An add named an id or key a live memory holds (``ERR memory id|key already exists``)."""


class InvalidVector(ResponseError):
    """Wrong dimension, non-finite or too large components, or an all-zero COSINE vector."""


class InvalidAttributes(ResponseError):
    """Attributes that are not one JSON object within the server's bounds."""


class InvalidKey(ResponseError):
    """A key that is empty or longer than 512 bytes."""


class FilterError(ResponseError):
    """A filter expression that cannot parse or type-check (``ERR filter: … at column n``)."""


class CommandSyntaxError(ResponseError):
    """An unknown option or malformed argument (``ERR syntax error``, ``… must be an integer``).

    A server older than a feature this client uses (``FILTER``, ``WITHVECTOR``)
    also answers with this.
    """


class WrongArity(ResponseError):
    """Too few or too many arguments (``ERR wrong number of arguments``)."""


class UnknownCommand(ResponseError):
    """The server does not know the command (an older server, or a typo)."""


class OutOfRange(ResponseError):
    """A number outside its documented range (``ERR parameter out of range``)."""


class LogFailed(ResponseError):
    """The server's write-ahead log failed: it takes no more writes until restarted.

    Never retry a write after this: the server has stopped writes on purpose
    (a failed fsync is fatal, never retried).
    """


class DataDamaged(ResponseError):
    """A stored vector or payload fails its checksum (``ERR data file damaged``)."""


class ServerLimit(ResponseError):
    """A server limit was reached: collections, file descriptors, reply size, queued commands."""


class TransactionError(ResponseError):
    """MULTI/EXEC misuse, or EXEC refused (``EXECABORT``): the transaction ran nothing.

    When a command was refused while queuing, ``command_error`` is its error.
    """

    command_error: "ResponseError | None" = None


class WatchNotSupported(ResponseError):
    """memrl has no keys to WATCH; MULTI/EXEC is atomic without it."""


class NoSuchSnapshot(ResponseError):
    """MEM.ROLLBACK named no snapshot of the collection."""


class SnapshotExists(ResponseError):
    """MEM.SNAPSHOT named a snapshot the collection already has."""


class InvalidSnapshotName(ResponseError):
    """Snapshot names are 1-128 printable ASCII characters."""


# --- other reply kinds ---------------------------------------------------------


class AuthError(ResponseError):
    """``NOAUTH`` (authenticate first) or ``WRONGPASS`` (bad user or password)."""


class NoPermission(ResponseError):
    """``NOPERM``: the user is read-only and the command writes."""


class OutOfMemory(ResponseError):
    """``OOM``: the server's client-memory budget (``--maxmemory``) is spent; retry smaller or later."""


# (prefix of the ERR message, class), most specific first.
_ERR_RULES: list[tuple[str, type[ResponseError]]] = [
    ("no such collection", NoSuchCollection),
    ("collection already exists", CollectionExists),
    ("no such memory", NoSuchMemory),
    ("memory id already exists", MemoryExists),
    ("memory key already exists", MemoryExists),
    ("memory key collides", MemoryExists),
    ("invalid vector", InvalidVector),
    ("vector dimension does not match", InvalidVector),
    ("invalid attributes", InvalidAttributes),
    ("invalid key", InvalidKey),
    ("filter:", FilterError),
    ("syntax error", CommandSyntaxError),
    ("wrong number of arguments", WrongArity),
    ("unknown command", UnknownCommand),
    ("parameter out of range", OutOfRange),
    ("wal: log failed", LogFailed),
    ("data file damaged", DataDamaged),
    ("too many collections", ServerLimit),
    ("out of file descriptors", ServerLimit),
    ("the reply would be", ServerLimit),
    ("the transaction already holds", ServerLimit),
    ("exec without multi", TransactionError),
    ("discard without multi", TransactionError),
    ("multi calls can not be nested", TransactionError),
    ("watch ", WatchNotSupported),
    ("no such snapshot", NoSuchSnapshot),
    ("snapshot already exists", SnapshotExists),
    ("invalid snapshot name", InvalidSnapshotName),
    ("too many snapshots", ServerLimit),
    ("snapshot file damaged", DataDamaged),
    ("memory id is held by a snapshot", MemoryExists),
]

_BATCH_POSITION = re.compile(r"^(?:memory|query) (\d+): ")

# Kinds of error reply besides ERR, by their first word.
_KIND_CLASSES: dict[str, type[ResponseError]] = {
    "NOAUTH": AuthError,
    "WRONGPASS": AuthError,
    "NOPERM": NoPermission,
    "OOM": OutOfMemory,
    "EXECABORT": TransactionError,
}

# redis-py strips the first word of the kinds it knows and raises its own
# class for them; this puts the word back.
_REDIS_PY_KINDS: dict[type, str] = {
    _rx.AuthenticationError: "NOAUTH",
    _rx.NoPermissionError: "NOPERM",
    _rx.ExecAbortError: "EXECABORT",
}


def classify(line: str) -> ResponseError:
    """Return the exception for a server error line such as ``ERR no such memory: 9``.

    A line without a kind word (redis-py strips ``ERR``) is taken as ``ERR``.
    """
    kind, _, rest = line.partition(" ")
    if kind in _KIND_CLASSES:
        return _KIND_CLASSES[kind](rest, kind)
    if kind == "ERR":
        line = rest
    elif kind == "NOPROTO":  # HELLO 3: the server speaks RESP2 only
        return ResponseError(rest, kind)
    # MEM.MADD names the memory at fault: "memory 3: <the rule>"; MEM.MRETRIEVE the query.
    at = _BATCH_POSITION.match(line)
    rule = line[at.end():] if at else line
    low = rule.lower()
    cls = next((cl for prefix, cl in _ERR_RULES if low.startswith(prefix)), None)
    if cls is None:
        cls = CommandSyntaxError if " must be " in low else ResponseError  # "K1 must be an integer, got …"
    err = cls(line, "ERR")
    if at:
        err.position = int(at.group(1))
    return err


_PIPELINE_NOTE = ") of pipeline caused error: "


def _strip_pipeline_note(msg: str) -> str:
    """redis-py prefixes a pipelined command's error with ``Command # n (args) of pipeline
    caused error: ``; the server's own line follows it. redis.asyncio 4.3 (Debian 12's) follows
    it with the exception's args tuple (``('line',)``) instead: the line is taken out."""
    if msg.startswith("Command # "):
        _, sep, rest = msg.partition(_PIPELINE_NOTE)
        if sep:
            if rest.startswith("(") and rest.endswith(",)"):
                try:
                    args = ast.literal_eval(rest)
                except (ValueError, SyntaxError):
                    return rest
                if isinstance(args, tuple) and len(args) == 1 and isinstance(args[0], str):
                    return args[0]
            return rest
    return msg


def from_redis(exc: BaseException) -> BaseException:
    """Map a redis-py exception to this package's; anything else is returned as is."""
    if isinstance(exc, MemrlError):
        return exc
    out: BaseException
    kind = next((k for cls, k in _REDIS_PY_KINDS.items() if type(exc) is cls), None)
    if kind is not None:
        out = classify(f"{kind} {exc}")
    elif isinstance(exc, _rx.AuthenticationError):  # ERR invalid password, …
        out = AuthError(str(exc), "ERR")
    elif isinstance(exc, (_rx.ConnectionError, _rx.TimeoutError)):
        out = ConnectionFailed(str(exc))
    elif isinstance(exc, _rx.ResponseError):
        out = classify(_strip_pipeline_note(str(exc)))
    else:
        return exc
    out.__cause__ = exc
    return out
