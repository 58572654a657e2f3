"""Pieces that need no server: error classification, filter translation, vector packing."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

import memrl
from memrl import _codec as c
from memrl.errors import classify
from memrl.filters import to_filter


@pytest.mark.parametrize(
    "line,cls",
    [
        ('ERR no such collection: "x"', memrl.NoSuchCollection),
        ("no such memory: 9", memrl.NoSuchMemory),  # redis-py strips ERR
        ('ERR memory key already exists: "k" (memory 3)', memrl.MemoryExists),
        ("ERR memory id already exists: 7", memrl.MemoryExists),
        ("ERR invalid vector: component 1 is NaN; components must be finite", memrl.InvalidVector),
        ('ERR vector dimension does not match the collection: got 3, collection "p" has 4', memrl.InvalidVector),
        ("ERR invalid attributes: must be a JSON object", memrl.InvalidAttributes),
        ("ERR invalid key: keys are 1 to 512 bytes", memrl.InvalidKey),
        ('ERR filter: unexpected ")" at column 17', memrl.FilterError),
        ('ERR syntax error: unknown MEM.RETRIEVE option "FOO"', memrl.CommandSyntaxError),
        ('ERR K1 must be an integer, got "ten"', memrl.CommandSyntaxError),
        ("ERR parameter out of range: K1 must be 1..10000, got -1", memrl.OutOfRange),
        ("ERR wrong number of arguments for 'mem.get' command", memrl.WrongArity),
        ("ERR unknown command 'FOO', with args beginning with: 'x'", memrl.UnknownCommand),
        ("ERR wal: log failed: fsync: input/output error", memrl.LogFailed),
        ("ERR data file damaged: fails its checksum: memory 4", memrl.DataDamaged),
        ("ERR too many collections: the database holds 4096", memrl.ServerLimit),
        ("ERR out of file descriptors: too many open files", memrl.ServerLimit),
        ("ERR EXEC without MULTI", memrl.TransactionError),
        ("EXECABORT Transaction discarded because of previous errors.", memrl.TransactionError),
        ("NOAUTH Authentication required.", memrl.AuthError),
        ("WRONGPASS invalid username-password pair or user is disabled.", memrl.AuthError),
        ("NOPERM User ro has no permissions to run the 'mem.add' command", memrl.NoPermission),
        ("OOM client buffers are full", memrl.OutOfMemory),
        ("ERR WATCH is not supported: memrl has no keys to watch", memrl.WatchNotSupported),
    ],
)
def test_classify(line, cls):
    e = classify(line)
    assert type(e) is cls
    assert isinstance(e, memrl.MemrlError)
    first = line.split(" ")[0]
    kind = first if first in ("EXECABORT", "NOAUTH", "WRONGPASS", "NOPERM", "OOM") else "ERR"
    assert e.kind == kind
    assert str(e).startswith(kind + " ")


def test_classify_batch_position():
    e = classify('ERR memory 3: memory id already exists: 9 (named earlier in the batch)')
    assert type(e) is memrl.MemoryExists and e.position == 3
    assert classify("ERR memory id already exists: 9").position is None


def test_classify_unknown_error_is_plain_response_error():
    e = classify("ERR something new")
    assert type(e) is memrl.ResponseError and e.message == "something new"
    assert classify("NOPROTO unsupported protocol version").kind == "NOPROTO"


def test_pipelined_error_notes_are_stripped():
    # redis-py prefixes a pipelined command's error; redis.asyncio 4.3 puts the args tuple's repr after it.
    import redis.exceptions as rx
    from memrl.errors import from_redis

    for msg in ("Command # 2 (MEM.GET c 9) of pipeline caused error: no such memory: 9",
                "Command # 2 (MEM.GET c 9) of pipeline caused error: ('no such memory: 9',)"):
        e = from_redis(rx.ResponseError(msg))
        assert type(e) is memrl.NoSuchMemory and str(e) == "ERR no such memory: 9"
    # Something that only looks like a tuple is left as it is.
    e = from_redis(rx.ResponseError("Command # 1 (X) of pipeline caused error: (oops,)"))
    assert type(e) is memrl.ResponseError and e.message == "(oops,)"


def test_filter_dicts():
    assert to_filter(None) is None and to_filter({}) is None
    # Qdrant's MatchValue / MatchAny: equal, or a list holding the value ("has").
    assert to_filter({"user_id": "u7"}) == '.user_id has "u7"'
    assert to_filter({"a": 1, "b": 2.5, "ok": True}) == ".a has 1 and .b has 2.5 and .ok has 1"
    assert to_filter({"k": ["x", 3]}) == '.k has ["x", 3]'
    assert to_filter({"meta.source": "web"}) == '.meta.source has "web"'
    assert to_filter({"n": {"gte": 3, "$lt": 9}}) == ".n >= 3 and .n < 9"
    assert to_filter({"n": {"ne": "z", "nin": [1, 2]}}) == 'not (.n has "z") and not (.n has [1, 2])'
    assert to_filter({"n": {"eq": 2, "in": ["a"]}}) == '.n has 2 and .n has ["a"]'
    assert to_filter({"tags": {"contains": "plan"}}) == '"plan" in .tags'
    assert to_filter('.a == 1 or .b == "x"') == '.a == 1 or .b == "x"'


def test_filter_strings_are_quoted_safely():
    # A hostile value stays one string literal: quotes, backslashes, newlines
    # and non-ASCII are JSON-escaped.
    evil = 'u7" or .admin == 1 or "'
    f = to_filter({"user": evil})
    assert f == '.user has "u7\\" or .admin == 1 or \\""'
    assert to_filter({"s": "a\\b\n\u00e9'"}) == '.s has "a\\\\b\\n\\u00e9\'"'


@pytest.mark.parametrize(
    "bad",
    [{"a..b": 1}, {".a": 1}, {"a.": 1}, {"a b": 1}, {"": 1}, {"x": None}, {"x": math.nan}, {"x": {"between": 1}}, {"x": {"in": []}}, {"x": {"in": 3}}, {"x": object()}],
)
def test_filter_refuses_what_it_cannot_express(bad):
    with pytest.raises(ValueError):
        to_filter(bad)


def test_filter_type_errors():
    with pytest.raises(TypeError):
        to_filter(3)
    with pytest.raises(ValueError):
        to_filter("  ")


def test_pack_vector_forms():
    want = struct.pack("<3f", 1.0, -2.5, 0.125)
    assert c.pack_vector([1, -2.5, 0.125]) == want
    assert c.pack_vector((1, -2.5, 0.125)) == want
    assert c.pack_vector(np.array([1, -2.5, 0.125], dtype=np.float64)) == want
    assert c.pack_vector(np.array([1, -2.5, 0.125], dtype=">f4")) == want  # byte order fixed
    assert c.pack_vector(want) == want
    v = c.unpack_vector(want)
    assert v.dtype == np.float32 and v.tolist() == [1.0, -2.5, 0.125]
    assert c.unpack_vector(want, as_numpy=False) == [1.0, -2.5, 0.125]
    for bad in ([], b"", b"abc", np.zeros((2, 2))):
        with pytest.raises(ValueError):
            c.pack_vector(bad)


def test_refs():
    assert c.ref_args(7) == [7]
    assert c.ref_args("k") == [b"KEY", b"k"]
    assert c.ref_args(b"\xff") == [b"KEY", b"\xff"]
    with pytest.raises(TypeError):
        c.ref_args(True)
    with pytest.raises(ValueError):
        c.ref_args(-1)
    assert c.decode_key(b"\xff") == b"\xff" and c.decode_key("é".encode()) == "é"
