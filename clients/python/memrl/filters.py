"""Translating MemOS-style dict filters to memrl's filter language.

memrl's filters are expressions (docs/PROTOCOL.md, "Filters";
engine/filter/doc.go): ``.user == "u7" and .step >= 3``. Front ends built
for other vector stores (MemOS's Qdrant backend) pass dicts instead;
:func:`to_filter` turns those into expressions with **Qdrant's meaning**,
quoting every string so no value can change the expression's meaning (a
value is always a literal, never syntax).

A dict's entries are joined with ``and``. For each ``field: value``:

====================================  =========================================
``"u7"``, ``3``, ``2.5``, ``True``     ``.field has <literal>``: Qdrant's
                                       ``MatchValue``: the field equals the
                                       value, or is a list holding it
                                       (``{"tags": "travel"}`` matches
                                       ``tags=["travel", "food"]``). True is 1,
                                       as the server reads JSON booleans.
``["a", "b"]`` (list, tuple, ndarray)  ``.field has ["a", "b"]``: Qdrant's
                                       ``MatchAny`` (the field, or one of its
                                       elements, equals any of them)
``{"gt": 1, "lte": 5}``                ``.field > 1 and .field <= 5``; operators
                                       ``eq ne gt gte lt lte in nin contains``,
                                       with or without a leading ``$``
====================================  =========================================

``eq`` and ``in`` are the two forms above; ``ne`` and ``nin`` are their
negations (``not (.field has …)``: a field that is missing still does not
match, see below). ``contains`` is ``"v" in .field`` (an element of a list,
or a substring of a string). The orderings compare numbers only: a list of
numbers is not searched (Qdrant's range on a list matches any element;
memrl's does not match it).

A field is an attribute name of ``A-Z a-z 0-9 _ -``, or a dotted path into
nested objects (``"meta.source"``, Qdrant's nested keys). Values may be
numpy scalars and arrays (``np.int64(3)``, ``np.float32``, ``np.bool_``,
``np.array([...])``): they are converted to Python's. Anything else,
``None`` values (the language has no null: a null attribute never matches;
Qdrant's ``MatchValue`` has no null either), NaN and infinities raise
ValueError before anything is sent. A str filter is passed through
unchanged as an expression; None (or ``{}``) means no filter.

Where memrl differs: a memory that lacks a field the filter uses (or holds
it as null or an object) matches no part of the filter, even under ``ne``
or ``nin``, where Qdrant's ``must_not`` would match it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Optional

_FIELD = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")

_OPS = {
    "gt": ">",
    "gte": ">=",
    "lt": "<",
    "lte": "<=",
}


def plain(v: Any) -> Any:
    """``v`` with numpy scalars and arrays turned into Python's (recursively in lists,
    tuples and dicts; tuples become lists); anything else unchanged."""
    if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        return v.tolist()  # np.generic -> a Python scalar, ndarray -> nested lists
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def literal(v: Any) -> str:
    """An expression literal for a Python value: a JSON-quoted string, a number, or 1/0."""
    v = plain(v)
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
    vs = plain(vs)
    if not isinstance(vs, list):
        raise ValueError(f"'in' and 'nin' take a list, got {type(vs).__name__}")
    if not vs:
        raise ValueError("'in' and 'nin' take a non-empty list")
    return "[" + ", ".join(literal(x) for x in vs) + "]"


def _field(name: Any) -> str:
    if not isinstance(name, str) or not _FIELD.match(name):
        raise ValueError(f"filter field names are attributes of A-Z a-z 0-9 _ - (or dotted paths of them, 'meta.source'), got {name!r}")
    return "." + name


def _is_list(v: Any) -> bool:
    return isinstance(plain(v), list)


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
            elif o == "eq":
                parts.append(f"{f} has {literal(arg)}")
            elif o == "ne":
                parts.append(f"not ({f} has {literal(arg)})")
            elif o == "in":
                parts.append(f"{f} has {_array(arg)}")
            elif o == "nin":
                parts.append(f"not ({f} has {_array(arg)})")
            elif o == "contains":
                parts.append(f"{literal(arg)} in {f}")
            else:
                raise ValueError(f"unknown filter operator {op!r} for field {name!r}")
        return " and ".join(parts)
    if _is_list(value):
        return f"{f} has {_array(value)}"
    return f"{f} has {literal(value)}"


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
