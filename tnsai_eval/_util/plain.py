"""Plain data for JSON: read-only mappings and tuples made dicts and lists, and
the largest count a JSON document may hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_JSON_COUNT", "json_ready"]

#: The largest count (tokens, calls) read from JSON: past 2**53 an integer is
#: no longer exact as a float, and 10**400 would overflow every cost and ratio
#: computed from it. A server's usage or a report past it is not a real count.
MAX_JSON_COUNT = 2**53


def json_ready(value: Any) -> Any:
    """``value`` with mappings and sequences made plain dicts and lists (for json.dumps).

    >>> from types import MappingProxyType
    >>> json_ready(MappingProxyType({"type": "json_object", "keys": ("a", "b")}))
    {'type': 'json_object', 'keys': ['a', 'b']}
    """
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    return value
