"""Plain data for ``json.dumps``: read-only mappings and tuples made dicts and lists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["json_ready"]


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
