"""The sampling parameters a prompt is scored with unless the caller gives its own."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["DEFAULT_CALL_PARAMS"]

#: Parameters of every case call (and of rewrite requests), unless ``call_params`` is given.
#: Temperature 0 so that a score is a property of the prompt, not of the draw; 128
#: tokens is room for a short answer without letting a rambling small model run on.
DEFAULT_CALL_PARAMS: Mapping[str, Any] = MappingProxyType({"temperature": 0.0, "max_tokens": 128})
