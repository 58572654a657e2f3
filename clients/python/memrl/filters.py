"""Translating MemOS-style dict filters to memrl's filter language.

memrl's filters are expressions (docs/PROTOCOL.md, "Filters";
engine/filter/doc.go): ``.user == "u7" and .step >= 3``. Front ends built
for other vector stores pass dicts instead; :func:`to_filter` turns those
into expressions, quoting every string so no value can change the
expression's meaning (a value is always a literal, never syntax).

A dict's entries are joined with ``and``. For each ``field: value``:

====================================  =========================================
``"u7"``, ``3``, ``2.5``, ``True``     ``.field == <literal>`` (True is 1, as the
                                       server reads JSON booleans)
``["a", "b"]`` (list or tuple)         ``.field in ["a", "b"]`` (any of)
``{"gt": 1, "lte": 5}``                ``.field > 1 and .field <= 5``; operators
                                       ``eq ne gt gte lt lte in nin contains``,
                                       with or without a leading ``$``
====================================  =========================================

``contains`` is ``"v" in .field`` (an element of an array attribute, or a
substring of a string attribute); ``nin`` is ``not (.field in [...])``.
Fields are top-level attribute names of ``A-Z a-z 0-9 _ -`` (the language's
selectors); anything else, ``None`` values (the language has no null: a null
attribute never matches), NaN and infinities raise ValueError before
anything is sent. A str filter is passed through unchanged as an
expression; None means no filter.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Optional

_FIELD = re.compile(r"^[A-Za-z0-9_-]+$")

_OPS = {
    "eq": "==",
    "ne": "!=",
    "gt": ">",
    "gte": ">=",
    "lt": "<",
    "lte": "<=",
}


def literal(v: Any) -> str:
    """An expression literal for a Python value: a JSON-quoted string, a number, or 1/0."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise ValueError(f"filter values must be finite numbers, got {v}")
        return repr(v)
    if isinstance(v, str):
        # JSON string syntax is the language's: every quote, backslash and
        # control character is escaped, so the value stays one literal.
        return json.dumps(v, ensure_ascii=True)
    if v is None:
        raise ValueError("a filter cannot test for null: memrl's filter language has no null literal (a null attribute never matches)")
    raise ValueError(f"filter values are str, int, float or bool, got {type(v).__name__}")


def _array(vs: Any) -> str:
    if not isinstance(vs, (list, tuple)):
        raise ValueError(f"'in' and 'nin' take a list, got {type(vs).__name__}")
    if not vs:
        raise ValueError("'in' and 'nin' take a non-empty list")
    return "[" + ", ".join(literal(x) for x in vs) + "]"


def _field(name: Any) -> str:
    if not isinstance(name, str) or not _FIELD.match(name):
        raise ValueError(f"filter field names are top-level attributes of A-Z a-z 0-9 _ -, got {name!r}")
    return "." + name


def _clause(name: str, value: Any) -> str:
    f = _field(name)
    if isinstance(value, dict):
        if not value:
            raise ValueError(f"empty operator dict for field {name!r}")
        parts = []
        for op, arg in value.items():
            o = op[1:] if isinstance(op, str) and op.startswith("$") else op
            if o in _OPS:
                parts.append(f"{f} {_OPS[o]} {literal(arg)}")
            elif o == "in":
                parts.append(f"{f} in {_array(arg)}")
            elif o == "nin":
                parts.append(f"not ({f} in {_array(arg)})")
            elif o == "contains":
                parts.append(f"{literal(arg)} in {f}")
            else:
                raise ValueError(f"unknown filter operator {op!r} for field {name!r}")
        return " and ".join(parts)
    if isinstance(value, (list, tuple)):
        return f"{f} in {_array(value)}"
    return f"{f} == {literal(value)}"


def to_filter(filter: Any) -> Optional[str]:
    """A filter expression for ``filter``: None, an expression string (unchanged) or a dict."""
    if filter is None:
        return None
    if isinstance(filter, str):
        if not filter.strip():
            raise ValueError("an empty filter expression")
        return filter
    if isinstance(filter, dict):
        if not filter:
            return None
        return " and ".join(_clause(k, v) for k, v in filter.items())
    raise TypeError(f"a filter is a dict or an expression string, got {type(filter).__name__}")
